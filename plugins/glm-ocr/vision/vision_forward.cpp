// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/vision/vision_forward.cpp: the tower's graph over the patches of one image
// (docs/models/glm-ocr.md §5), and the ops it needs.
#include "vision.h"

namespace glm {
namespace {

using tdm::sdk::OpQuery;

tdm_tensor linear(tdm_builder* b, const tdm_weight* w, const tdm_weight* bias, tdm_tensor x, const char* name) {
    const tdm_tensor y = tdm_matmul(b, w, x, name);
    return bias ? tdm_add(b, y, tdm_weight_tensor(b, bias), name) : y;
}

// q or k [head_dim, heads, n] after its per-head RMSNorm: the 2-D rope, rows driven by stream
// 1 (h) and columns by stream 2 (w) of the patch positions, NeoX pairs (rotate_half).
tdm_tensor rope_2d(tdm_builder* b, const GlmVision* v, tdm_tensor x, tdm_tensor pos, const char* name) {
    const int32_t hd = int32_t(v->hp.head_dim), quarter = hd / 4;
    const tdm_tensor in[3] = {x, pos, tdm_weight_tensor(b, v->rope_ff)};
    const int32_t ip[6] = {TDM_ROPE_NEOX, hd, TDM_ROPE_SECTIONS_CONTIGUOUS, 0, quarter, quarter};
    const float fp[2] = {v->hp.rope_theta, 0.0f};
    return tdm_emit(b, TDM_OP_ROPE, in, 3, ip, 6, fp, 2, name);
}

// One block: x += proj(attn(norm1(x))); x += mlp(norm2(x)).
tdm_tensor block(tdm_builder* b, const GlmVision* v, const GlmVisionBlock& L, tdm_tensor x, tdm_tensor pos,
                 tdm_tensor ranges, uint32_t n) {
    const GlmVisionHparams& hp = v->hp;
    const int32_t D = int32_t(hp.hidden), hd = int32_t(hp.head_dim), H = int32_t(hp.heads);
    const tdm_tensor a = tdm_rms_norm(b, x, L.norm1, 0, hp.rms_eps, "norm1");
    const tdm_tensor qkv = linear(b, L.qkv, L.qkv_bias, a, "qkv");
    auto head = [&](int32_t part, const char* name) {
        return tdm_reshape(b, tdm_copy(b, tdm_view_cols(b, qkv, part * D, D, name), name), hd, H, n, 1);
    };
    tdm_tensor q = tdm_rms_norm(b, head(0, "q"), L.q_norm, 0, hp.rms_eps, "q_norm");
    tdm_tensor k = tdm_rms_norm(b, head(1, "k"), L.k_norm, 0, hp.rms_eps, "k_norm");
    const tdm_tensor vv = head(2, "v");
    q = rope_2d(b, v, q, pos, "q_rope");
    k = rope_2d(b, v, k, pos, "k_rope");
    const tdm_tensor att = tdm_attention_full(b, q, k, vv, ranges, 0.0f, "attn");  // scale hd^-0.5
    x = tdm_add(b, x, linear(b, L.proj, L.proj_bias, tdm_reshape(b, att, D, n, 1, 1), "attn_out"), "attn_res");
    const tdm_tensor m = tdm_rms_norm(b, x, L.norm2, 0, hp.rms_eps, "norm2");
    const tdm_tensor act = tdm_glu_op(b, TDM_GLU_SWIGLU, linear(b, L.gate, L.gate_bias, m, "mlp_gate"),
                                      linear(b, L.up, L.up_bias, m, "mlp_up"), "mlp_act");
    return tdm_add(b, x, linear(b, L.down, L.down_bias, act, "mlp_down"), "mlp_res");
}

// The Conv3d over each patch. HF: one matmul with the kernel flattened like the patch's
// values, (channel, frame, y, x). GGUF: llama.cpp's two per-frame kernels, each over its
// frame's values: a patch viewed as [frames * patch^2, channels] rows gives a frame as a column
// range, made contiguous as [channels * patch^2].
tdm_tensor patch_embed(tdm_builder* b, const GlmVision* v, tdm_tensor patches, uint32_t n) {
    if (!v->gguf) return linear(b, v->patch_embed, v->patch_bias, patches, "patch_embed");
    const GlmVisionHparams& hp = v->hp;
    const int32_t pp = int32_t(hp.patch * hp.patch), C = int32_t(hp.in_channels), T = int32_t(hp.temporal_patch);
    const tdm_tensor rows = tdm_reshape(b, patches, int64_t(T) * pp, int64_t(C) * n, 1, 1);
    auto frame = [&](int32_t f, const char* name) {
        return tdm_reshape(b, tdm_copy(b, tdm_view_cols(b, rows, f * pp, pp, name), name), int64_t(C) * pp, n, 1, 1);
    };
    const tdm_tensor y = tdm_add(b, tdm_matmul(b, v->patch_embed, frame(0, "frame0"), "patch_embed0"),
                                 tdm_matmul(b, v->patch_embed1, frame(1, "frame1"), "patch_embed1"), "patch_embed");
    return tdm_add(b, y, tdm_weight_tensor(b, v->patch_bias), "patch_embed_bias");
}

}  // namespace

tdm_status glm_vision_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static const OpQuery kOps[] = {
        OpQuery(TDM_OP_ATTENTION_FULL, "bidirectional attention over activations"),
        OpQuery(TDM_OP_LAYER_NORM, "LayerNorm with bias"),
        OpQuery(TDM_OP_UNARY, "exact (erf) GELU").param_i(0, TDM_UNARY_GELU_ERF),
        OpQuery(TDM_OP_ROPE, "the 2-D vision rope: NeoX pairs, sections [0, 16, 16], frequency divisors")
            .param_i(0, TDM_ROPE_NEOX)
            .param_i(1, 64)
            .param_i(2, TDM_ROPE_SECTIONS_CONTIGUOUS)
            .param_i(4, 16)
            .param_i(5, 16)
            .param_f(0, 1e4f),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

tdm_status glm_vision_build_graph(void* encoder, tdm_graph* g, const tdm_encoder_batch* batch, char* err,
                                  size_t err_size) {
    const GlmVision* v = static_cast<const GlmVision*>(encoder);
    const GlmVisionHparams& hp = v->hp;
    const uint32_t n = batch->n_patches, m2 = hp.merge * hp.merge;
    if (n == 0 || n % m2 || batch->n_rows != n / m2)
        return tdm::sdk::fail(err, err_size, TDM_ERR_INVALID_ARGUMENT,
                              "glm-ocr-vision: %u patches are not whole %ux%u merge blocks", n, hp.merge, hp.merge);
    tdm_builder b = tdm_builder_init(v->host, g);
    tdm_tensor patches{}, pos{}, ranges{};
    if (v->ext->graph_patches(g, &patches) != TDM_OK || v->ext->graph_patch_positions(g, &pos) != TDM_OK ||
        v->ext->graph_patch_ranges(g, &ranges) != TDM_OK)
        return tdm::sdk::fail(err, err_size, TDM_ERR_INTERNAL, "glm-ocr-vision: inputs: %s", v->host->last_error());
    tdm_tensor x = patch_embed(&b, v, patches, n);  // [hidden, n]
    for (const GlmVisionBlock& L : v->blocks) x = block(&b, v, L, x, pos, ranges, n);
    x = tdm_rms_norm(&b, x, v->post_norm, 0, hp.rms_eps, "post_layernorm");
    // a merge block's patches are consecutive: its m*m rows of hidden become one row
    const tdm_tensor blocks = tdm_reshape(&b, x, int64_t(hp.hidden) * m2, n / m2, 1, 1);
    const tdm_tensor y = linear(&b, v->downsample, v->downsample_bias, blocks, "downsample");
    tdm_tensor h = tdm_matmul(&b, v->merger_proj, y, "merger_proj");
    h = tdm_layer_norm(&b, h, v->merger_norm, v->merger_norm_bias, hp.ln_eps, "merger_norm");
    h = tdm_unary_op(&b, TDM_UNARY_GELU_ERF, h, 0.0f, "merger_gelu");
    const tdm_tensor act = tdm_glu_op(&b, TDM_GLU_SWIGLU, tdm_matmul(&b, v->merger_gate, h, "merger_gate"),
                                      tdm_matmul(&b, v->merger_up, h, "merger_up"), "merger_act");
    const tdm_tensor rows = tdm_matmul(&b, v->merger_down, act, "merger_down");
    if (tdm_ok(&b) && v->ext->graph_set_rows(g, rows) != TDM_OK)
        return tdm::sdk::fail(err, err_size, TDM_ERR_SHAPE, "glm-ocr-vision: %s", v->host->last_error());
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace glm
