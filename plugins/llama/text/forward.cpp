// SPDX-License-Identifier: Apache-2.0
// plugins/llama/text/forward.cpp: the Llama forward pass (HF LlamaForCausalLM, llama.cpp
// src/models/llama.cpp), one batch of tokens, and the list of ops it uses (checked in init).
// Not here: hyper-parameters (hparams.cpp), the llama3 divisors' values (rope_factors.cpp).
#include "arch.h"

namespace llama {
namespace {

using tdm::sdk::OpQuery;

// The llama3 divisors of an HF checkpoint as an activation: the host loads weights only
// from the model file, and an HF directory has no rope_freqs tensor. Every row of the
// result is the divisor vector (RoPE reads the first n_rot/2 elements): zeros made from
// the batch's embedding rows (x - x), then each run of equal divisors added as a scalar,
// the runs concatenated. The values are exact (0 + c = c) and the ops few: a run per
// distinct divisor, one for the high and one for the low frequencies, a handful between.
tdm_tensor rope_factor_rows(tdm_builder* b, const LlamaModel& m, tdm_tensor embd) {
    const std::vector<float>& f = m.rope_factors;
    const int32_t half = int32_t(f.size());
    const tdm_tensor cols = tdm_view_cols(b, embd, 0, half, "rope_factor_src");
    const tdm_tensor in[2] = {cols, cols};
    const tdm_tensor zeros = tdm_emit(b, TDM_OP_SUB, in, 2, NULL, 0, NULL, 0, "rope_factor_zero");
    tdm_tensor rows = {0};
    bool first = true;
    for (int32_t s = 0; s < half;) {
        int32_t e = s + 1;
        while (e < half && f[size_t(e)] == f[size_t(s)]) ++e;
        const tdm_tensor run =
            tdm_unary_op(b, TDM_UNARY_ADD_SCALAR, tdm_view_cols(b, zeros, s, e - s, "rope_factor_run"), f[size_t(s)],
                         "rope_factors");
        rows = first ? run : tdm_concat(b, rows, run, "rope_factors");
        first = false;
        s = e;
    }
    return rows;
}

tdm_tensor rope(tdm_builder* b, const LlamaModel& m, tdm_tensor x, tdm_tensor pos, const tdm_tensor* factors,
                const char* name) {
    const LlamaHparams& hp = m.hp;
    if (!factors) return tdm_rope(b, x, pos, m.rope_freqs, hp.rope_mode, int32_t(hp.n_rot), hp.rope_theta, 1.0f, name);
    const tdm_tensor in[3] = {x, pos, *factors};
    const int32_t ip[2] = {int32_t(hp.rope_mode), int32_t(hp.n_rot)};
    const float fp[2] = {hp.rope_theta, 1.0f};
    return tdm_emit(b, TDM_OP_ROPE, in, 3, ip, 2, fp, 2, name);
}

}  // namespace

// Every op build_graph emits, with the parameter kinds it passes.
tdm_status llama_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_GET_ROWS),
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_RESHAPE),
        OpQuery(TDM_OP_RMS_NORM, "weighted").param_i(0, TDM_NORM_WEIGHT),
        OpQuery(TDM_OP_ROPE, "adjacent").param_i(0, TDM_ROPE_ADJACENT).param_f(0, 5e5f).param_f(1, 1.0f),
        OpQuery(TDM_OP_ROPE, "NeoX").param_i(0, TDM_ROPE_NEOX).param_f(0, 5e5f).param_f(1, 1.0f),
        OpQuery(TDM_OP_KV_STORE),
        OpQuery(TDM_OP_ATTENTION, "full causal"),
        OpQuery(TDM_OP_GLU, "SwiGLU").param_i(0, TDM_GLU_SWIGLU),
        OpQuery(TDM_OP_SELECT_ROWS),
        // the llama3 divisors of an HF checkpoint (rope_factor_rows)
        OpQuery(TDM_OP_VIEW_COLS),
        OpQuery(TDM_OP_SUB),
        OpQuery(TDM_OP_UNARY, "add scalar").param_i(0, TDM_UNARY_ADD_SCALAR).param_f(0, 1.0f),
        OpQuery(TDM_OP_CONCAT),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

tdm_status llama_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const LlamaModel* m = static_cast<const LlamaModel*>(model);
    const LlamaHparams& hp = m->hp;
    tdm_builder b = tdm_builder_init(m->host, g);
    const int64_t n = batch->n_tokens, D = hp.head_dim;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos = tdm_input(&b, TDM_INPUT_POSITIONS);

    tdm_tensor x = tdm_get_rows(&b, m->tok_embd, tokens);  // [n_embd, n]
    tdm_tensor factors = {0};
    if (!m->rope_factors.empty()) factors = rope_factor_rows(&b, *m, x);
    const tdm_tensor* ff = m->rope_factors.empty() ? nullptr : &factors;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LlamaLayer& L = m->layers[il];
        tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, il, x);
        // attention: RoPE in the layout's pairing (arch.h), GQA
        const tdm_tensor h = tdm_rms_norm(&b, x, L.attn_norm, 0, hp.rms_eps, "attn_norm");
        tdm_tensor q = tdm_reshape(&b, tdm_matmul(&b, L.wq, h, "q"), D, hp.n_head, n, 1);     // [D, n_head, n]
        tdm_tensor k = tdm_reshape(&b, tdm_matmul(&b, L.wk, h, "k"), D, hp.n_head_kv, n, 1);  // [D, n_head_kv, n]
        const tdm_tensor v = tdm_reshape(&b, tdm_matmul(&b, L.wv, h, "v"), D, hp.n_head_kv, n, 1);
        q = rope(&b, *m, q, pos, ff, "q_rope");
        k = rope(&b, *m, k, pos, ff, "k_rope");
        const tdm_tensor kv = tdm_kv_store(&b, tdm_kv(&b, il), k, v, "kv_store");
        const tdm_tensor a = tdm_attention(&b, q, kv, 0.0f, 0, 0.0f, "attn");  // scale 1/sqrt(D)
        x = tdm_matmul_add(&b, L.wo, a, x, "attn_out");                         // residual

        // MLP: down(silu(gate(h)) * up(h))
        const tdm_tensor f = tdm_rms_norm(&b, x, L.ffn_norm, 0, hp.rms_eps, "ffn_norm");
        const tdm_tensor gu = tdm_glu_op(&b, TDM_GLU_SWIGLU, tdm_matmul(&b, L.ffn_gate, f, "ffn_gate"),
                                         tdm_matmul(&b, L.ffn_up, f, "ffn_up"), "ffn_act");
        x = tdm_matmul_add(&b, L.ffn_down, gu, x, "ffn_out");  // residual
    }
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_PRE_NORM, x);
    tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, hp.n_layer, x);
    const tdm_tensor hn = tdm_rms_norm(&b, x, m->output_norm, 0, hp.rms_eps, "output_norm");
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_POST_NORM, hn);
    tdm_tap(&b, m->features, TDM_TAP_POST_NORM, 0, hn);
    // logits only for the rows the host needs (the last prompt row in prefill)
    const tdm_tensor rows = batch->n_outputs == batch->n_tokens
                                ? hn
                                : tdm_select_rows(&b, hn, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    tdm_set_output(&b, TDM_OUTPUT_LOGITS, tdm_matmul(&b, m->output, rows, "logits"));
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace llama
