// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/text/forward.cpp: the GLM text forward pass (docs/models/glm-ocr.md §2; HF
// modeling_glm_ocr.py GlmOcrTextDecoderLayer, llama.cpp src/models/glm4.cpp), one batch of
// tokens; the MTP head's step (§3.2); and the ops both use (checked in init).
#include "arch.h"

namespace glm {

using tdm::sdk::OpQuery;

tdm_status glm_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr int32_t kSections[3] = {16, 24, 24};
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_GET_ROWS),
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_RESHAPE),
        OpQuery(TDM_OP_VIEW_COLS).param_i(0, 0).param_i(1, 64),
        OpQuery(TDM_OP_ADD),
        OpQuery(TDM_OP_CONCAT),
        OpQuery(TDM_OP_SELECT_ROWS),
        OpQuery(TDM_OP_RMS_NORM, "weighted").param_i(0, TDM_NORM_WEIGHT),
        OpQuery(TDM_OP_ROPE, "NeoX, contiguous M-RoPE sections (GGUF)")
            .param_i(0, TDM_ROPE_NEOX)
            .param_i(1, 128)
            .param_i(2, TDM_ROPE_SECTIONS_CONTIGUOUS)
            .param_i(3, kSections[0])
            .param_i(4, kSections[1])
            .param_i(5, kSections[2])
            .param_f(0, 1e4f),
        OpQuery(TDM_OP_ROPE, "adjacent pairs, contiguous M-RoPE sections (HF)")
            .param_i(0, TDM_ROPE_ADJACENT)
            .param_i(1, 128)
            .param_i(2, TDM_ROPE_SECTIONS_CONTIGUOUS)
            .param_i(3, kSections[0])
            .param_i(4, kSections[1])
            .param_i(5, kSections[2])
            .param_f(0, 1e4f),
        OpQuery(TDM_OP_ROPE, "adjacent pairs, partial (GLM-4)").param_i(0, TDM_ROPE_ADJACENT).param_i(1, 64).param_f(0, 1e4f).param_f(1, 1.0f),
        OpQuery(TDM_OP_KV_STORE),
        OpQuery(TDM_OP_ATTENTION, "full causal"),
        OpQuery(TDM_OP_GLU, "SwiGLU").param_i(0, TDM_GLU_SWIGLU),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

namespace {

struct Positions {
    tdm_tensor pos;   // TDM_INPUT_POSITIONS (plain RoPE)
    tdm_tensor pos4;  // TDM_INPUT_POSITIONS_4 (M-RoPE: t, h, w)
};

Positions positions(tdm_builder* b, const GlmHparams& hp) {
    Positions p{};
    if (hp.mrope)
        p.pos4 = tdm_input(b, TDM_INPUT_POSITIONS_4);
    else
        p.pos = tdm_input(b, TDM_INPUT_POSITIONS);
    return p;
}

tdm_tensor rope(tdm_builder* b, const GlmHparams& hp, tdm_tensor x, const Positions& p, const char* name) {
    if (hp.mrope)
        return tdm_rope_multi(b, x, p.pos4, hp.rope_mode, int32_t(hp.n_rot), TDM_ROPE_SECTIONS_CONTIGUOUS, hp.sections,
                              hp.rope_theta, name);
    return tdm_rope(b, x, p.pos, NULL, hp.rope_mode, int32_t(hp.n_rot), hp.rope_theta, 1.0f, name);
}

// A projection and, when the file has one, its bias (GLM-4-0414's q/k/v).
tdm_tensor project(tdm_builder* b, const tdm_weight* w, const tdm_weight* bias, tdm_tensor x, const char* name) {
    const tdm_tensor y = tdm_matmul(b, w, x, name);
    return bias ? tdm_add(b, y, tdm_weight_tensor(b, bias), name) : y;
}

// One sandwich block (spec §2): x + post_attn_norm(attn(attn_norm(x))), then
// x + post_ffw_norm(down(silu(gate) * up)) with gate|up = ffn_up(ffn_norm(x)).
tdm_tensor block(tdm_builder* b, const GlmHparams& hp, const GlmLayer& L, uint32_t kv, tdm_tensor x,
                 const Positions& p, uint32_t n) {
    const int64_t D = hp.head_dim, F = hp.n_ff;
    const tdm_tensor h = tdm_rms_norm(b, x, L.attn_norm, 0, hp.rms_eps, "attn_norm");
    tdm_tensor q = tdm_reshape(b, project(b, L.wq, L.bq, h, "q"), D, hp.n_head, n, 1);
    tdm_tensor k = tdm_reshape(b, project(b, L.wk, L.bk, h, "k"), D, hp.n_head_kv, n, 1);
    const tdm_tensor v = tdm_reshape(b, project(b, L.wv, L.bv, h, "v"), D, hp.n_head_kv, n, 1);
    q = rope(b, hp, q, p, "q_rope");
    k = rope(b, hp, k, p, "k_rope");
    const tdm_tensor kvl = tdm_kv_store(b, tdm_kv(b, kv), k, v, "kv_store");
    const tdm_tensor a = tdm_attention(b, q, kvl, 0.0f, 0, 0.0f, "attn");  // scale 1/sqrt(D), GQA
    const tdm_tensor o = tdm_matmul(b, L.wo, tdm_reshape(b, a, D * hp.n_head, n, 1, 1), "attn_out");
    x = tdm_add(b, x, tdm_rms_norm(b, o, L.post_attn_norm, 0, hp.rms_eps, "post_attn_norm"), "attn_res");

    const tdm_tensor f = tdm_rms_norm(b, x, L.ffn_norm, 0, hp.rms_eps, "ffn_norm");
    const tdm_tensor gu = tdm_matmul(b, L.ffn_up, f, "ffn_gate_up");
    const tdm_tensor act = tdm_glu_op(b, TDM_GLU_SWIGLU, tdm_view_cols(b, gu, 0, int32_t(F), "ffn_gate"),
                                      tdm_view_cols(b, gu, int32_t(F), int32_t(F), "ffn_up"), "ffn_act");
    const tdm_tensor m = tdm_matmul(b, L.ffn_down, act, "ffn_down");
    return tdm_add(b, x, tdm_rms_norm(b, m, L.post_ffw_norm, 0, hp.rms_eps, "post_ffw_norm"), "ffn_res");
}

}  // namespace

tdm_status glm_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const GlmModel* m = static_cast<const GlmModel*>(model);
    const GlmHparams& hp = m->hp;
    tdm_builder b = tdm_builder_init(m->host, g);
    const uint32_t n = batch->n_tokens;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const Positions p = positions(&b, hp);

    tdm_tensor x = tdm_get_rows(&b, m->tok_embd, tokens);  // [n_embd, n], no scaling
    x = tdm_inject_rows(&b, m->encoder, x);                 // image rows, unscaled (spec §5.7)
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, il, x);
        x = block(&b, hp, m->layers[il], il, x, p, n);
    }
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_PRE_NORM, x);
    tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, hp.n_layer, x);
    const tdm_tensor hn = tdm_rms_norm(&b, x, m->output_norm, 0, hp.rms_eps, "output_norm");
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_POST_NORM, hn);
    tdm_tap(&b, m->features, TDM_TAP_POST_NORM, 0, hn);
    const tdm_tensor rows =
        batch->n_outputs == n ? hn : tdm_select_rows(&b, hn, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    tdm_set_output(&b, TDM_OUTPUT_LOGITS, tdm_matmul(&b, m->output, rows, "logits"));
    return tdm_builder_finish(&b, err, err_size);
}

// One MTP step (spec §3.2): eh_proj([enorm(embed(t)) | hnorm(h)]) (embedding first), the
// sandwich block with the head's own KV, then shared_head.norm and the LM head. The chained
// hidden is the block output before shared_head.norm.
tdm_status glm_mtp_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const GlmMtp* hd = static_cast<const GlmMtp*>(head);
    const GlmHparams& hp = hd->hp;
    tdm_builder b = tdm_builder_init(hd->host, g);
    const uint32_t n = batch->n_tokens;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const Positions p = positions(&b, hp);
    const tdm_tensor hidden = tdm_input(&b, TDM_INPUT_TARGET_HIDDEN);
    const tdm_tensor e = tdm_rms_norm(&b, tdm_get_rows(&b, hd->tok_embd, tokens), hd->enorm, 0, hp.rms_eps, "enorm");
    const tdm_tensor hn = tdm_rms_norm(&b, hidden, hd->hnorm, 0, hp.rms_eps, "hnorm");
    tdm_tensor x = tdm_matmul(&b, hd->eh_proj, tdm_concat(&b, e, hn, "eh"), "eh_proj");
    x = block(&b, hp, hd->layer, 0, x, p, n);
    const tdm_tensor rows =
        batch->n_outputs == n ? x : tdm_select_rows(&b, x, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_DRAFT, rows);
    const tdm_tensor out = tdm_rms_norm(&b, rows, hd->head_norm, 0, hp.rms_eps, "shared_head_norm");
    const uint32_t vocab = tdm_step_draft_vocab(batch, hd->draft_vocab, hp.n_vocab);
    tdm_set_output(&b, TDM_OUTPUT_LOGITS,
                   vocab ? tdm_matmul_rows(&b, hd->output, vocab, out, "logits") : tdm_matmul(&b, hd->output, out, "logits"));
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace glm
