// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/plugin.cpp: tdm_plugin_negotiate, init and the descriptor tables of the
// glm-ocr plugin: the GLM-OCR text decoder (GGUF arch glm4, HF glm_ocr; also GLM-4-0414's
// glm4 files, whose q/k/v biases it adds) and its NextN/MTP layer as the draft head glm-mtp (text/), and on hosts with tdm.encoder (ABI 3) the vision
// tower as the encoder glm-ocr-vision (vision/). Speaks ABI 2 and 3 (with 3 the head declares
// batched drafting). In init it checks every op it builds graphs from and refuses to
// register naming the first one missing; a host without the vision ops or the extension
// gets the text model alone.
#include <tandem/cpp/tandem.hpp>

#include "text/arch.h"
#include "vision/vision.h"

namespace glm {
namespace {

using tdm::sdk::ArchDesc;
using tdm::sdk::DraftHeadDesc;
using tdm::sdk::Err;

constexpr const char* kPluginName = "glm-ocr";

const char* const kGguf[] = {"glm4", nullptr};
const char* const kHf[] = {"glm_ocr", nullptr};
const char* const kMtpTypes[] = {"mtp", "nextn", "draft-mtp", nullptr};
const char* const kMtpTargets[] = {"glm4", nullptr};
const char* const kVisionTargets[] = {"glm4", nullptr};

constexpr tdm_arch_desc kGlm4 =
    ArchDesc("glm4").gguf_names(kGguf).hf_model_types(kHf).callbacks(glm_create, glm_load, glm_build_graph, glm_destroy);
constexpr tdm_draft_head_desc kGlmMtp =
    DraftHeadDesc("glm-mtp")
        .spec_types(kMtpTypes)
        .target_archs(kMtpTargets)
        .callbacks(glm_mtp_create, glm_mtp_load, glm_mtp_build_step, glm_mtp_destroy);

tdm_encoder_desc vision_desc() {
    tdm_encoder_desc d{};
    d.struct_size = sizeof d;
    d.name = "glm-ocr-vision";
    d.target_archs = kVisionTargets;
    d.create = glm_vision_create;
    d.load = glm_vision_load;
    d.build_graph = glm_vision_build_graph;
    d.positions = glm_vision_positions;
    d.destroy = glm_vision_destroy;
    return d;
}
const tdm_encoder_desc kVision = vision_desc();

tdm_status init(const tdm_host_api* api, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    tdm::sdk::Host host;
    TDM_SDK_TRY(host.init(api, kPluginName, e));
    TDM_SDK_TRY(glm_require_ops(host, e));
    TDM_SDK_TRY(host.register_arch(reg, kGlm4, e));
    TDM_SDK_TRY(host.register_draft_head(reg, kGlmMtp, e));
    // images need tdm.encoder and the vision ops: an older host runs the text model alone
    const auto* enc =
        static_cast<const tdm_ext_encoder*>(host.extension(TDM_EXT_ENCODER, TDM_EXT_ENCODER_VERSION));
    if (!enc) {
        host.log(TDM_LOG_INFO, "this host has no tdm.encoder extension: GLM-OCR takes text only");
        return TDM_OK;
    }
    char why[512] = {0};
    if (glm_vision_require_ops(host, Err(why, sizeof why)) != TDM_OK) {
        host.log(TDM_LOG_WARN, "GLM-OCR's vision tower is not available on this host, images are refused: %s", why);
        return TDM_OK;
    }
    if (enc->register_encoder(reg, &kVision) != TDM_OK)
        return e.fail(TDM_ERR_INTERNAL, "registering glm-ocr-vision: %s", api->last_error());
    return TDM_OK;
}

constexpr tdm_plugin_api kPlugin = tdm::sdk::PluginApi(kPluginName)
                                       .version("0.1.0")
                                       .description("GLM-OCR's text decoder (glm4) with its NextN/MTP head; GLM-4-0414 glm4 files")
                                       .init(init);

}  // namespace
}  // namespace glm

TDM_SDK_PLUGIN_ENTRY(glm::kPlugin, 2, 3)
