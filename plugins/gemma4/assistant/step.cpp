// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/assistant/step.cpp: one draft step of the Gemma 4 assistant (docs/models/gemma4.md
// §3.3-3.4; HF Gemma4AssistantForCausalLM.forward): the target-embedded token and the target
// hidden -> pre_projection -> 4 Q-only layers over the target's K/V -> norm -> the next hidden
// (post_projection) and the draft token (full tied head, or the centroid-masked head).
#include <cmath>

#include "assistant.h"

namespace gemma4 {

using tdm::sdk::OpQuery;

tdm_status assistant_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {OpQuery(TDM_OP_CONCAT)};
    return tdm::sdk::require_ops(host, kOps, err);
}

// The centroid-masked head's ops (E2B/E4B assistants), checked when such an assistant is
// created: an older host still runs the full-head assistants (26B, 31B).
tdm_status assistant_require_masked_head_ops(const tdm::sdk::Host& host, tdm::sdk::Err err) {
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_TOP_K, "centroids").param_i(0, 32),
        OpQuery(TDM_OP_ARGMAX),
        OpQuery(TDM_OP_MATMUL_ID, "one row per id (i[0])").param_i(0, 1),
        OpQuery(TDM_OP_GET_ROWS, "row width (i[0])").param_i(0, 128),
        OpQuery(TDM_OP_CAST, "to i32").param_i(0, TDM_DTYPE_I32),
    };
    return tdm::sdk::require_ops(host, kOps, err);
}

namespace {

tdm_tensor rope(tdm_builder* b, const Assistant& a, bool sliding, tdm_tensor x, tdm_tensor pos, const char* name) {
    const AssistantHparams& hp = a.hp;
    if (sliding) return tdm_rope(b, x, pos, NULL, TDM_ROPE_NEOX, int32_t(hp.head_dim_swa), hp.theta_swa, 1.0f, name);
    if (a.rope_freqs)
        return tdm_rope(b, x, pos, a.rope_freqs, TDM_ROPE_NEOX, int32_t(hp.head_dim_full), hp.theta_full, 1.0f, name);
    return tdm_rope_partial_freq(b, x, pos, NULL, TDM_ROPE_NEOX, int32_t(hp.head_dim_full), int32_t(hp.n_freq_full),
                                 hp.theta_full, name);
}

// The centroid-masked head (§3.4): the top clusters by centroid score, their tokens as
// candidates (in cluster order), the head rows of only those, and the candidate with the
// highest logit: exactly the argmax of HF's full masked logits (non-candidates sit below).
tdm_tensor masked_head_token(tdm_builder* b, const Assistant& a, tdm_tensor hn) {
    const AssistantHparams& hp = a.hp;
    const int32_t per_cluster = int32_t(hp.n_vocab / hp.n_centroids), n_cand = per_cluster * int32_t(hp.top_k_centroids);
    const tdm_tensor top = tdm_top_k(b, tdm_matmul(b, a.centroids, hn, "centroid_logits"), int32_t(hp.top_k_centroids),
                                     NULL, "top_centroids");
    // the ordering (token ids as exact f32) read in rows of per_cluster: row c = cluster c
    tdm_tensor in_g[2] = {tdm_weight_tensor(b, a.ordering), top};
    const tdm_tensor cand_f = tdm_emit(b, TDM_OP_GET_ROWS, in_g, 2, &per_cluster, 1, NULL, 0, "candidates");
    const int32_t to_i32 = TDM_DTYPE_I32;
    tdm_tensor cand_flat = tdm_reshape(b, cand_f, n_cand, 1, 1, 1);
    const tdm_tensor cand = tdm_emit(b, TDM_OP_CAST, &cand_flat, 1, &to_i32, 1, NULL, 0, "candidate_ids");
    // one head row per candidate: the tied embedding as V "experts" of one row each
    tdm_tensor in_m[3] = {tdm_weight_tensor(b, a.tok_embd), hn, cand};
    const int32_t one_row = 1;
    const tdm_tensor s = tdm_emit(b, TDM_OP_MATMUL_ID, in_m, 3, &one_row, 1, NULL, 0, "candidate_logits");
    const tdm_tensor best = tdm_argmax(b, tdm_reshape(b, s, n_cand, 1, 1, 1), "best_candidate");
    tdm_tensor tok_f = tdm_select_rows(b, tdm_reshape(b, cand_f, 1, n_cand, 1, 1), best, "draft_token_f");
    return tdm_emit(b, TDM_OP_CAST, &tok_f, 1, &to_i32, 1, NULL, 0, "draft_token");
}

}  // namespace

tdm_status assistant_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    const Assistant* a = static_cast<const Assistant*>(head);
    const AssistantHparams& hp = a->hp;
    tdm_builder b = tdm_builder_init(a->host, g);
    const int64_t n = batch->n_tokens;
    const float eps = hp.rms_eps;
    const tdm_tensor tokens = tdm_input(&b, TDM_INPUT_TOKENS);
    const tdm_tensor pos = tdm_input(&b, TDM_INPUT_POSITIONS);
    const tdm_tensor hidden = tdm_input(&b, TDM_INPUT_TARGET_HIDDEN);  // the target row that produced the token

    // [target embedding * the target's sqrt(H), target hidden]: embedding first
    const tdm_tensor e = tdm_scale(&b, tdm_get_rows(&b, a->target_embd, tokens), a->target_embd_scale, "target_embd");
    tdm_tensor x = tdm_matmul(&b, a->pre_proj, tdm_concat(&b, e, hidden, "embd_hidden"), "pre_projection");
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const AssistantLayer& L = a->layers[il];
        const bool sliding = hp.sliding[il] != 0;
        const int64_t D = sliding ? hp.head_dim_swa : hp.head_dim_full;
        // Q only: K and V are the target's, as its cache holds them (normed, roped)
        const tdm_tensor h = tdm_rms_norm(&b, x, L.attn_norm, 0, eps, "attn_norm");
        tdm_tensor q = tdm_reshape(&b, tdm_matmul(&b, L.wq, h, "q"), D, hp.n_head, n, 1);
        q = rope(&b, *a, sliding, tdm_rms_norm(&b, q, L.q_norm, 0, eps, "q_norm"), pos, "q_rope");
        const tdm_tensor kv = tdm_target_kv(&b, a->target_kv[sliding]);
        const tdm_tensor o = tdm_attention(&b, q, kv, 1.0f, sliding ? int32_t(hp.window) : 0, 0.0f, "attn");
        x = tdm_add(&b, x, tdm_rms_norm(&b, tdm_matmul(&b, L.wo, o, "attn_out"), L.post_attn_norm, 0, eps,
                                        "post_attn_norm"),
                    "attn_res");
        const tdm_tensor f = tdm_rms_norm(&b, x, L.ffn_norm, 0, eps, "ffn_norm");
        const tdm_tensor gu = tdm_glu_op(&b, TDM_GLU_GEGLU, tdm_matmul(&b, L.ffn_gate, f, "ffn_gate"),
                                         tdm_matmul(&b, L.ffn_up, f, "ffn_up"), "ffn_act");
        x = tdm_add(&b, x, tdm_rms_norm(&b, tdm_matmul(&b, L.ffn_down, gu, "ffn_down"), L.post_ffn_norm, 0, eps,
                                        "post_ffn_norm"),
                    "ffn_res");
        x = tdm_mul(&b, x, tdm_weight_tensor(&b, L.out_scale), "layer_out");
    }
    const tdm_tensor hn = tdm_rms_norm(&b, x, a->output_norm, 0, eps, "output_norm");
    // the hidden of the next step, in the target's width
    tdm_set_output(&b, TDM_OUTPUT_HIDDEN_DRAFT, tdm_matmul(&b, a->post_proj, hn, "post_projection"));
    if (hp.ordered) {
        tdm_set_output(&b, TDM_OUTPUT_DRAFT_TOKENS, masked_head_token(&b, *a, hn));
    } else {
        tdm_tensor logits = tdm_matmul(&b, a->tok_embd, hn, "logits");
        if (hp.softcap > 0) logits = tdm_unary_op(&b, TDM_UNARY_SOFTCAP, logits, hp.softcap, "logit_softcap");
        tdm_set_output(&b, TDM_OUTPUT_LOGITS, logits);
    }
    return tdm_builder_finish(&b, err, err_size);
}

}  // namespace gemma4
