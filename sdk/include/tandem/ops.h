/* SPDX-License-Identifier: MIT */
/* tandem/ops.h: the host operations a plugin builds compute graphs from.
 *
 * Graphs are built through one generic entry point, tdm_host_api.graph_op(),
 * taking a tdm_op_desc; the inline helpers in tandem/graph.h wrap it with typed
 * signatures. Every op below documents its inputs, integer params (i[]), float
 * params (f[]) and output. Unused params must be zero; a zero always means the
 * documented default, so params appended in later ABI versions keep old plugins
 * working. Op codes are never renumbered.
 *
 * Shapes use ggml order: ne[0] is the innermost (contiguous) dimension. Activations
 * are F32 unless stated. "rows" of a tensor = ne[1] * ne[2] * ne[3].
 *
 * Host limits (tdm_host_api.get_limits() returns them; a graph over one is
 * refused with TDM_ERR_LIMIT, so check them in init, not at the first pass):
 *   - at most 8 inputs per op;
 *   - MATMUL / GET_ROWS / MATMUL_ID weights: rows whose byte size is a multiple
 *     of 16 (F32 ne0 % 4, F16/BF16 ne0 % 8, quantized: whole blocks);
 *   - MATMUL / MATMUL_ID activations: offset and row stride multiples of 4
 *     elements (copy a view first);
 *   - GET_ROWS: row width a multiple of 4;
 *   - ATTENTION: at most 16 query heads per KV head;
 *   - TOP_K: k <= 256; GATED_DELTA_RULE: dk and dv multiples of 4 up to 256,
 *     chunk <= 64;
 *   - CUSTOM: at most 65535 output rows, push constants of at most 128 bytes
 *     (tandem/ext/custom_op.h);
 *   - batch invariance is guaranteed for 1..16 rows (verify widths).
 * Other refusals (tandem.h §2): an unknown op code or an unknown value of an
 * enum parameter (tdm_unary, tdm_glu, tdm_norm_weight, tdm_rope_mode, ...), or a
 * parameter out of its documented range -> TDM_ERR_UNSUPPORTED; a wrong input
 * count -> TDM_ERR_INVALID_ARGUMENT; shapes -> TDM_ERR_SHAPE; an input of the
 * wrong element type or kind (an activation where a weight is needed, a weight
 * where an activation is) -> TDM_ERR_TYPE.
 * Whether an op and its parameters are implemented: tdm_host_api.query_op().
 * Op codes 1..27 are ABI 1; TDM_OP_CUSTOM is ABI 2. Ops, parameters and values
 * marked [v3] need an ABI 3 host, [v3.1] an ABI 3.1 host and a plugin built
 * against 3.1 or later (tandem.h §1): ask query_op, which an older host answers
 * with TDM_ERR_UNSUPPORTED.
 * Every op code, its name and the version that added it are also listed in
 * tandem/op_list.h (TDM_OP_LIST), which this header includes. */
#ifndef TANDEM_OPS_H
#define TANDEM_OPS_H

#include "op_list.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tdm_op {
    TDM_OP_NONE = 0,
    /* in: weight W [ne0 = n_embd, rows = n_vocab], ids I32 [n]. out: [n_embd, n].
     * Limits: ne0 a multiple of 4, rows of 16-byte multiples. i[0] [v3] = row
     * width (0 = ne0): an F32 weight's elements read as rows of i[0] (a multiple
     * of 4 dividing them), e.g. a [V] token table as [V / C, C] clusters. */
    TDM_OP_GET_ROWS = 1,
    /* in: weight W [ne0 = K, rows = M], x [K, n] (+ optional add [M, n]).
     * out: y [M, n] = x W^T (+ add). Results for each row of x are bit-identical
     * whatever n is (1..16): the basis of exact speculative decoding.
     * Limits: W rows of 16-byte multiples; x offset and row stride multiples of 4. */
    TDM_OP_MATMUL = 2,
    /* in: a, b (b has a's shape; or one row, broadcast over a's rows; or one
     * column [1, rows of a], broadcast over a's columns; or [v3] one element,
     * e.g. a [1] weight such as a learned layer scalar, broadcast over all of
     * a). b may be an F32 weight. out: a's shape. */
    TDM_OP_ADD = 3,
    TDM_OP_MUL = 4,
    TDM_OP_SUB = 5,
    /* in: a. f[0] = s. out: a * s. */
    TDM_OP_SCALE = 6,
    /* in: a. i[0] = tdm_unary. f[0] = the unary's parameter (softcap c > 0, scalar). */
    TDM_OP_UNARY = 7,
    /* in: gate, up (same shape). i[0] = tdm_glu. out: act(gate) * up. */
    TDM_OP_GLU = 8,
    /* in: x [, w (ne0 = x.ne0, F32 weight)]. i[0] = tdm_norm_weight. f[0] = eps.
     * out: x * rsqrt(mean(x^2) + eps) * W per row of ne0 elements. */
    TDM_OP_RMS_NORM = 9,
    /* in: x. f[0] = eps. out: x * rsqrt(sum(x^2) + eps) per row. */
    TDM_OP_L2_NORM = 10,
    /* in: x, w (F32 [ne0]), z (x's shape). f[0] = eps. out: w * rms(x) * silu(z) per row. */
    TDM_OP_GATED_RMS_NORM = 11,
    /* in: x [head_dim, n_heads, n_tokens], pos I32 [n_tokens] (or [4, n_tokens] with
     * sections) [, ff F32 [n_rot/2] frequency divisors]. i[0] = tdm_rope_mode,
     * i[1] = n_rot (0 = head_dim), i[2] = tdm_rope_sections, i[3..5] = sections,
     * i[6] [v3] = rotated frequency slots (0 = all n_rot/2): slots at or past it
     * keep angle 0, so their pairs pass through unrotated while the pairing and
     * the exponent 2i/n_rot stay those of the whole n_rot ("proportional" RoPE,
     * Gemma 4's full layers: n_rot = head_dim 512, 64 slots rotated).
     * f[0] = theta, f[1] = freq_scale (0 = 1). out: x's shape. */
    TDM_OP_ROPE = 12,
    /* in: x. f[0] = scale (0 = 1). out: softmax(x * scale) per row. */
    TDM_OP_SOFTMAX = 13,
    /* in: kv (a KV layer), k [dk, n_kv_head, n], v [dv, n_kv_head, n]. Stores each
     * token's K/V at its (sequence, position) of the batch. out: kv (the updated
     * layer; pass it to attention so the order is explicit). */
    TDM_OP_KV_STORE = 14,
    /* in: q [dk, n_head, n], kv. i[0] = sliding window (0 = none). f[0] = scale
     * (0 = 1/sqrt(dk)), f[1] = logit softcap (0 = none). Causal over the batch
     * token's sequence. out: [dv * n_head, n]. Limit: n_head / n_kv_head <= 16. */
    TDM_OP_ATTENTION = 15,
    /* in: a, b (same rows). out: [a.ne0 + b.ne0, rows]. */
    TDM_OP_CONCAT = 16,
    /* in: a (any view). out: a contiguous copy. */
    TDM_OP_COPY = 17,
    /* in: a. i[0] = tdm_dtype (F32, F16, BF16; others TDM_ERR_UNSUPPORTED): rounds
     * through that type. out: F32. [v3] i[0] = TDM_DTYPE_I32: out I32, each value
     * rounded to the nearest integer (token ids held as exact f32). */
    TDM_OP_CAST = 18,
    /* in: x. out: I32 [rows], index of each row's maximum (lowest index on ties). */
    TDM_OP_ARGMAX = 19,
    /* in: x. i[0] = k (1..256). out: I32 [k, rows], indices of the k largest,
     * descending (ties: lower index first). tdm_graph_output(.., 1) gives the
     * values, F32 [k, rows]. Limit: k <= 256 (and k <= ne0: TDM_ERR_SHAPE). */
    TDM_OP_TOP_K = 20,
    /* in: a. i[0] = first column, i[1] = number of columns. out: a view of those
     * columns of every row (no copy). */
    TDM_OP_VIEW_COLS = 21,
    /* in: a (contiguous). i[0..3] = new ne (same element count). out: a view. */
    TDM_OP_RESHAPE = 22,
    /* in: x [ne0, rows], ids I32 [m]. out: [ne0, m], rows of x picked by ids. */
    TDM_OP_SELECT_ROWS = 23,
    /* Causal depthwise 1-D convolution over time with a recurrent state (Gated
     * DeltaNet, Mamba): in: x [C, n] (n tokens in order; rows of several
     * sequences come as consecutive runs, each run from its own sequence's state),
     * w (F32 weight [K, C]: K taps per channel, oldest first), state (a
     * recurrent state of C*(K-1) floats: the K-1 previous inputs, [K-1][C],
     * oldest first). i[0] = 1: apply SiLU to the output. out: [C, n]:
     * y[t][c] = sum_j w[c][j] * x_{t-K+1+j}[c], earlier inputs from the state.
     * The state after each token is checkpointed (see tdm_host_api.graph_state);
     * a token's output and states never depend on n. A checkpoint or sequence
     * outside the state's buffer reads as zeros and is never written (both ops). */
    TDM_OP_CONV1D_CAUSAL = 24,
    /* The gated delta rule (Gated DeltaNet core, docs/models/common.md §6): in:
     * qkv [2*Nk*dk + Nv*dv, n] (after conv and SiLU: q | k | v), g [Nv, n] (log
     * decay, <= 0), beta [Nv, n] (after sigmoid), state (Nv*dk*dv floats, [Nv][dk][dv],
     * f32). i[0] = Nk, i[1] = Nv, i[2] = dk, i[3] = dv, i[4] = tdm_head_map.
     * f[0] = l2-norm eps (0 = 1e-6), f[1] = q scale (0 = 1/sqrt(dk)). q and k are
     * l2-normalised per head inside the op. Per token and value head h (key head kh):
     *   S <- exp(g) S;  S <- S + k (x) beta (v - S^T k);  o = S^T (scale q)
     * out: [dv, Nv, n]. Tokens are processed in order; the state after each token
     * is checkpointed.
     * i[5] = chunk size C (0 = recurrent form, else 1..64): the chunked (WY / UT
     * transform) form of HF's torch_chunk_gated_delta_rule, for long prefill
     * batches on GPUs (on CPU devices such as lavapipe the recurrent form is
     * faster). It equals the recurrent form up to f32 rounding, not bit
     * for bit. A chunk also ends after every row that writes a checkpoint, so
     * every checkpoint written holds the exact state after its row (a batch that
     * checkpoints every row runs as chunks of one token: use the recurrent form).
     * The recurrent form is batch-invariant: one token's output and the states
     * written after it are bit-identical whatever n is, which exact speculative
     * verification and rollback by checkpoint rely on. */
    TDM_OP_GATED_DELTA_RULE = 25,
    /* Mixture-of-experts matmul: in: W (weight [K, M, E]: E experts), x [K, n] or
     * [K, n_used, n], ids I32 [n_used, n] (expert of each slot). out: [M, n_used, n]:
     * y[t][j] = W[ids[t][j]] x[t] (or x[t][j]). Same per-row reduction as MATMUL,
     * batch-invariant like it. An id outside [0, E) reads no weights and gives
     * a zero row. i[0] [v3] = rows per expert (0 = M): the weight's rows regrouped
     * as experts of i[0] rows; i[0] = 1 on a matrix [K, V] multiplies x by the rows
     * the ids name (a gather-matmul, e.g. an LM head over candidate tokens). */
    TDM_OP_MATMUL_ID = 26,
    /* in: y [M, n_used, n], w [n_used, n] [, ids I32 [n_used, n], scale F32
     * [n_expert] (weight or activation): [v3] both or neither]. out: [M, n] =
     * sum_j w[j][t] * y[t][j] (j in order); with the scale, each slot's weight
     * is w[j][t] * scale[ids[j][t]] first (an id outside [0, n_expert) weighs
     * 0): Gemma 4's per-expert scale. */
    TDM_OP_MOE_SUM = 27,
    /* [v2] A plugin's SPIR-V kernel (tandem/ext/custom_op.h): in: 1..4 F32 or
     * I32 activations (the op's n_inputs), each with input 0's rows;
     * tdm_op_desc.custom names the op (NULL: TDM_ERR_INVALID_ARGUMENT); i[] and
     * f[] are its parameters. out: as the op's descriptor says. Limit: at most
     * 65535 output rows. */
    TDM_OP_CUSTOM = 28,
    /* [v3] LayerNorm: in: x [, w (F32 [ne0]) [, b (F32 [ne0])]].
     * f[0] = eps. out: (x - mean(x)) * rsqrt(var(x) + eps) * w + b per row of ne0
     * elements (variance of the centred row, divided by ne0; no w: 1, no b: 0).
     * Vision towers (GLM-OCR's merger). */
    TDM_OP_LAYER_NORM = 29,
    /* [v3] Attention of every query over plain activations,
     * with no KV layer and no causal mask (vision encoders): in: q [dk, n_head, n],
     * k [dk, n_kv_head, m], v [dv, n_kv_head, m] [, ranges I32 [2, n]: per query t a
     * (begin, end) pair, elements 2t and 2t + 1; it sees keys [begin, end) (one image
     * among several in a batch); without it every query sees all m keys]. f[0] = scale
     * (0 = 1/sqrt(dk)). out: [dv * n_head, n]; a query with no keys gets zeros. Each
     * query's result depends only on its own keys: not on n, nor on where its range
     * starts. Limits: dk and dv multiples of 4, n_head / n_kv_head <= 16. */
    TDM_OP_ATTENTION_FULL = 30,
    /* [v3.1] A residual add and the RMSNorm of the sum, in one pass: in: a, b
     * (f32 activations of one shape) [, w (ne0 = a.ne0, F32 weight or
     * activation)]. i[0] = tdm_norm_weight, f[0] = eps. out: s = a + b (the new
     * residual); graph_op_output(.., 1): y = s * rsqrt(mean(s^2) + eps) * W per
     * row of ne0 elements. Both are bit-identical to TDM_OP_ADD followed by
     * TDM_OP_RMS_NORM of its result (pre-norm layers: h = x + f(x); norm(h)). */
    TDM_OP_ADD_RMS_NORM = 31,
    TDM_OP_COUNT_V1 = 28, /* number of ABI 1 ops (not an op) */
    TDM_OP_COUNT_V2 = 29, /* number of ABI 2 ops (not an op) */
    TDM_OP_COUNT_V3 = 31, /* op codes below this are ABI 3.0's (not an op); all of them: TDM_OP_LIST_END */
    TDM_OP_MAX_ENUM = 0x7FFFFFFF
} tdm_op;

typedef enum tdm_unary {
    TDM_UNARY_SILU = 0,
    TDM_UNARY_GELU_TANH = 1,
    TDM_UNARY_SIGMOID = 2,
    TDM_UNARY_SOFTPLUS = 3,
    TDM_UNARY_EXP = 4,
    TDM_UNARY_NEG = 5,
    TDM_UNARY_SOFTCAP = 6,   /* f[0] * tanh(x / f[0]) */
    TDM_UNARY_ADD_SCALAR = 7, /* x + f[0] */
    TDM_UNARY_GELU_ERF = 8,   /* [v3] 0.5 x (1 + erf(x / sqrt 2)), exact GELU */
    TDM_UNARY_MAX_ENUM = 0x7FFFFFFF
} tdm_unary;

typedef enum tdm_glu { TDM_GLU_SWIGLU = 0, TDM_GLU_GEGLU = 1, TDM_GLU_MAX_ENUM = 0x7FFFFFFF } tdm_glu;

/* Which key head a value head of the gated delta rule reads (r = Nv / Nk). */
typedef enum tdm_head_map {
    TDM_HEAD_MAP_TILED = 0,   /* value head h uses key head h % Nk (llama.cpp's GGUF order) */
    TDM_HEAD_MAP_GROUPED = 1, /* value head h uses key head h / r (HF order) */
    TDM_HEAD_MAP_MAX_ENUM = 0x7FFFFFFF
} tdm_head_map;

typedef enum tdm_norm_weight {
    TDM_NORM_NO_WEIGHT = 0,
    TDM_NORM_WEIGHT = 1,         /* x_hat * w */
    TDM_NORM_WEIGHT_PLUS_ONE = 2, /* x_hat * (1 + w) */
    TDM_NORM_WEIGHT_MAX_ENUM = 0x7FFFFFFF
} tdm_norm_weight;

typedef enum tdm_rope_mode {
    TDM_ROPE_NEOX = 0,    /* pairs (i, i + n_rot/2): HF rotate_half, llama.cpp NEOX */
    TDM_ROPE_ADJACENT = 1, /* pairs (2i, 2i+1): GPT-J, llama.cpp NORM */
    TDM_ROPE_MODE_MAX_ENUM = 0x7FFFFFFF
} tdm_rope_mode;

typedef enum tdm_rope_sections {
    TDM_ROPE_SECTIONS_NONE = 0,
    TDM_ROPE_SECTIONS_CONTIGUOUS = 1, /* M-RoPE: slots [0,s0) stream 0, then s1 stream 1, ... */
    TDM_ROPE_SECTIONS_INTERLEAVED = 2, /* IMROPE (Qwen3.5): slot i uses stream i % 3 within budget */
    TDM_ROPE_SECTIONS_MAX_ENUM = 0x7FFFFFFF
} tdm_rope_sections;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_OPS_H */
