// SPDX-License-Identifier: Apache-2.0
// host/plugin/weight_transforms_ext.cpp: extension "tdm.weight_transforms" version 1
// (tandem/ext/weight_transforms.h): a vector weight loaded with transforms the loader applies
// once (WeightStore::load_vector), answered as load_weight answers.
#include "plugin/handles.h"

namespace tdm {
namespace {

tdm_status api_load_transformed(tdm_loader* loader, const tdm_weight_request* req, uint32_t transforms,
                                const tdm_weight** out) {
    return load_plugin_weight(loader, req, out,
                              [transforms](WeightStore& s, const ModelSource& src, const tdm_weight_request& r) {
                                  return s.load_vector(src, r, transforms);
                              });
}

const tdm_ext_weight_transforms kWeightTransformsExt = {sizeof(tdm_ext_weight_transforms), api_load_transformed};

}  // namespace

const tdm_ext_weight_transforms* weight_transforms_extension() { return &kWeightTransformsExt; }

}  // namespace tdm
