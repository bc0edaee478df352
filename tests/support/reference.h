/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/reference.h: plain C++ reference implementations of the runtime's ops, written
// from docs/models/common.md and docs/formats/quants.md (never from shader code), used to check the Vulkan
// kernels. Every reduction accumulates in double; results are returned as f32.
// Not here: anything fast, or any model's forward pass (those compose these ops in the tests).
//
// Conventions:
// * Activations are row-major float arrays [n_rows][n_cols]; n_rows is x.size() / n_cols.
// * Weights are raw bytes of a GGUF-layout matrix of type t: ne0 = cols = in_features,
//   ne1 = rows = out_features, each row cols / block_size blocks. They are decoded with
//   tdm::dequantize_row (host/common/quant.h), so quantized weights count at their exact value.
// * Sizes that do not fit are programmer errors: the functions assert.
// * Ops mirror sdk/include/tandem/ops.h, with defaults spelled out (attention takes its scale
//   explicitly). KV_STORE has no counterpart: attention takes K and V directly.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "common/dtype.h"

namespace tdm::ref {

using Floats = std::vector<float>;

// ===== lookup and matrix product ================================================================

// Embedding lookup: out[i][:] = row ids[i] of `table` (type t, n_cols per row, as many rows as
// table.size() / row_bytes(t, n_cols)). Output [ids.size()][n_cols]. Ids must be in range.
Floats get_rows(DType t, std::span<const uint8_t> table, int64_t n_cols,
                std::span<const int32_t> ids);

// y[n][rows] = x[n][cols] . W^T with W the [rows][cols] matrix of type t in `w`.
Floats matmul(std::span<const float> x, DType t, std::span<const uint8_t> w, int64_t rows,
              int64_t cols);

// Rows of the float matrix x [.][n_cols] picked by ids: [ids.size()][n_cols].
Floats select_rows(std::span<const float> x, int64_t n_cols, std::span<const int32_t> ids);

// ===== elementwise ==============================================================================

// a + b and a * b elementwise over [n_rows][n_cols]; b has either the same size as a or exactly
// one row (n_cols values), which is then broadcast to every row of a.
Floats add(std::span<const float> a, std::span<const float> b, int64_t n_cols);
Floats sub(std::span<const float> a, std::span<const float> b, int64_t n_cols);
Floats mul(std::span<const float> a, std::span<const float> b, int64_t n_cols);
// The same with b holding one value per row of a (n_rows values), broadcast over a's columns
// (a per-token scalar such as a gate).
Floats add_col(std::span<const float> a, std::span<const float> b, int64_t n_cols);
Floats sub_col(std::span<const float> a, std::span<const float> b, int64_t n_cols);
Floats mul_col(std::span<const float> a, std::span<const float> b, int64_t n_cols);
Floats scale(std::span<const float> x, float s);
Floats add_scalar(std::span<const float> x, float s);
Floats neg(std::span<const float> x);
Floats softcap(std::span<const float> x, float c);  // c * tanh(x / c)

Floats silu(std::span<const float> x);       // x * sigmoid(x)
Floats gelu_tanh(std::span<const float> x);  // 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
Floats gelu_erf(std::span<const float> x);   // 0.5x(1 + erf(x / sqrt 2))
Floats sigmoid(std::span<const float> x);    // 1 / (1 + exp(-x))
Floats softplus(std::span<const float> x);   // log(1 + exp(x)), without overflow for large x
Floats exp(std::span<const float> x);

Floats swiglu(std::span<const float> gate, std::span<const float> up);  // silu(gate) * up
Floats geglu(std::span<const float> gate, std::span<const float> up);   // gelu_tanh(gate) * up

// ===== norms ====================================================================================

enum class NormWeight {
    None,     // y = rms(x)                      (Gemma 4 v_norm)
    Plain,    // y = rms(x) * w                  (Gemma 4, GLM, GGUF Qwen3.5)
    OnePlus,  // y = rms(x) * (1 + w)            (Qwen3.5 HF checkpoints)
};

// rms(x) = x / sqrt(mean(x^2) + eps) per row; w has n_cols values (ignored for None).
Floats rms_norm(std::span<const float> x, int64_t n_cols, float eps,
                NormWeight mode = NormWeight::None, std::span<const float> w = {});

// y = x / sqrt(sum(x^2) + eps) per row (Qwen3.5 GDN q/k, eps 1e-6).
Floats l2_norm(std::span<const float> x, int64_t n_cols, float eps);

// LayerNorm per row: (x - mean) / sqrt(var + eps) * w + b (w, b empty: 1, 0); var is the
// mean of the centred squares.
Floats layer_norm(std::span<const float> x, int64_t n_cols, float eps, std::span<const float> w = {},
                  std::span<const float> b = {});

// Gated RMSNorm (Qwen3.5 GDN output): each row of o is split into groups of `group` columns;
// per group y = w * rms(o_group) * silu(z_group). w has `group` values (shared by all groups)
// or n_cols values (one per column).
Floats gated_rms_norm(std::span<const float> o, std::span<const float> z, int64_t n_cols,
                      int64_t group, std::span<const float> w, float eps);

// ===== RoPE =====================================================================================

enum class RopePairing {
    NeoX,      // dims i and i + n_rot/2 rotate together (GGML NEOX, HF rotate_half)
    Adjacent,  // dims 2i and 2i + 1 rotate together (GGML NORM, GPT-J, HF GLM rotate_half_llm)
};

enum class MRope {
    None,         // one position per token
    Contiguous,   // slot s takes stream t/h/w/e by contiguous sections (GGML MROPE, GLM)
    Interleaved,  // slot s takes stream s % 3 within budget (GGML IMROPE, Qwen3-VL/Qwen3.5)
};

struct RopeParams {
    int64_t n_rot = 0;        // rotated dims R (even, <= head_dim); dims [R, head_dim) pass through
    double theta = 10000.0;   // base: inv_freq[i] = theta^(-2i/R), i in [0, R/2)
    RopePairing pairing = RopePairing::NeoX;
    double freq_scale = 1.0;  // linear position scaling: angle *= freq_scale
    // Empty, or R/2 divisors (GGUF rope_freqs): angle_i = p * inv_freq[i] / freq_factors[i].
    std::span<const float> freq_factors;
    MRope mrope = MRope::None;
    // M-RoPE sections in frequency slots (t, h, w, e), as GGUF rope.dimension_sections. Slot i
    // uses sector i % sum(sections), as ggml does.
    std::array<int, 4> sections = {0, 0, 0, 0};
    // Rotated frequency slots (0 = all R/2): slots at or past it keep angle 0, their pairs
    // pass through (Gemma 4's "proportional" RoPE).
    int64_t n_freq = 0;
};

// x is [n_tokens][n_head][head_dim]. pos has n_tokens entries for MRope::None; for M-RoPE it
// holds 3 or 4 streams per token, token-major as in the ROPE op's [4, n_tokens] (ggml order):
// pos[i * n_streams + s] is stream s (t, h, w, then e) of token i. (ggml's own rope takes them
// stream-major; only the layout differs.) A slot that selects stream 3 needs 4 streams.
// Rotation of the pair (a, b) by angle: a' = a cos - b sin, b' = b cos + a sin.
Floats rope(std::span<const float> x, int64_t n_tokens, int64_t n_head, int64_t head_dim,
            std::span<const int32_t> pos, const RopeParams& p);

// ===== softmax and attention ====================================================================

// Row softmax of scale * x.
Floats softmax(std::span<const float> x, int64_t n_cols, float scale = 1.0f);

struct AttnParams {
    int64_t n_head = 0;
    int64_t n_head_kv = 0;   // GQA: query head h uses kv head h / (n_head / n_head_kv)
    int64_t head_dim = 0;    // of q and k
    int64_t head_dim_v = 0;  // of v and of the output
    float scale = 1.0f;      // logit = scale * (q . k)
    float softcap = 0.0f;    // c > 0: logit = c * tanh(logit / c), applied after scale
    int64_t window = 0;      // > 0: key at position k is visible to query at p iff p - k < window
};

// q [n_q][n_head][head_dim] with one position per query row (q_pos, n_q entries);
// k [kv_len][n_head_kv][head_dim], v [kv_len][n_head_kv][head_dim_v]; k_pos gives the position
// of each key (empty: key j is at position j). Causal: a query at p sees keys with k <= p (and
// inside the window). Output [n_q][n_head][head_dim_v]; a query that sees no key gets zeros.
Floats attention(std::span<const float> q, std::span<const int32_t> q_pos,
                 std::span<const float> k, std::span<const float> v,
                 std::span<const int32_t> k_pos, const AttnParams& p);

// ===== layout and casts =========================================================================

// [n_rows][a_cols] ++ [n_rows][b_cols] -> [n_rows][a_cols + b_cols].
Floats concat(std::span<const float> a, int64_t a_cols, std::span<const float> b, int64_t b_cols);
Floats copy(std::span<const float> x);
// Columns [first, first + count) of every row of x [.][n_cols] (the VIEW_COLS op, copied).
Floats view_cols(std::span<const float> x, int64_t n_cols, int64_t first, int64_t count);

// f32 <-> f16/bf16 with ggml rounding (nearest even; bf16 NaNs forced quiet), via fp16.h.
std::vector<uint16_t> to_f16(std::span<const float> x);
Floats from_f16(std::span<const uint16_t> h);
std::vector<uint16_t> to_bf16(std::span<const float> x);
Floats from_bf16(std::span<const uint16_t> h);
// The CAST op: x rounded through t (F32, F16 or BF16) and back to f32.
Floats cast_round(std::span<const float> x, DType t);

// ===== selection ================================================================================

// Per row: the first index of the maximum.
std::vector<int32_t> argmax(std::span<const float> x, int64_t n_cols);

// Per row: indices of the k largest values, largest first; equal values by lower index first.
// Output [n_rows][k].
std::vector<int32_t> top_k(std::span<const float> x, int64_t n_cols, int64_t k);

// ===== comparison helpers =======================================================================

// Normalized mean squared error sum((a - b)^2) / sum(b^2) (b = reference), as in llama.cpp's
// test-backend-ops; 0 when both are all zero.
double nmse(std::span<const float> a, std::span<const float> b);
double max_abs_diff(std::span<const float> a, std::span<const float> b);

}  // namespace tdm::ref
