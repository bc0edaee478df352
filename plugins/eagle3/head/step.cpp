// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/head/step.cpp: one EAGLE-3 draft step (docs/models/eagle3.md §2; vLLM's
// llama_eagle3.py, llama.cpp's src/models/eagle3.cpp): the target's taps through fc (the
// round's first step) or the previous step's state (chained steps) -> one decoder layer over
// [input_layernorm(embed(token)); hidden_norm(g)] with its own KV -> the pre-norm state (the
// next step's g) -> norm -> LM head -> the draft token as a target id (through d2t).
// Not here: which rows a step gets and how its KV is rolled back (the host's).
#include "eagle3.h"

namespace eagle3 {

using tdm::sdk::OpQuery;

tdm_status eagle3_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_GET_ROWS),
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_RESHAPE),
        OpQuery(TDM_OP_CONCAT),
        OpQuery(TDM_OP_RMS_NORM, "weighted").param_i(0, TDM_NORM_WEIGHT),
        OpQuery(TDM_OP_ROPE, "adjacent").param_i(0, TDM_ROPE_ADJACENT).param_f(0, 1e4f).param_f(1, 1.0f),
        OpQuery(TDM_OP_ROPE, "NeoX").param_i(0, TDM_ROPE_NEOX).param_f(0, 1e4f).param_f(1, 1.0f),
        OpQuery(TDM_OP_KV_STORE),
        OpQuery(TDM_OP_ATTENTION, "full causal"),
        OpQuery(TDM_OP_GLU, "SwiGLU").param_i(0, TDM_GLU_SWIGLU),
        OpQuery(TDM_OP_SELECT_ROWS),
        // the draft token as a target id (draft_token)
        OpQuery(TDM_OP_ARGMAX),
        OpQuery(TDM_OP_VIEW_COLS),
        OpQuery(TDM_OP_SUB),
        OpQuery(TDM_OP_UNARY, "add scalar").param_i(0, TDM_UNARY_ADD_SCALAR).param_f(0, 1.0f),
        OpQuery(TDM_OP_CAST, "to i32").param_i(0, TDM_DTYPE_I32),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

namespace {

// The target id of each row's best draft id j, as I32 [n]. With the host's load transforms
// (load.cpp, load_d2t) d2t is the table of target ids by draft id: one get_rows reads row j,
// whose first column is the id. Without them the table is built here as an f32 activation,
// since the ops take no constants and do no integer arithmetic: zeros (x - x of the logits);
// for the offset form plus 0, 1, ..., Vd-1 (by doubling: [a; a + m]); plus d2t (a small
// weight); read at j (select_rows). Every value is an integer below 2^24, so both are exact
// and give the same ids.
tdm_tensor draft_token(tdm_builder* b, const Eagle3Head& h, tdm_tensor logits, int32_t n) {
    const tdm_tensor best = tdm_argmax(b, logits, "draft_id");
    tdm_tensor id{};
    if (h.d2t_rows) {
        const tdm_tensor in[2] = {tdm_weight_tensor(b, h.d2t), best};
        const tdm_tensor rows = tdm_emit(b, TDM_OP_GET_ROWS, in, 2, NULL, 0, NULL, 0, "target_id_rows");
        id = tdm_view_cols(b, rows, 0, 1, "draft_token_f");
    } else {
        const int32_t Vd = int32_t(h.hp.n_vocab_draft);
        const tdm_tensor row0 =
            tdm_view_cols(b, tdm_reshape(b, logits, int64_t(Vd) * n, 1, 1, 1), 0, Vd, "d2t_src");
        const tdm_tensor zr[2] = {row0, row0};
        const tdm_tensor zeros = tdm_emit(b, TDM_OP_SUB, zr, 2, NULL, 0, NULL, 0, "d2t_zero");
        tdm_tensor base = zeros;
        if (h.hp.d2t == D2tForm::offset) {
            tdm_tensor iota = tdm_view_cols(b, zeros, 0, 1, "iota");
            for (int32_t m = 1; m < Vd; m *= 2)
                iota = tdm_concat(b, iota, tdm_unary_op(b, TDM_UNARY_ADD_SCALAR, iota, float(m), "iota_hi"), "iota");
            base = tdm_view_cols(b, iota, 0, Vd, "iota");
        }
        const tdm_tensor table = tdm_add(b, base, tdm_weight_tensor(b, h.d2t), "target_ids");
        id = tdm_select_rows(b, tdm_reshape(b, table, 1, Vd, 1, 1), best, "draft_token_f");
    }
    const int32_t to_i32 = TDM_DTYPE_I32;
    return tdm_emit(b, TDM_OP_CAST, &id, 1, &to_i32, 1, NULL, 0, "draft_token");
}

// RoPE with the GGUF's rope_freqs, or the HF llama3 divisors as rows (`divisors`), or plain.
tdm_tensor rope(tdm_builder* b, const Eagle3Head& h, tdm_tensor x, tdm_tensor pos, const tdm_tensor* divisors,
                const char* name) {
    const Eagle3Hparams& hp = h.hp;
    if (!divisors) return tdm_rope(b, x, pos, h.rope_freqs, hp.rope_mode, int32_t(hp.head_dim), hp.rope_theta, 1.0f, name);
    const tdm_tensor in[3] = {x, pos, *divisors};
    const int32_t ip[2] = {int32_t(hp.rope_mode), int32_t(hp.head_dim)};
    const float fp[2] = {hp.rope_theta, 1.0f};
    return tdm_emit(b, TDM_OP_ROPE, in, 3, ip, 2, fp, 2, name);
}

}  // namespace

tdm_status eagle3_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const Eagle3Head* h = static_cast<const Eagle3Head*>(head);
    const Eagle3Hparams& hp = h->hp;
    const tdm::sdk::Err e(err, err_size);
    tdm_builder b = tdm_builder_init(h->host, g);
    const int64_t n = batch->n_tokens, D = hp.head_dim;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos = tdm_input(&b, TDM_INPUT_POSITIONS);

    // g: the fused taps in the round's first step, the previous step's state after it
    tdm_tensor taps{};
    const tdm_status st = h->features->features(g, &taps);
    if (st != TDM_OK && st != TDM_ERR_NOT_FOUND)
        return e.fail(st, "eagle3: the target's layer states: %s", h->host->last_error());
    const tdm_tensor gin = st == TDM_OK ? tdm_matmul(&b, h->fc, taps, "fc") : tdm_input(&b, TDM_INPUT_TARGET_HIDDEN);

    const tdm_tensor embd = tdm_get_rows(&b, h->tok_embd, tokens);
    const tdm_tensor en = tdm_rms_norm(&b, embd, h->attn_norm, 0, hp.rms_eps, "embd_norm");
    const tdm_tensor gn = tdm_rms_norm(&b, gin, h->hidden_norm, 0, hp.rms_eps, "hidden_norm");
    const tdm_tensor cat = tdm_concat(&b, en, gn, "embd_hidden");  // [2H, n]: embedding first
    tdm_tensor q = tdm_reshape(&b, tdm_matmul(&b, h->wq, cat, "q"), D, hp.n_head, n, 1);
    tdm_tensor k = tdm_reshape(&b, tdm_matmul(&b, h->wk, cat, "k"), D, hp.n_head_kv, n, 1);
    const tdm_tensor v = tdm_reshape(&b, tdm_matmul(&b, h->wv, cat, "v"), D, hp.n_head_kv, n, 1);
    tdm_tensor divisors{};
    if (!h->rope_divisors.empty()) divisors = rope_divisor_rows(&b, h->rope_divisors, embd);
    const tdm_tensor* dv = h->rope_divisors.empty() ? nullptr : &divisors;
    q = rope(&b, *h, q, pos, dv, "q_rope");
    k = rope(&b, *h, k, pos, dv, "k_rope");
    const tdm_tensor kv = tdm_kv_store(&b, tdm_kv(&b, 0), k, v, "kv_store");
    const tdm_tensor a = tdm_attention(&b, q, kv, 0.0f, 0, 0.0f, "attn");  // scale 1/sqrt(D)
    tdm_tensor x = tdm_matmul_add(&b, h->wo, a, hp.norm_before_residual ? gn : gin, "attn_out");
    const tdm_tensor f = tdm_rms_norm(&b, x, h->ffn_norm, 0, hp.rms_eps, "ffn_norm");
    const tdm_tensor gu = tdm_glu_op(&b, TDM_GLU_SWIGLU, tdm_matmul(&b, h->ffn_gate, f, "ffn_gate"),
                                     tdm_matmul(&b, h->ffn_up, f, "ffn_up"), "ffn_act");
    x = tdm_matmul_add(&b, h->ffn_down, gu, x, "ffn_out");

    const tdm_tensor rows =
        batch->n_outputs == n ? x : tdm_select_rows(&b, x, tdm_input(&b, TDM_INPUT_OUTPUT_ROWS), "out_rows");
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_DRAFT, rows);  // pre-norm: the next step's g
    const tdm_tensor hn = tdm_rms_norm(&b, rows, h->output_norm, 0, hp.rms_eps, "output_norm");
    if (hp.d2t != D2tForm::none) {
        const tdm_tensor logits = tdm_matmul(&b, h->output, hn, "logits");
        tdm_set_output(&b, TDM_OUTPUT_DRAFT_TOKENS, draft_token(&b, *h, logits, int32_t(batch->n_outputs)));
    } else {
        // the target's vocabulary: the host may narrow it to its first ids
        const uint32_t vocab = tdm_step_draft_vocab(batch, 0, hp.n_vocab_draft);
        tdm_set_output(&b, TDM_OUTPUT_LOGITS, vocab ? tdm_matmul_rows(&b, h->output, vocab, hn, "logits")
                                                    : tdm_matmul(&b, h->output, hn, "logits"));
    }
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace eagle3
