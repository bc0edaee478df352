// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/qwen3/forward.cpp: the Qwen3 forward pass (HF
// Qwen3ForCausalLM, llama.cpp src/models/qwen3.cpp), one batch of tokens, and
// the list of ops it uses (checked in init).
#include "arch.h"

namespace qwen {

using tdm::sdk::OpQuery;

// Every op build_graph emits, with the parameter kinds it passes.
tdm_status qwen3_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_GET_ROWS),
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_RESHAPE),
        OpQuery(TDM_OP_RMS_NORM, "weighted").param_i(0, TDM_NORM_WEIGHT),
        OpQuery(TDM_OP_ROPE, "NeoX").param_i(0, TDM_ROPE_NEOX).param_f(0, 1e6f).param_f(1, 1.0f),
        OpQuery(TDM_OP_KV_STORE),
        OpQuery(TDM_OP_ATTENTION, "full causal"),
        OpQuery(TDM_OP_GLU, "SwiGLU").param_i(0, TDM_GLU_SWIGLU),
        OpQuery(TDM_OP_SELECT_ROWS),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

tdm_status qwen3_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const Qwen3Model* m = static_cast<const Qwen3Model*>(model);
    const Qwen3Hparams& hp = m->hp;
    tdm_builder b = tdm_builder_init(m->host, g);
    const int64_t n = batch->n_tokens, D = hp.head_dim;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos = tdm_input(&b, TDM_INPUT_POSITIONS);

    tdm_tensor x = tdm_get_rows(&b, m->tok_embd, tokens);  // [n_embd, n]
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const Qwen3Layer& L = m->layers[il];
        tdm_tap(&b, m->features, TDM_TAP_LAYER_INPUT, il, x);
        // attention: q/k RMSNorm per head, NeoX RoPE over the whole head, GQA
        const tdm_tensor h = tdm_rms_norm(&b, x, L.attn_norm, 0, hp.rms_eps, "attn_norm");
        tdm_tensor q = tdm_reshape(&b, tdm_matmul(&b, L.wq, h, "q"), D, hp.n_head, n, 1);     // [D, n_head, n]
        tdm_tensor k = tdm_reshape(&b, tdm_matmul(&b, L.wk, h, "k"), D, hp.n_head_kv, n, 1);  // [D, n_head_kv, n]
        const tdm_tensor v = tdm_reshape(&b, tdm_matmul(&b, L.wv, h, "v"), D, hp.n_head_kv, n, 1);
        q = tdm_rms_norm(&b, q, L.q_norm, 0, hp.rms_eps, "q_norm");
        k = tdm_rms_norm(&b, k, L.k_norm, 0, hp.rms_eps, "k_norm");
        q = tdm_rope(&b, q, pos, NULL, TDM_ROPE_NEOX, int32_t(D), hp.rope_theta, 1.0f, "q_rope");
        k = tdm_rope(&b, k, pos, NULL, TDM_ROPE_NEOX, int32_t(D), hp.rope_theta, 1.0f, "k_rope");
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
    const tdm_tensor rows =
        batch->n_outputs == batch->n_tokens ? hn : tdm_select_rows(&b, hn, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    tdm_set_output(&b, TDM_OUTPUT_LOGITS, tdm_matmul(&b, m->output, rows, "logits"));
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace qwen
