/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/reference_recurrent.h: plain C++ references for the recurrent-state ops
// (causal conv1d, the gated delta rule) and the mixture-of-experts ops (matmul_id, moe_sum),
// written from sdk/include/tandem/ops.h and docs/models/common.md §5-6 (never from shader code).
// Every reduction accumulates in double, and the delta-rule state is carried in double across
// tokens; results are returned as f32. Same conventions as reference.h (row-major activations,
// GGUF-layout weight bytes, asserts on sizes that do not fit).
// Not here: checkpoint bookkeeping (the tests pick which per-token state to compare), the
// chunked form of the delta rule (it must equal this recurrent loop).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/dtype.h"
#include "support/reference.h"

namespace tdm::ref {

// ===== causal depthwise conv1d ==================================================================

struct Conv1dResult {
    Floats y;                   // [n][C]
    std::vector<Floats> state;  // state[t]: the K-1 inputs after row t, [K-1][C] oldest first
};

// x [n][C]; w [C][K] (K taps per channel, oldest first); state [K-1][C]: the inputs before
// x[0], oldest first. y[t][c] = sum_j w[c][j] * x_{t-K+1+j}[c], then SiLU if `silu`.
Conv1dResult conv1d_causal(std::span<const float> x, int64_t C, std::span<const float> w, int64_t K,
                           std::span<const float> state, bool silu);

// ===== gated delta rule =========================================================================

struct DeltaRuleParams {
    int64_t n_k_heads = 0, n_v_heads = 0, dk = 0, dv = 0;
    bool grouped = false;  // value head h reads key head h / (Nv / Nk); else h % Nk (tiled)
    double eps = 1e-6;     // l2-norm eps
    double scale = 0.0;    // q scale; 0 = 1 / sqrt(dk)
};

struct DeltaRuleResult {
    Floats out;                 // [n][Nv][dv]
    std::vector<Floats> state;  // state[t]: S after token t, [Nv][dk][dv]
};

// qkv [n][2*Nk*dk + Nv*dv] (q | k | v), g [n][Nv] (log decay), beta [n][Nv], state [Nv][dk][dv]
// before token 0. Per token and value head h with key head kh:
//   k^ = k / sqrt(|k|^2 + eps), q^ = scale q / sqrt(|q|^2 + eps)
//   S <- exp(g) S;  u = S^T k^;  S <- S + k^ (x) beta (v - u);  o = S^T q^
DeltaRuleResult gated_delta_rule(std::span<const float> qkv, std::span<const float> g, std::span<const float> beta,
                                 std::span<const float> state, const DeltaRuleParams& p);

// ===== mixture of experts =======================================================================

// w: a GGUF-layout [E][M][K] stack of type t (E * M rows of K). ids [n][n_used]; x [n][K] (shared
// by the slots) or [n][n_used][K] (one row per slot). y[t][j] = W[ids[t][j]] x[t] (or x[t][j]);
// an id outside [0, E) gives a zero row. Output [n][n_used][M].
Floats matmul_id(std::span<const float> x, DType t, std::span<const uint8_t> w, int64_t K, int64_t M, int64_t E,
                 std::span<const int32_t> ids, int64_t n_used);

// y [n][n_used][M], w [n][n_used]: out[t] = sum_j w[t][j] * y[t][j]. Output [n][M].
Floats moe_sum(std::span<const float> y, std::span<const float> w, int64_t M, int64_t n_used);

}  // namespace tdm::ref
