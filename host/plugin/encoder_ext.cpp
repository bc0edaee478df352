// SPDX-License-Identifier: Apache-2.0
// host/plugin/encoder_ext.cpp: extension "tdm.encoder" version 1 (tandem/ext/encoder.h):
// registering encoders, the inputs and result of an encoder's graph, and the image rows
// of a target batch (x * keep + rows, both filled by the host: model/runner.cpp).
#include <cstring>

#include "common/log.h"
#include "plugin/abi_structs.h"
#include "plugin/handles.h"
#include "plugin/registry.h"

namespace tdm {
namespace {

tdm_status null_argument(const char* what) {
    return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("tdm.encoder {}: null argument", what));
}

tdm_status not_encoder_graph(const char* what) {
    return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                          fmt::format("tdm.encoder {}: only inside an encoder's build_graph", what));
}

tdm_status api_register_encoder(tdm_registry* reg, const tdm_encoder_desc* d) {
    if (!reg) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.encoder register_encoder outside init");
    auto st = reg->registry->add_encoder(reg->plugin, d);
    if (!st.ok()) return set_last_error(st.error());
    reg->plugin->provides.push_back(fmt::format("encoder {}", plugin_string(d->name, kPluginNameMax)));
    return TDM_OK;
}

tdm_status api_load_f32(tdm_loader* loader, const char* name, const float* values, int64_t ne0, int64_t ne1,
                        const tdm_weight** out) {
    if (!loader || !loader->store || !name || !values || !out) return null_argument("load_f32");
    *out = nullptr;
    auto n = plugin_name(name, "tdm.encoder load_f32");
    if (!n.ok()) return set_last_error(n.error());
    if (ne0 <= 0 || ne1 <= 0 || ne0 > (int64_t(1) << 24) || ne1 > (int64_t(1) << 24) || ne0 * ne1 > (int64_t(1) << 28))
        return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                              fmt::format("tdm.encoder load_f32 '{}': shape [{}, {}] is empty or implausible", *n, ne0,
                                          ne1));
    auto w = loader->store->add_f32(*n, std::span<const float>(values, size_t(ne0 * ne1)), ne0, ne1);
    if (!w.ok()) return set_last_error(w.error());
    *out = to_handle(*w);
    return TDM_OK;
}

tdm_status encoder_input(tdm_graph* g, tdm_tensor* out, const char* what, tdm::TensorId tdm_graph::*slot, DType type,
                         int64_t ne0) {
    if (!g || !out) return null_argument(what);
    if (!g->is_encoder) return not_encoder_graph(what);
    if (!(g->*slot)) g->*slot = g->graph.input(type, {ne0, int64_t(g->encoder_batch.n_patches)}, what);
    out->id = g->*slot;
    return TDM_OK;
}

tdm_status api_graph_patches(tdm_graph* g, tdm_tensor* out) {
    return encoder_input(g, out, "patches", &tdm_graph::patches, DType::F32, g ? int64_t(g->patch_values) : 0);
}

tdm_status api_graph_patch_positions(tdm_graph* g, tdm_tensor* out) {
    return encoder_input(g, out, "patch_positions", &tdm_graph::patch_positions, DType::I32, 4);
}

tdm_status api_graph_patch_ranges(tdm_graph* g, tdm_tensor* out) {
    return encoder_input(g, out, "patch_ranges", &tdm_graph::patch_ranges, DType::I32, 2);
}

tdm_status api_graph_set_rows(tdm_graph* g, tdm_tensor rows) {
    if (!g) return null_argument("graph_set_rows");
    if (!g->is_encoder) return not_encoder_graph("graph_set_rows");
    if (rows.id == 0 || rows.id >= g->graph.tensor_count())
        return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.encoder graph_set_rows: not a tensor of this graph");
    const Tensor& t = g->graph.tensor(rows.id);
    if (t.type != DType::F32 || t.cols() != int64_t(g->encoder_width) ||
        t.rows() != int64_t(g->encoder_batch.n_rows))
        return set_last_error(TDM_ERR_SHAPE, fmt::format("tdm.encoder graph_set_rows: the rows are {}, expected F32 "
                                                         "[{}, {}] (n_embd, one row per merge block)",
                                                         g->graph.describe(rows.id), g->encoder_width,
                                                         g->encoder_batch.n_rows));
    g->encoder_rows = rows.id;
    return TDM_OK;
}

tdm_status api_inject_rows(tdm_graph* g, tdm_tensor x, tdm_tensor* out) {
    if (!g || !out) return null_argument("inject_rows");
    if (g->is_encoder)
        return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.encoder inject_rows: only in a target model's graph");
    if (x.id == 0 || x.id >= g->graph.tensor_count())
        return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.encoder inject_rows: not a tensor of this graph");
    const Tensor& t = g->graph.tensor(x.id);
    const int64_t n = g->batch.n_tokens;
    if (t.type != DType::F32 || t.rows() != n || t.ne[2] != 1 || t.ne[3] != 1)
        return set_last_error(TDM_ERR_SHAPE, fmt::format("tdm.encoder inject_rows: x is {}, expected F32 [n_embd, {}]",
                                                         g->graph.describe(x.id), n));
    if (!g->image_rows) {  // a text batch: nothing to replace
        *out = x;
        return TDM_OK;
    }
    const int64_t width = t.cols();
    if (g->inject_rows && g->graph.tensor(g->inject_rows).cols() != width)
        return set_last_error(TDM_ERR_SHAPE, "tdm.encoder inject_rows: called twice with different widths");
    if (!g->inject_rows) {
        g->inject_rows = g->graph.input(DType::F32, {width, n}, "image_rows");
        g->inject_keep = g->graph.input(DType::F32, {1, n}, "image_keep");
    }
    // text rows: x * 1 + 0 = x; image rows: x * 0 + r = r (bit-exact for finite x)
    OpDesc mul;
    mul.op = TDM_OP_MUL;
    mul.in[0] = x.id;
    mul.in[1] = g->inject_keep;
    mul.n_in = 2;
    mul.name = "text_rows";
    auto kept = g->graph.op(mul);
    if (!kept.ok()) return set_last_error(kept.error());
    OpDesc add;
    add.op = TDM_OP_ADD;
    add.in[0] = *kept;
    add.in[1] = g->inject_rows;
    add.n_in = 2;
    add.name = "with_image_rows";
    auto r = g->graph.op(add);
    if (!r.ok()) return set_last_error(r.error());
    out->id = *r;
    return TDM_OK;
}

const tdm_ext_encoder kEncoderExt = {sizeof(tdm_ext_encoder), api_register_encoder,      api_load_f32,
                                     api_graph_patches,       api_graph_patch_positions, api_graph_patch_ranges,
                                     api_graph_set_rows,      api_inject_rows};

}  // namespace

const tdm_ext_encoder* encoder_extension() { return &kEncoderExt; }

}  // namespace tdm
