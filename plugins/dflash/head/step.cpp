// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/head/step.cpp: one DFlash block (docs/models/dflash.md §2; z-lab's
// dflash/model.py): ctx = hidden_norm(fc(taps)) for the context rows; the block rows start
// as the target's embeddings of their tokens (the newest token, then the mask token) and run
// the draft layers, each with keys and values over [ctx; block] (stored in the head's KV)
// and queries from the block; norm and the target's LM head give one pick per output row:
// the drafted block rows only on a host of tdm.block_draft version 2 (the layers still run on
// the whole block, whose rows attend to each other), every block row on a version 1 host.
// The graph computes queries and attention for the context rows too (the attention op takes
// one query row per batch row) and drops them before o_proj.
// Not here: which rows a block gets, the non-causal bound of its attention, the rollback
// of its KV (the host's: tandem/ext/block_draft.h).
#include "dflash.h"

namespace dflash {

using tdm::sdk::OpQuery;

tdm_status dflash_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_GET_ROWS),
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_RESHAPE),
        OpQuery(TDM_OP_CONCAT),
        OpQuery(TDM_OP_RMS_NORM, "weighted").param_i(0, TDM_NORM_WEIGHT),
        OpQuery(TDM_OP_ROPE, "NeoX").param_i(0, TDM_ROPE_NEOX).param_f(0, 1e4f).param_f(1, 1.0f),
        OpQuery(TDM_OP_KV_STORE),
        OpQuery(TDM_OP_ATTENTION, "full causal"),
        OpQuery(TDM_OP_GLU, "SwiGLU").param_i(0, TDM_GLU_SWIGLU),
        OpQuery(TDM_OP_SELECT_ROWS),
        OpQuery(TDM_OP_VIEW_COLS),
        OpQuery(TDM_OP_COPY),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

namespace {

// [a; c]: the rows of a [w, m] then those of c [w, n], as [w, m + n] (contiguous rows
// concatenated as one long row each, then reshaped).
tdm_tensor stack_rows(tdm_builder* b, tdm_tensor a, tdm_tensor c, int64_t w, int64_t m, int64_t n, const char* name) {
    const tdm_tensor flat = tdm_concat(b, tdm_reshape(b, a, w * m, 1, 1, 1), tdm_reshape(b, c, w * n, 1, 1, 1), name);
    return tdm_reshape(b, flat, w, m + n, 1, 1);
}

// The last n rows of t [w, m + n] (contiguous), as [w, n]: the block's rows of a batch that
// lists only the drafted ones as output rows.
tdm_tensor last_rows(tdm_builder* b, tdm_tensor t, int64_t w, int64_t m, int64_t n, const char* name) {
    const tdm_tensor flat = tdm_reshape(b, t, w * (m + n), 1, 1, 1);
    const tdm_tensor tail = tdm_copy(b, tdm_view_cols(b, flat, int32_t(w * m), int32_t(w * n), name), name);
    return tdm_reshape(b, tail, w, n, 1, 1);
}

}  // namespace

tdm_status dflash_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const DflashHead* h = static_cast<const DflashHead*>(head);
    const DflashHparams& hp = h->hp;
    const tdm::sdk::Err e(err, err_size);
    const int64_t n = batch->n_tokens, nb = hp.block_size, m = n - nb, D = hp.head_dim, H = hp.n_embd;
    // version 2: the drafted rows (1 .. b-1 of them) are the outputs; version 1: the block
    const bool outputs_ok = h->drafted_rows ? batch->n_outputs >= 1 && batch->n_outputs < hp.block_size
                                            : batch->n_outputs == hp.block_size;
    if (!outputs_ok || m < 1)
        return e.fail(TDM_ERR_INVALID_ARGUMENT,
                      "dflash: a block step of %u rows with %u outputs; expected context rows and a block of %u "
                      "with %s",
                      batch->n_tokens, batch->n_outputs, hp.block_size,
                      h->drafted_rows ? "1 .. block - 1 drafted rows as outputs" : "every block row as an output");
    tdm_builder b = tdm_builder_init(h->host, g);
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos = tdm_input(&b, TDM_INPUT_POSITIONS);
    const tdm_tensor out_rows = tdm_input(&b, TDM_INPUT_OUTPUT_ROWS);
    // the block's rows of a [w, n] tensor: the output rows are the block on a version 1 host
    const auto block_of = [&](tdm_tensor t, int64_t w, const char* name) {
        return h->drafted_rows ? last_rows(&b, t, w, m, nb, name) : tdm_select_rows(&b, t, out_rows, name);
    };
    tdm_tensor taps{};
    if (h->features->features(g, &taps) != TDM_OK)
        return e.fail(TDM_ERR_INVALID_ARGUMENT, "dflash: the target's layer states: %s", h->host->last_error());

    const tdm_tensor ctx = tdm_rms_norm(&b, tdm_matmul(&b, h->fc, taps, "fc"), h->hidden_norm, 0, hp.rms_eps, "ctx");
    tdm_tensor x = block_of(tdm_get_rows(&b, h->tok_embd, tokens), H, "block_embd");
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const DflashLayer& L = h->layers[il];
        const tdm_tensor xn = tdm_rms_norm(&b, x, L.attn_norm, 0, hp.rms_eps, "attn_norm");
        const tdm_tensor u = stack_rows(&b, ctx, xn, H, m, nb, "ctx_block");  // [H, n]
        tdm_tensor q = tdm_reshape(&b, tdm_matmul(&b, L.wq, u, "q"), D, hp.n_head, n, 1);
        tdm_tensor k = tdm_reshape(&b, tdm_matmul(&b, L.wk, u, "k"), D, hp.n_head_kv, n, 1);
        const tdm_tensor v = tdm_reshape(&b, tdm_matmul(&b, L.wv, u, "v"), D, hp.n_head_kv, n, 1);
        q = tdm_rms_norm(&b, q, L.q_norm, 0, hp.rms_eps, "q_norm");
        k = tdm_rms_norm(&b, k, L.k_norm, 0, hp.rms_eps, "k_norm");
        q = tdm_rope(&b, q, pos, nullptr, TDM_ROPE_NEOX, int32_t(D), hp.rope_theta, 1.0f, "q_rope");
        k = tdm_rope(&b, k, pos, nullptr, TDM_ROPE_NEOX, int32_t(D), hp.rope_theta, 1.0f, "k_rope");
        const tdm_tensor kv = tdm_kv_store(&b, tdm_kv(&b, il), k, v, "kv_store");
        const tdm_tensor a = tdm_attention(&b, q, kv, 0.0f, 0, 0.0f, "attn");  // scale 1/sqrt(D)
        x = tdm_matmul_add(&b, L.wo, block_of(a, int64_t(hp.n_head) * D, "attn_block"), x, "attn_out");
        const tdm_tensor f = tdm_rms_norm(&b, x, L.ffn_norm, 0, hp.rms_eps, "ffn_norm");
        const tdm_tensor gu = tdm_glu_op(&b, TDM_GLU_SWIGLU, tdm_matmul(&b, L.ffn_gate, f, "ffn_gate"),
                                         tdm_matmul(&b, L.ffn_up, f, "ffn_up"), "ffn_act");
        x = tdm_matmul_add(&b, L.ffn_down, gu, x, "ffn_out");
    }
    // version 2: the drafted rows, picked by the batch's output rows out of [ctx; block]
    if (h->drafted_rows) x = tdm_select_rows(&b, stack_rows(&b, ctx, x, H, m, nb, "ctx_block"), out_rows, "drafted");
    const tdm_tensor hn = tdm_rms_norm(&b, x, h->output_norm, 0, hp.rms_eps, "output_norm");
    // the target's vocabulary: the host may narrow it to its first ids
    const uint32_t vocab = tdm_step_draft_vocab(batch, 0, hp.n_vocab);
    tdm_set_output(&b, TDM_OUTPUT_LOGITS,
                   vocab ? tdm_matmul_rows(&b, h->output, vocab, hn, "logits") : tdm_matmul(&b, h->output, hn, "logits"));
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace dflash
