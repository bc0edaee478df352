// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/qwen35/forward.cpp: the Qwen3.5 forward pass (HF
// Qwen3_5ForCausalLM's text model, llama.cpp src/models/qwen35.cpp), one batch
// of tokens: 3 of every 4 layers are Gated DeltaNet, the 4th gated attention;
// every layer is followed by a dense SwiGLU or a routed MoE with a shared
// expert. Also the MTP head's step, and the ops both use (checked in init).
#include "arch.h"

namespace qwen {

using tdm::sdk::OpQuery;

// Every op the trunk and the head emit, with the parameter kinds they pass.
// Sizes in the parameters are representative (the host checks kinds and
// ranges; inputs, hence shapes, are not part of a query).
tdm_status qwen35_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_GET_ROWS),
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_RESHAPE),
        OpQuery(TDM_OP_VIEW_COLS).param_i(0, 0).param_i(1, 64),
        OpQuery(TDM_OP_ADD),
        OpQuery(TDM_OP_MUL),
        OpQuery(TDM_OP_CONCAT),
        OpQuery(TDM_OP_SELECT_ROWS),
        OpQuery(TDM_OP_RMS_NORM, "weighted").param_i(0, TDM_NORM_WEIGHT),
        OpQuery(TDM_OP_GATED_RMS_NORM),
        OpQuery(TDM_OP_UNARY, "sigmoid").param_i(0, TDM_UNARY_SIGMOID),
        OpQuery(TDM_OP_UNARY, "softplus").param_i(0, TDM_UNARY_SOFTPLUS),
        OpQuery(TDM_OP_ROPE, "NeoX, interleaved M-RoPE sections")
            .param_i(0, TDM_ROPE_NEOX)
            .param_i(1, 64)
            .param_i(2, TDM_ROPE_SECTIONS_INTERLEAVED)
            .param_i(3, 11)
            .param_i(4, 11)
            .param_i(5, 10)
            .param_f(0, 1e7f),
        OpQuery(TDM_OP_KV_STORE),
        OpQuery(TDM_OP_ATTENTION, "full causal"),
        OpQuery(TDM_OP_CONV1D_CAUSAL, "with SiLU").param_i(0, 1),
        OpQuery(TDM_OP_GATED_DELTA_RULE, "tiled heads, recurrent form")
            .param_i(0, 16)
            .param_i(1, 32)
            .param_i(2, 128)
            .param_i(3, 128)
            .param_i(4, TDM_HEAD_MAP_TILED),
        OpQuery(TDM_OP_GLU, "SwiGLU").param_i(0, TDM_GLU_SWIGLU),
        OpQuery(TDM_OP_TOP_K).param_i(0, 8),
        OpQuery(TDM_OP_SOFTMAX),
        OpQuery(TDM_OP_MATMUL_ID),
        OpQuery(TDM_OP_MOE_SUM),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

tdm_status qwen35_require_chunked_delta_rule(const tdm::sdk::Host& host, uint32_t chunk, tdm::sdk::Err err) {
    const OpQuery q[] = {OpQuery(TDM_OP_GATED_DELTA_RULE, "chunked form (option gdn_chunk)")
                             .param_i(0, 16)
                             .param_i(1, 32)
                             .param_i(2, 128)
                             .param_i(3, 128)
                             .param_i(4, TDM_HEAD_MAP_TILED)
                             .param_i(5, int32_t(chunk))};
    return tdm::sdk::require_ops(host, q, err);
}

// Gated full attention (docs/models/qwen35.md §2.1): q_proj holds per head [q | gate];
// q/k RMSNorm per head, partial NeoX RoPE with interleaved M-RoPE sections,
// GQA, then o * sigmoid(gate) into o_proj. Returns residual + the layer output.
tdm_tensor qwen35_gated_attention(tdm_builder* b, const Qwen35Hparams& hp, const Qwen35Layer& L, tdm_tensor h,
                                  tdm_tensor pos4, tdm_tensor residual, uint32_t n) {
    const int64_t D = hp.head_dim;
    const Qwen35Attention& A = L.attn;
    const tdm_tensor qg = tdm_reshape(b, tdm_matmul(b, A.wq, h, "q_gate"), 2 * D, hp.n_head, n, 1);
    tdm_tensor q = tdm_view_cols(b, qg, 0, int32_t(D), "q");
    const tdm_tensor gate = tdm_view_cols(b, qg, int32_t(D), int32_t(D), "gate");
    tdm_tensor k = tdm_reshape(b, tdm_matmul(b, A.wk, h, "k"), D, hp.n_head_kv, n, 1);
    const tdm_tensor v = tdm_reshape(b, tdm_matmul(b, A.wv, h, "v"), D, hp.n_head_kv, n, 1);
    q = tdm_rms_norm(b, q, A.q_norm, 0, hp.rms_eps, "q_norm");
    k = tdm_rms_norm(b, k, A.k_norm, 0, hp.rms_eps, "k_norm");
    q = tdm_rope_multi(b, q, pos4, TDM_ROPE_NEOX, int32_t(hp.n_rot), TDM_ROPE_SECTIONS_INTERLEAVED, hp.sections,
                       hp.rope_theta, "q_rope");
    k = tdm_rope_multi(b, k, pos4, TDM_ROPE_NEOX, int32_t(hp.n_rot), TDM_ROPE_SECTIONS_INTERLEAVED, hp.sections,
                       hp.rope_theta, "k_rope");
    const tdm_tensor kv = tdm_kv_store(b, tdm_kv(b, L.kv), k, v, "kv_store");
    const tdm_tensor o = tdm_reshape(b, tdm_attention(b, q, kv, 0.0f, 0, 0.0f, "attn"), D, hp.n_head, n, 1);
    const tdm_tensor gated = tdm_mul(b, o, tdm_unary_op(b, TDM_UNARY_SIGMOID, gate, 0.0f, "gate_sigmoid"), "attn_gated");
    return tdm_matmul_add(b, A.wo, tdm_reshape(b, gated, D * hp.n_head, n, 1, 1), residual, "attn_out");
}

// Gated DeltaNet (docs/models/common.md §6): in_proj_qkv -> causal conv1d (+SiLU) ->
// the delta rule with fp32 state; beta = sigmoid(b), g = A * softplus(a + dt_bias)
// with A = -exp(A_log); gated RMSNorm with z; out_proj. Value heads are tiled.
static tdm_tensor gated_delta_net(tdm_builder* b, const Qwen35Model& m, const Qwen35Layer& L, tdm_tensor h,
                                  tdm_tensor residual, uint32_t n) {
    const Qwen35Hparams& hp = m.hp;
    const Qwen35DeltaNet& G = L.gdn;
    const tdm_tensor qkv = tdm_conv1d_causal(b, tdm_matmul(b, G.wqkv, h, "qkv"), G.conv, tdm_state(b, L.state), 1,
                                             "conv");
    const tdm_tensor z = tdm_matmul(b, G.wz, h, "z");
    const tdm_tensor beta = tdm_unary_op(b, TDM_UNARY_SIGMOID, tdm_matmul(b, G.wbeta, h, "beta_in"), 0.0f, "beta");
    const tdm_tensor alpha = tdm_add(b, tdm_matmul(b, G.walpha, h, "alpha_in"), tdm_weight_tensor(b, G.dt_bias), "alpha");
    const tdm_tensor g = tdm_mul(b, tdm_unary_op(b, TDM_UNARY_SOFTPLUS, alpha, 0.0f, "softplus"),
                                 tdm_weight_tensor(b, G.a), "decay");
    const int32_t chunk = m.gdn_chunk && n > m.gdn_chunk ? int32_t(m.gdn_chunk) : 0;
    const tdm_tensor o = tdm_gated_delta_rule(b, qkv, g, beta, tdm_state(b, L.state + 1), int32_t(hp.gdn_nk),
                                              int32_t(hp.gdn_nv), int32_t(hp.gdn_dk), int32_t(hp.gdn_dv),
                                              TDM_HEAD_MAP_TILED, chunk, "delta_rule");
    const tdm_tensor y = tdm_gated_rms_norm(b, o, G.norm, tdm_reshape(b, z, hp.gdn_dv, hp.gdn_nv, n, 1), hp.rms_eps,
                                            "gated_norm");
    return tdm_matmul_add(b, G.wout, tdm_reshape(b, y, hp.value_dim(), n, 1, 1), residual, "ssm_out");
}

// Dense SwiGLU, or the routed MoE (docs/models/qwen35.md §2.3): softmax over the
// router logits, top-k, renormalised (= a softmax over the k largest logits),
// SwiGLU experts, plus the shared expert scaled by sigmoid(shared gate).
tdm_tensor qwen35_ffn(tdm_builder* b, const Qwen35Hparams& hp, const Qwen35Ffn& f, tdm_tensor h, tdm_tensor residual,
                      uint32_t n) {
    (void)n;
    if (!hp.moe) {
        const tdm_tensor gu = tdm_glu_op(b, TDM_GLU_SWIGLU, tdm_matmul(b, f.gate, h, "ffn_gate"),
                                         tdm_matmul(b, f.up, h, "ffn_up"), "ffn_act");
        return tdm_matmul_add(b, f.down, gu, residual, "ffn_out");
    }
    tdm_tensor top_logits = {0};
    const tdm_tensor ids =
        tdm_top_k(b, tdm_matmul(b, f.router, h, "router"), int32_t(hp.n_expert_used), &top_logits, "experts");
    const tdm_tensor weights = tdm_softmax(b, top_logits, 1.0f, "expert_weights");
    const tdm_tensor act = tdm_glu_op(b, TDM_GLU_SWIGLU, tdm_matmul_id(b, f.gate_exps, h, ids, "exp_gate"),
                                      tdm_matmul_id(b, f.up_exps, h, ids, "exp_up"), "exp_act");
    const tdm_tensor routed = tdm_moe_sum(b, tdm_matmul_id(b, f.down_exps, act, ids, "exp_down"), weights, "moe_sum");
    const tdm_tensor sgu = tdm_glu_op(b, TDM_GLU_SWIGLU, tdm_matmul(b, f.gate_shexp, h, "shexp_gate"),
                                      tdm_matmul(b, f.up_shexp, h, "shexp_up"), "shexp_act");
    const tdm_tensor shared = tdm_mul(b, tdm_matmul(b, f.down_shexp, sgu, "shexp_down"),
                                      tdm_unary_op(b, TDM_UNARY_SIGMOID, tdm_matmul(b, f.shexp_gate, h, "shexp_gate_in"),
                                                   0.0f, "shexp_weight"),
                                      "shexp");
    return tdm_add(b, residual, tdm_add(b, routed, shared, "ffn_sum"), "ffn_out");
}

tdm_status qwen35_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const Qwen35Model* m = static_cast<const Qwen35Model*>(model);
    const Qwen35Hparams& hp = m->hp;
    tdm_builder b = tdm_builder_init(m->host, g);
    const uint32_t n = batch->n_tokens;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos4 = tdm_input(&b, TDM_INPUT_POSITIONS_4);

    tdm_tensor x = tdm_get_rows(&b, m->tok_embd, tokens);  // [n_embd, n], no scaling
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const Qwen35Layer& L = m->layers[il];
        tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, il, x);
        const tdm_tensor h = tdm_rms_norm(&b, x, L.attn_norm, 0, hp.rms_eps, "attn_norm");
        x = L.full_attention ? qwen35_gated_attention(&b, hp, L, h, pos4, x, n) : gated_delta_net(&b, *m, L, h, x, n);
        const tdm_tensor f = tdm_rms_norm(&b, x, L.ffn_norm, 0, hp.rms_eps, "ffn_norm");
        x = qwen35_ffn(&b, hp, L.ffn, f, x, n);
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

// One MTP step (docs/models/qwen35.md §4): fc([enorm(embed(t)) | hnorm(hidden)]), one
// gated-attention layer with its own KV, the FFN, shared_head_norm, LM head.
tdm_status qwen35_mtp_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err,
                                 size_t err_size) {
    const Qwen35Mtp* hd = static_cast<const Qwen35Mtp*>(head);
    const Qwen35Hparams& hp = hd->hp;
    tdm_builder b = tdm_builder_init(hd->host, g);
    const uint32_t n = batch->n_tokens;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos4 = tdm_input(&b, TDM_INPUT_POSITIONS_4);
    const tdm_tensor hidden = tdm_input(&b, TDM_INPUT_TARGET_HIDDEN);
    const tdm_tensor e = tdm_rms_norm(&b, tdm_get_rows(&b, hd->tok_embd, tokens), hd->enorm, 0, hp.rms_eps, "enorm");
    const tdm_tensor hn = tdm_rms_norm(&b, hidden, hd->hnorm, 0, hp.rms_eps, "hnorm");
    tdm_tensor x = tdm_matmul(&b, hd->eh_proj, tdm_concat(&b, e, hn, "eh"), "eh_proj");
    const Qwen35Layer& L = hd->layer;
    const tdm_tensor a = tdm_rms_norm(&b, x, L.attn_norm, 0, hp.rms_eps, "attn_norm");
    x = qwen35_gated_attention(&b, hp, L, a, pos4, x, n);
    const tdm_tensor f = tdm_rms_norm(&b, x, L.ffn_norm, 0, hp.rms_eps, "ffn_norm");
    x = qwen35_ffn(&b, hp, L.ffn, f, x, n);
    const tdm_tensor rows =
        batch->n_outputs == n ? x : tdm_select_rows(&b, x, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    const tdm_tensor out = tdm_rms_norm(&b, rows, hd->head_norm, 0, hp.rms_eps, "shared_head_norm");
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_DRAFT, out);
    // the LM head is most of a step's cost: a reduced draft vocabulary (the first
    // ids, which cover English far better than other scripts) cuts it
    const uint32_t vocab = tdm_step_draft_vocab(batch, hd->draft_vocab, hp.n_vocab);
    tdm_set_output(&b, TDM_OUTPUT_LOGITS,
                   vocab ? tdm_matmul_rows(&b, hd->output, vocab, out, "logits") : tdm_matmul(&b, hd->output, out, "logits"));
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace qwen
