// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/text/forward.cpp: the Gemma 4 text forward pass (docs/models/gemma4.md §2; HF
// Gemma4TextModel, llama.cpp src/models/gemma4.cpp), one batch of tokens, and the list of ops
// it uses (checked in init).
#include <cmath>
#include <vector>

#include "arch.h"

namespace gemma4 {

using tdm::sdk::OpQuery;

tdm_status gemma4_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_GET_ROWS),
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_RESHAPE),
        OpQuery(TDM_OP_VIEW_COLS),
        OpQuery(TDM_OP_SCALE),
        OpQuery(TDM_OP_ADD),
        OpQuery(TDM_OP_MUL),
        OpQuery(TDM_OP_RMS_NORM, "weighted").param_i(0, TDM_NORM_WEIGHT),
        OpQuery(TDM_OP_RMS_NORM, "without weight").param_i(0, TDM_NORM_NO_WEIGHT),
        OpQuery(TDM_OP_ROPE, "NeoX").param_i(0, TDM_ROPE_NEOX).param_f(0, 1e4f),
        OpQuery(TDM_OP_ROPE, "proportional (rotated frequency slots, i[6])")
            .param_i(0, TDM_ROPE_NEOX)
            .param_i(6, 64)
            .param_f(0, 1e6f),
        OpQuery(TDM_OP_KV_STORE),
        OpQuery(TDM_OP_ATTENTION, "sliding window").param_i(0, 512).param_f(0, 1.0f),
        OpQuery(TDM_OP_GLU, "GeGLU").param_i(0, TDM_GLU_GEGLU),
        OpQuery(TDM_OP_UNARY, "gelu_tanh").param_i(0, TDM_UNARY_GELU_TANH),
        OpQuery(TDM_OP_UNARY, "softcap").param_i(0, TDM_UNARY_SOFTCAP).param_f(0, 30.0f),
        OpQuery(TDM_OP_SELECT_ROWS),
        OpQuery(TDM_OP_TOP_K, "router").param_i(0, 8),
        OpQuery(TDM_OP_SOFTMAX),
        OpQuery(TDM_OP_MATMUL_ID),
        OpQuery(TDM_OP_MOE_SUM),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

namespace {

// RoPE of q or k [D, heads, n] for a layer: sliding layers rotate the whole head (NeoX,
// theta 1e4); full layers use proportional RoPE, either as llama.cpp emulates it (the GGUF's
// rope_freqs divisors, 1e30 for the still slots) or with the slots that rotate counted.
tdm_tensor rope(tdm_builder* b, const Gemma4Model& m, const LayerShape& s, tdm_tensor x, tdm_tensor pos,
                const char* name) {
    const Gemma4Hparams& hp = m.hp;
    if (s.sliding) return tdm_rope(b, x, pos, NULL, TDM_ROPE_NEOX, int32_t(s.head_dim), hp.theta_swa, 1.0f, name);
    if (m.rope_freqs)
        return tdm_rope(b, x, pos, m.rope_freqs, TDM_ROPE_NEOX, int32_t(s.head_dim), hp.theta_full, 1.0f, name);
    return tdm_rope_partial_freq(b, x, pos, NULL, TDM_ROPE_NEOX, int32_t(s.head_dim), int32_t(hp.n_freq_full),
                                 hp.theta_full, name);
}

// The per-layer inputs of E2B/E4B, [L*P, n]: layer l's P values are columns [l*P, (l+1)*P).
tdm_tensor per_layer_inputs(tdm_builder* b, const Gemma4Model& m, tdm_tensor x, int64_t n) {
    const Gemma4Hparams& hp = m.hp;
    const int64_t P = hp.n_embd_ple, L = hp.n_layer;
    const tdm_tensor tok =
        tdm_scale(b, tdm_token_rows(b, m.host_rows, m.ple_tok_embd, "ple_rows"), hp.ple_scale, "ple_tok");
    tdm_tensor ctx = tdm_scale(b, tdm_matmul(b, m.ple_model_proj, x, "ple_proj"), 1.0f / std::sqrt(float(hp.n_embd)),
                               "ple_proj_scale");
    ctx = tdm_rms_norm(b, tdm_reshape(b, ctx, P, L, n, 1), m.ple_proj_norm, 0, hp.rms_eps, "ple_proj_norm");
    const tdm_tensor sum = tdm_add(b, ctx, tdm_reshape(b, tok, P, L, n, 1), "ple_sum");
    return tdm_reshape(b, tdm_scale(b, sum, 1.0f / std::sqrt(2.0f), "ple"), L * P, n, 1, 1);
}

// The feed-forward block of a layer, added to the residual x. Dense: the GeGLU MLP. MoE
// (26B-A4B): the MLP and the routed experts side by side, each post-normed, then summed.
tdm_tensor feed_forward(tdm_builder* b, const Gemma4Model& m, const Gemma4Layer& L, tdm_tensor x) {
    const Gemma4Hparams& hp = m.hp;
    const float eps = hp.rms_eps;
    const tdm_tensor h = tdm_rms_norm(b, x, L.ffn_norm, 0, eps, "ffn_norm");
    tdm_tensor f = tdm_matmul(b, L.ffn_down,
                              tdm_glu_op(b, TDM_GLU_GEGLU, tdm_matmul(b, L.ffn_gate, h, "ffn_gate"),
                                         tdm_matmul(b, L.ffn_up, h, "ffn_up"), "ffn_act"),
                              "ffn_down");
    if (hp.moe) {
        f = tdm_rms_norm(b, f, L.post_ffn_norm_1, 0, eps, "post_ffn_norm_1");
        // the router reads the raw residual: rms(x) * scale / sqrt(H); softmax over the top-k
        // logits = the softmax over all experts renormalised to the chosen ones
        const tdm_tensor r = tdm_scale(b, tdm_mul(b, tdm_rms_norm(b, x, NULL, 0, eps, "router_norm"),
                                                  tdm_weight_tensor(b, L.router_scale), "router_in"),
                                       1.0f / std::sqrt(float(hp.n_embd)), "router_in_scale");
        tdm_tensor top_logits = {0};
        const tdm_tensor ids =
            tdm_top_k(b, tdm_matmul(b, L.router, r, "router"), int32_t(hp.n_expert_used), &top_logits, "experts");
        const tdm_tensor weights = tdm_softmax(b, top_logits, 1.0f, "expert_weights");
        const tdm_tensor xe = tdm_rms_norm(b, x, L.pre_ffn_norm_2, 0, eps, "pre_ffn_norm_2");
        const tdm_tensor act = tdm_glu_op(b, TDM_GLU_GEGLU, tdm_matmul_id(b, L.gate_exps, xe, ids, "exp_gate"),
                                          tdm_matmul_id(b, L.up_exps, xe, ids, "exp_up"), "exp_act");
        const tdm_tensor routed = tdm_moe_sum_scaled(b, tdm_matmul_id(b, L.down_exps, act, ids, "exp_down"), weights,
                                                     ids, L.expert_scale, "moe_sum");
        f = tdm_add(b, f, tdm_rms_norm(b, routed, L.post_ffn_norm_2, 0, eps, "post_ffn_norm_2"), "ffn_sum");
    }
    return tdm_add(b, x, tdm_rms_norm(b, f, L.post_ffn_norm, 0, eps, "post_ffn_norm"), "ffn_res");
}

}  // namespace

tdm_status gemma4_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const Gemma4Model* m = static_cast<const Gemma4Model*>(model);
    const Gemma4Hparams& hp = m->hp;
    tdm_builder b = tdm_builder_init(m->host, g);
    const int64_t n = batch->n_tokens, P = hp.n_embd_ple;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos = tdm_input(&b, TDM_INPUT_POSITIONS);

    tdm_tensor x = tdm_scale(&b, tdm_get_rows(&b, m->tok_embd, tokens), hp.embd_scale, "inp_scaled");  // [H, n]
    const tdm_tensor ple = P ? per_layer_inputs(&b, *m, x, n) : tdm_tensor{0};
    // each declared KV layer after its store: shared layers attend it in graph order
    std::vector<tdm_tensor> stored(m->attention.size(), tdm_tensor{0});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const Gemma4Layer& L = m->layers[il];
        const LayerShape& s = hp.layers[il];
        tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, il, x);
        const int64_t D = s.head_dim;

        // attention: q/k RMSNorm per head, RoPE per layer type, V weightlessly normed,
        // scale 1 (the norms fix the logit scale), no attention softcap
        const tdm_tensor h = tdm_rms_norm(&b, x, L.attn_norm, 0, hp.rms_eps, "attn_norm");
        tdm_tensor q = tdm_reshape(&b, tdm_matmul(&b, L.wq, h, "q"), D, hp.n_head, n, 1);
        q = rope(&b, *m, s, tdm_rms_norm(&b, q, L.q_norm, 0, hp.rms_eps, "q_norm"), pos, "q_rope");
        if (s.kv_layer >= 0) {
            const tdm_tensor k_raw = tdm_reshape(&b, tdm_matmul(&b, L.wk, h, "k"), D, s.n_head_kv, n, 1);
            // K = V layers: V is the raw key projection (before k_norm and RoPE)
            const tdm_tensor v_raw = s.k_eq_v ? k_raw : tdm_reshape(&b, tdm_matmul(&b, L.wv, h, "v"), D, s.n_head_kv, n, 1);
            const tdm_tensor k = rope(&b, *m, s, tdm_rms_norm(&b, k_raw, L.k_norm, 0, hp.rms_eps, "k_norm"), pos, "k_rope");
            const tdm_tensor v = tdm_rms_norm(&b, v_raw, NULL, 0, hp.rms_eps, "v_norm");
            stored[size_t(s.kv_layer)] = tdm_kv_store(&b, tdm_kv(&b, uint32_t(s.kv_layer)), k, v, "kv_store");
        }
        const tdm_tensor a = tdm_attention(&b, q, stored[size_t(s.kv_source)], 1.0f, s.sliding ? int32_t(hp.window) : 0,
                                           0.0f, "attn");
        x = tdm_add(&b, x, tdm_rms_norm(&b, tdm_matmul(&b, L.wo, a, "attn_out"), L.post_attn_norm, 0, hp.rms_eps,
                                        "post_attn_norm"),
                    "attn_res");

        x = feed_forward(&b, *m, L, x);

        // per-layer input (E2B/E4B): a gated projection of this layer's slice of the PLE
        if (P) {
            const tdm_tensor gate = tdm_unary_op(&b, TDM_UNARY_GELU_TANH, tdm_matmul(&b, L.ple_gate, x, "ple_gate"),
                                                 0.0f, "ple_gelu");
            const tdm_tensor gp = tdm_mul(&b, gate, tdm_view_cols(&b, ple, int32_t(il * P), int32_t(P), "ple_l"),
                                          "ple_gated");
            x = tdm_add(&b, x, tdm_rms_norm(&b, tdm_matmul(&b, L.ple_proj, gp, "ple_out"), L.ple_norm, 0, hp.rms_eps,
                                            "ple_norm"),
                        "ple_res");
        }
        // the learned layer scalar scales the whole residual stream, not just the branch
        x = tdm_mul(&b, x, tdm_weight_tensor(&b, L.out_scale), "layer_out");
    }
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_PRE_NORM, x);
    tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, hp.n_layer, x);
    const tdm_tensor hn = tdm_rms_norm(&b, x, m->output_norm, 0, hp.rms_eps, "output_norm");
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_POST_NORM, hn);
    tdm_tap(&b, m->features, TDM_TAP_POST_NORM, 0, hn);
    const tdm_tensor rows = batch->n_outputs == batch->n_tokens
                                ? hn
                                : tdm_select_rows(&b, hn, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    tdm_tensor logits = tdm_matmul(&b, m->tok_embd, rows, "logits");  // tied head
    if (hp.softcap > 0) logits = tdm_unary_op(&b, TDM_UNARY_SOFTCAP, logits, hp.softcap, "logit_softcap");
    tdm_set_output(&b, TDM_OUTPUT_LOGITS, logits);
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace gemma4
