/* SPDX-License-Identifier: MIT */
/* tandem/graph.h: typed inline helpers over tdm_host_api.graph_op.
 *
 * A tdm_builder carries the host table, the graph and the first error. Every
 * helper returns the result tensor, or tensor {0} once an error happened (later
 * helpers then do nothing), so a forward pass reads top to bottom and checks
 * the status once at the end:
 *
 *     tdm_builder b = tdm_builder_init(host, g);
 *     tdm_tensor x = tdm_get_rows(&b, m->tok_embd, tdm_input(&b, TDM_INPUT_TOKENS));
 *     ...
 *     return tdm_builder_finish(&b, err, err_size);
 *
 * Header-only, C99 and C++; part of the SDK, not of the binary ABI (it compiles
 * into the plugin). */
#ifndef TANDEM_GRAPH_H
#define TANDEM_GRAPH_H

#include <stdio.h>
#include <string.h>

#include "tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdm_builder {
    const tdm_host_api* host;
    tdm_graph* g;
    tdm_status status;
    char message[512];
} tdm_builder;

static inline tdm_builder tdm_builder_init(const tdm_host_api* host, tdm_graph* g) {
    tdm_builder b;
    b.host = host;
    b.g = g;
    b.status = TDM_OK;
    b.message[0] = '\0';
    return b;
}

static inline int tdm_ok(const tdm_builder* b) { return b->status == TDM_OK; }

/* Records the first failure (with the host's message) and returns tensor {0}. */
static inline tdm_tensor tdm_fail_(tdm_builder* b, tdm_status st, const char* what) {
    if (b->status == TDM_OK) {
        b->status = st;
        snprintf(b->message, sizeof b->message, "%s: %s", what, b->host->last_error());
    }
    tdm_tensor none = {0};
    return none;
}

/* Copies the builder's status and message into a callback's err buffer. */
static inline tdm_status tdm_builder_finish(const tdm_builder* b, char* err, size_t err_size) {
    if (b->status != TDM_OK && err && err_size) {
        /* memcpy, not strncpy: GCC's -Wstringop-truncation flags the intended
         * truncation when err_size is known at compile time. */
        size_t n = strlen(b->message);
        if (n > err_size - 1) n = err_size - 1;
        memcpy(err, b->message, n);
        err[n] = '\0';
    }
    return b->status;
}

/* tdm_emit's body, with tdm_op_desc.custom ([v2]: TDM_OP_CUSTOM only, else NULL). */
static inline tdm_tensor tdm_emit_desc_(tdm_builder* b, tdm_op op, const tdm_custom_op* custom, const tdm_tensor* in,
                                        uint32_t n_in, const int32_t* ip, uint32_t n_i, const float* fp, uint32_t n_f,
                                        const char* name) {
    tdm_tensor none = {0};
    if (b->status != TDM_OK) return none;
    tdm_op_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.op = (uint32_t)op;
    d.custom = custom;
    d.n_inputs = n_in;
    for (uint32_t k = 0; k < n_in && k < 8; ++k) {
        if (in[k].id == 0) return tdm_fail_(b, TDM_ERR_INVALID_ARGUMENT, "missing input tensor");
        d.inputs[k] = in[k];
    }
    for (uint32_t k = 0; k < n_i && k < 16; ++k) d.i[k] = ip[k];
    for (uint32_t k = 0; k < n_f && k < 8; ++k) d.f[k] = fp[k];
    d.name = name;
    tdm_tensor out = {0};
    tdm_status st = b->host->graph_op(b->g, &d, &out);
    if (st != TDM_OK) return tdm_fail_(b, st, name ? name : "graph op");
    return out;
}

/* The generic op (tdm_emit): up to 8 inputs, integer and float params (see ops.h). */
static inline tdm_tensor tdm_emit(tdm_builder* b, tdm_op op, const tdm_tensor* in, uint32_t n_in, const int32_t* ip,
                                uint32_t n_i, const float* fp, uint32_t n_f, const char* name) {
    return tdm_emit_desc_(b, op, NULL, in, n_in, ip, n_i, fp, n_f, name);
}

static inline tdm_tensor tdm_input(tdm_builder* b, tdm_graph_input which) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    tdm_status st = b->host->graph_input(b->g, which, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, "graph input");
}

static inline tdm_tensor tdm_weight_tensor(tdm_builder* b, const tdm_weight* w) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    if (!w) return tdm_fail_(b, TDM_ERR_INVALID_ARGUMENT, "null weight");
    tdm_status st = b->host->graph_weight(b->g, w, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, "graph weight");
}

static inline tdm_tensor tdm_kv(tdm_builder* b, uint32_t layer) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    tdm_status st = b->host->graph_kv(b->g, layer, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, "kv layer");
}

static inline tdm_tensor tdm_target_kv(tdm_builder* b, uint32_t layer) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    tdm_status st = b->host->graph_target_kv(b->g, layer, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, "target kv layer");
}

static inline void tdm_set_output(tdm_builder* b, tdm_graph_output which, tdm_tensor t) {
    if (b->status != TDM_OK) return;
    tdm_status st = b->host->graph_set_output(b->g, which, t);
    if (st != TDM_OK) tdm_fail_(b, st, "graph output");
}

/* ---- typed helpers, one per op (ops.h documents shapes and params) ---- */

static inline tdm_tensor tdm_get_rows(tdm_builder* b, const tdm_weight* table, tdm_tensor ids) {
    tdm_tensor in[2] = {tdm_weight_tensor(b, table), ids};
    return tdm_emit(b, TDM_OP_GET_ROWS, in, 2, NULL, 0, NULL, 0, "get_rows");
}

/* y = x W^T; W is a weight. */
static inline tdm_tensor tdm_matmul(tdm_builder* b, const tdm_weight* w, tdm_tensor x, const char* name) {
    tdm_tensor in[2] = {tdm_weight_tensor(b, w), x};
    return tdm_emit(b, TDM_OP_MATMUL, in, 2, NULL, 0, NULL, 0, name);
}

/* y = x W^T + add (the residual add fused into the matmul). */
static inline tdm_tensor tdm_matmul_add(tdm_builder* b, const tdm_weight* w, tdm_tensor x, tdm_tensor add,
                                        const char* name) {
    tdm_tensor in[3] = {tdm_weight_tensor(b, w), x, add};
    return tdm_emit(b, TDM_OP_MATMUL, in, 3, NULL, 0, NULL, 0, name);
}

static inline tdm_tensor tdm_add(tdm_builder* b, tdm_tensor a, tdm_tensor c, const char* name) {
    tdm_tensor in[2] = {a, c};
    return tdm_emit(b, TDM_OP_ADD, in, 2, NULL, 0, NULL, 0, name);
}

static inline tdm_tensor tdm_mul(tdm_builder* b, tdm_tensor a, tdm_tensor c, const char* name) {
    tdm_tensor in[2] = {a, c};
    return tdm_emit(b, TDM_OP_MUL, in, 2, NULL, 0, NULL, 0, name);
}

static inline tdm_tensor tdm_scale(tdm_builder* b, tdm_tensor a, float s, const char* name) {
    return tdm_emit(b, TDM_OP_SCALE, &a, 1, NULL, 0, &s, 1, name);
}

static inline tdm_tensor tdm_unary_op(tdm_builder* b, tdm_unary kind, tdm_tensor a, float param, const char* name) {
    int32_t k = (int32_t)kind;
    return tdm_emit(b, TDM_OP_UNARY, &a, 1, &k, 1, &param, 1, name);
}

static inline tdm_tensor tdm_glu_op(tdm_builder* b, tdm_glu kind, tdm_tensor gate, tdm_tensor up, const char* name) {
    tdm_tensor in[2] = {gate, up};
    int32_t k = (int32_t)kind;
    return tdm_emit(b, TDM_OP_GLU, in, 2, &k, 1, NULL, 0, name);
}

/* RMSNorm over ne[0]; w may be NULL (no weight). plus_one: x_hat * (1 + w). */
static inline tdm_tensor tdm_rms_norm(tdm_builder* b, tdm_tensor x, const tdm_weight* w, int plus_one, float eps,
                                      const char* name) {
    int32_t mode = w ? (plus_one ? TDM_NORM_WEIGHT_PLUS_ONE : TDM_NORM_WEIGHT) : TDM_NORM_NO_WEIGHT;
    tdm_tensor in[2] = {x, {0}};
    if (w) in[1] = tdm_weight_tensor(b, w);
    return tdm_emit(b, TDM_OP_RMS_NORM, in, w ? 2 : 1, &mode, 1, &eps, 1, name);
}

static inline tdm_tensor tdm_l2_norm(tdm_builder* b, tdm_tensor x, float eps, const char* name) {
    return tdm_emit(b, TDM_OP_L2_NORM, &x, 1, NULL, 0, &eps, 1, name);
}

static inline tdm_tensor tdm_gated_rms_norm(tdm_builder* b, tdm_tensor x, const tdm_weight* w, tdm_tensor z, float eps,
                                            const char* name) {
    tdm_tensor in[3] = {x, tdm_weight_tensor(b, w), z};
    return tdm_emit(b, TDM_OP_GATED_RMS_NORM, in, 3, NULL, 0, &eps, 1, name);
}

/* [v3.1, ask query_op] s = a + b, returned (the new residual), and *normed =
 * rms_norm(s) * w (w NULL: no weight; plus_one: * (1 + w)), as tdm_add then
 * tdm_rms_norm would give them, bit for bit, in one op. */
static inline tdm_tensor tdm_add_rms_norm(tdm_builder* b, tdm_tensor a, tdm_tensor x, const tdm_weight* w,
                                          int plus_one, float eps, tdm_tensor* normed, const char* name) {
    int32_t mode = w ? (plus_one ? TDM_NORM_WEIGHT_PLUS_ONE : TDM_NORM_WEIGHT) : TDM_NORM_NO_WEIGHT;
    tdm_tensor in[3] = {a, x, {0}};
    if (w) in[2] = tdm_weight_tensor(b, w);
    tdm_tensor sum = tdm_emit(b, TDM_OP_ADD_RMS_NORM, in, w ? 3 : 2, &mode, 1, &eps, 1, name);
    if (normed) {
        normed->id = 0;
        if (b->status == TDM_OK && b->host->graph_op_output(b->g, sum, 1, normed) != TDM_OK)
            tdm_fail_(b, TDM_ERR_INTERNAL, "add_rms_norm norm");
    }
    return sum;
}

/* [v3, ask query_op] LayerNorm per row: (x - mean) / sd * w + b. w and b may be
 * NULL (1 and 0); b needs w (a bias without a weight is refused when the op is built). */
static inline tdm_tensor tdm_layer_norm(tdm_builder* b, tdm_tensor x, const tdm_weight* w, const tdm_weight* bias,
                                        float eps, const char* name) {
    tdm_tensor in[3] = {x, {0}, {0}};
    if (w) in[1] = tdm_weight_tensor(b, w);
    if (bias) in[2] = tdm_weight_tensor(b, bias);
    return tdm_emit(b, TDM_OP_LAYER_NORM, in, bias ? 3 : w ? 2 : 1, NULL, 0, &eps, 1, name);
}

/* RoPE on x [head_dim, n_heads, n_tokens]. ff: optional frequency divisors (NULL). */
static inline tdm_tensor tdm_rope(tdm_builder* b, tdm_tensor x, tdm_tensor pos, const tdm_weight* ff, tdm_rope_mode mode,
                                  int32_t n_rot, float theta, float freq_scale, const char* name) {
    tdm_tensor in[3] = {x, pos, {0}};
    if (ff) in[2] = tdm_weight_tensor(b, ff);
    int32_t ip[2] = {(int32_t)mode, n_rot};
    float fp[2] = {theta, freq_scale};
    return tdm_emit(b, TDM_OP_ROPE, in, ff ? 3 : 2, ip, 2, fp, 2, name);
}

/* [v3] RoPE whose first n_freq frequency slots rotate and the others keep angle 0
 * (pairs and exponents those of n_rot): Gemma 4's "proportional" RoPE. ff may be
 * NULL. Needs an ABI 3 host (query_op with i[6] set). */
static inline tdm_tensor tdm_rope_partial_freq(tdm_builder* b, tdm_tensor x, tdm_tensor pos, const tdm_weight* ff,
                                               tdm_rope_mode mode, int32_t n_rot, int32_t n_freq, float theta,
                                               const char* name) {
    tdm_tensor in[3] = {x, pos, {0}};
    if (ff) in[2] = tdm_weight_tensor(b, ff);
    int32_t ip[7] = {(int32_t)mode, n_rot, 0, 0, 0, 0, n_freq};
    float fp[2] = {theta, 0.0f};
    return tdm_emit(b, TDM_OP_ROPE, in, ff ? 3 : 2, ip, 7, fp, 2, name);
}

/* M-RoPE: pos is TDM_INPUT_POSITIONS_4; sections in frequency slots. */
static inline tdm_tensor tdm_rope_multi(tdm_builder* b, tdm_tensor x, tdm_tensor pos4, tdm_rope_mode mode, int32_t n_rot,
                                        tdm_rope_sections kind, const int32_t sections[3], float theta,
                                        const char* name) {
    tdm_tensor in[2] = {x, pos4};
    int32_t ip[6] = {(int32_t)mode, n_rot, (int32_t)kind, sections[0], sections[1], sections[2]};
    float fp[2] = {theta, 0.0f};
    return tdm_emit(b, TDM_OP_ROPE, in, 2, ip, 6, fp, 2, name);
}

static inline tdm_tensor tdm_softmax(tdm_builder* b, tdm_tensor x, float scale, const char* name) {
    return tdm_emit(b, TDM_OP_SOFTMAX, &x, 1, NULL, 0, &scale, 1, name);
}

/* [v3, ask query_op] Attention of q [dk, n_head, n] over k [dk, n_kv_head, m] and
 * v [dv, n_kv_head, m] with no causal mask; ranges (I32 [2, n]: a (begin, end) pair per
 * query, or {0} for none) limits each query to its keys [begin, end). scale 0 = 1/sqrt(dk). */
static inline tdm_tensor tdm_attention_full(tdm_builder* b, tdm_tensor q, tdm_tensor k, tdm_tensor v,
                                            tdm_tensor ranges, float scale, const char* name) {
    tdm_tensor in[4] = {q, k, v, ranges};
    return tdm_emit(b, TDM_OP_ATTENTION_FULL, in, ranges.id ? 4 : 3, NULL, 0, &scale, 1, name);
}

/* Stores k [dk, n_kv_head, n] and v into KV layer kv; returns the updated layer. */
static inline tdm_tensor tdm_kv_store(tdm_builder* b, tdm_tensor kv, tdm_tensor k, tdm_tensor v, const char* name) {
    tdm_tensor in[3] = {kv, k, v};
    return tdm_emit(b, TDM_OP_KV_STORE, in, 3, NULL, 0, NULL, 0, name);
}

/* Causal attention of q [dk, n_head, n] over kv. scale 0 = 1/sqrt(dk); window
 * 0 = full; softcap 0 = none. Result [dv * n_head, n]. */
static inline tdm_tensor tdm_attention(tdm_builder* b, tdm_tensor q, tdm_tensor kv, float scale, int32_t window,
                                       float softcap, const char* name) {
    tdm_tensor in[2] = {q, kv};
    float fp[2] = {scale, softcap};
    return tdm_emit(b, TDM_OP_ATTENTION, in, 2, &window, 1, fp, 2, name);
}

static inline tdm_tensor tdm_concat(tdm_builder* b, tdm_tensor a, tdm_tensor c, const char* name) {
    tdm_tensor in[2] = {a, c};
    return tdm_emit(b, TDM_OP_CONCAT, in, 2, NULL, 0, NULL, 0, name);
}

static inline tdm_tensor tdm_copy(tdm_builder* b, tdm_tensor a, const char* name) {
    return tdm_emit(b, TDM_OP_COPY, &a, 1, NULL, 0, NULL, 0, name);
}

static inline tdm_tensor tdm_view_cols(tdm_builder* b, tdm_tensor a, int32_t first, int32_t count, const char* name) {
    int32_t ip[2] = {first, count};
    return tdm_emit(b, TDM_OP_VIEW_COLS, &a, 1, ip, 2, NULL, 0, name);
}

static inline tdm_tensor tdm_reshape(tdm_builder* b, tdm_tensor a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    int32_t ip[4] = {(int32_t)ne0, (int32_t)ne1, (int32_t)ne2, (int32_t)ne3};
    return tdm_emit(b, TDM_OP_RESHAPE, &a, 1, ip, 4, NULL, 0, NULL);
}

static inline tdm_tensor tdm_select_rows(tdm_builder* b, tdm_tensor x, tdm_tensor ids, const char* name) {
    tdm_tensor in[2] = {x, ids};
    return tdm_emit(b, TDM_OP_SELECT_ROWS, in, 2, NULL, 0, NULL, 0, name);
}

static inline tdm_tensor tdm_argmax(tdm_builder* b, tdm_tensor x, const char* name) {
    return tdm_emit(b, TDM_OP_ARGMAX, &x, 1, NULL, 0, NULL, 0, name);
}

/* The k largest entries of each row: indices (I32 [k, rows]) and, through
 * *values, their values (F32 [k, rows]). */
static inline tdm_tensor tdm_top_k(tdm_builder* b, tdm_tensor x, int32_t k, tdm_tensor* values, const char* name) {
    tdm_tensor ids = tdm_emit(b, TDM_OP_TOP_K, &x, 1, &k, 1, NULL, 0, name);
    if (values) {
        values->id = 0;
        if (b->status == TDM_OK && b->host->graph_op_output(b->g, ids, 1, values) != TDM_OK)
            tdm_fail_(b, TDM_ERR_INTERNAL, "top_k values");
    }
    return ids;
}

/* The first n_rows rows of a weight (no copy). */
static inline tdm_tensor tdm_weight_rows(tdm_builder* b, const tdm_weight* w, uint64_t n_rows) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    if (!w) return tdm_fail_(b, TDM_ERR_INVALID_ARGUMENT, "null weight");
    tdm_status st = b->host->graph_weight_rows(b->g, w, n_rows, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, "weight rows");
}

/* y = x W[0:n_rows]^T: a matmul over the first n_rows rows of W. */
static inline tdm_tensor tdm_matmul_rows(tdm_builder* b, const tdm_weight* w, uint64_t n_rows, tdm_tensor x,
                                         const char* name) {
    tdm_tensor in[2] = {tdm_weight_rows(b, w, n_rows), x};
    return tdm_emit(b, TDM_OP_MATMUL, in, 2, NULL, 0, NULL, 0, name);
}

/* The width of a draft head step's logits: the host's request for this step
 * (tdm_batch_desc.draft_vocab, from a host new enough to send one), else `own` (the
 * head's draft_vocab option). 0 = the whole vocabulary (also for a request of
 * n_vocab or more). Use with tdm_matmul_rows on the LM head. */
static inline uint32_t tdm_step_draft_vocab(const tdm_batch_desc* batch, uint32_t own, uint32_t n_vocab) {
    uint32_t n = own;
    if (TDM_HAS_MEMBER(batch, tdm_batch_desc, draft_vocab) && batch->draft_vocab) n = batch->draft_vocab;
    return n < n_vocab ? n : 0;
}

/* The recurrent state `index` (of those the model declared) of the batch's sequence. */
static inline tdm_tensor tdm_state(tdm_builder* b, uint32_t index) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    tdm_status st = b->host->graph_state(b->g, index, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, "recurrent state");
}

/* Causal depthwise conv1d of x [C, n] with taps w [K, C] over the state; silu: 0/1. */
static inline tdm_tensor tdm_conv1d_causal(tdm_builder* b, tdm_tensor x, const tdm_weight* w, tdm_tensor state, int silu,
                                           const char* name) {
    tdm_tensor in[3] = {x, tdm_weight_tensor(b, w), state};
    int32_t ip[1] = {silu ? 1 : 0};
    return tdm_emit(b, TDM_OP_CONV1D_CAUSAL, in, 3, ip, 1, NULL, 0, name);
}

/* The gated delta rule over qkv [2*nk*dk + nv*dv, n], g and beta [nv, n]; chunk
 * 0 = the recurrent (batch-invariant) form. Result [dv, nv, n]. */
static inline tdm_tensor tdm_gated_delta_rule(tdm_builder* b, tdm_tensor qkv, tdm_tensor g, tdm_tensor beta,
                                              tdm_tensor state, int32_t nk, int32_t nv, int32_t dk, int32_t dv,
                                              tdm_head_map map, int32_t chunk, const char* name) {
    tdm_tensor in[4] = {qkv, g, beta, state};
    int32_t ip[6] = {nk, nv, dk, dv, (int32_t)map, chunk};
    return tdm_emit(b, TDM_OP_GATED_DELTA_RULE, in, 4, ip, 6, NULL, 0, name);
}

/* Expert matmul: W [K, M, E], x [K, n] or [K, n_used, n], ids I32 [n_used, n]. */
static inline tdm_tensor tdm_matmul_id(tdm_builder* b, const tdm_weight* w, tdm_tensor x, tdm_tensor ids,
                                       const char* name) {
    tdm_tensor in[3] = {tdm_weight_tensor(b, w), x, ids};
    return tdm_emit(b, TDM_OP_MATMUL_ID, in, 3, NULL, 0, NULL, 0, name);
}

/* Weighted sum over the expert slots: y [M, n_used, n], w [n_used, n] -> [M, n]. */
static inline tdm_tensor tdm_moe_sum(tdm_builder* b, tdm_tensor y, tdm_tensor w, const char* name) {
    tdm_tensor in[2] = {y, w};
    return tdm_emit(b, TDM_OP_MOE_SUM, in, 2, NULL, 0, NULL, 0, name);
}

/* [v3] The same with each slot's weight times scale[ids] (scale: a weight [n_expert]). */
static inline tdm_tensor tdm_moe_sum_scaled(tdm_builder* b, tdm_tensor y, tdm_tensor w, tdm_tensor ids,
                                            const tdm_weight* scale, const char* name) {
    tdm_tensor in[4] = {y, w, ids, tdm_weight_tensor(b, scale)};
    return tdm_emit(b, TDM_OP_MOE_SUM, in, 4, NULL, 0, NULL, 0, name);
}

/* [v2] A plugin's SPIR-V op (tandem/ext/custom_op.h; needs an ABI 2 host):
 * `op` from the extension's create, its n (1..4) inputs, and the n_i ints and
 * n_f floats it declared (n_int_params, n_float_params). */
static inline tdm_tensor tdm_custom(tdm_builder* b, const tdm_custom_op* op, const tdm_tensor* in, uint32_t n,
                                    const int32_t* ip, uint32_t n_i, const float* fp, uint32_t n_f, const char* name) {
    if (b->status == TDM_OK && !op) return tdm_fail_(b, TDM_ERR_INVALID_ARGUMENT, "null custom op");
    return tdm_emit_desc_(b, TDM_OP_CUSTOM, op, in, n, ip, n_i, fp, n_f, name);
}

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_GRAPH_H */
