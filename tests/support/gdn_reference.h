/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/gdn_reference.h: the Gated DeltaNet mixer of Qwen3.5 (docs/models/common.md §6) as
// plain loops with double accumulation, written from the spec's equations, used by the Qwen3.5
// reference forward pass (qwen35_reference.h). It takes the four input projections already
// computed (qkv, z, b, a) and returns the gated-normed head outputs that out_proj consumes:
//
//   per token t:  c = silu(causal depthwise conv1d over [conv state | qkv_t])
//                 q, k, v = split(c);  q = l2norm(q) / sqrt(dk);  k = l2norm(k)
//                 beta = sigmoid(b);   g = A * softplus(a + dt_bias)     (A = -exp(A_log) < 0)
//                 per value head h (key head kh(h)):
//                   S_h = exp(g_h) S_h;  S_h += k ⊗ beta_h (v_h - S_h^T k);  o_h = S_h^T q
//                 y_h = norm_w * rms(o_h) * silu(z_h)
//
// kh(h) depends on the file's value-head order: h / (Nv/Nk) for HF's grouped order, h % Nk for
// the tiled order llama.cpp's converter writes. The state S is kept in double (optionally
// rounded to f32 after every token, as a runtime stores it) and the conv state holds the last
// K-1 pre-conv qkv rows, so a sequence can be continued token by token with results identical to
// one call over the whole sequence.
// Not here: the projections and out_proj (the caller's matmuls), the chunked (WY) prefill form.
#pragma once

#include "support/reference.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tdm::ref {

enum class GdnHeadOrder {
    grouped,  // HF: value head h uses key head h / (Nv / Nk)
    tiled,    // GGUF (llama.cpp converter): value head h uses key head h % Nk
};

struct GdnDims {
    int64_t n_k_heads = 0;    // Nk
    int64_t n_v_heads = 0;    // Nv, a multiple of Nk
    int64_t d_k = 0;          // key/query head dim
    int64_t d_v = 0;          // value head dim
    int64_t conv_kernel = 4;  // K
    GdnHeadOrder order = GdnHeadOrder::grouped;
    float norm_eps = 1e-6f;   // gated RMSNorm eps (rms_norm_eps)
    float l2_eps = 1e-6f;     // l2norm eps (HF hard-codes 1e-6)
    bool f32_state = false;   // round S to f32 after every token

    int64_t key_dim() const { return n_k_heads * d_k; }
    int64_t value_dim() const { return n_v_heads * d_v; }
    int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }
    int64_t key_head(int64_t v_head) const {
        return order == GdnHeadOrder::grouped ? v_head / (n_v_heads / n_k_heads) : v_head % n_k_heads;
    }
};

// Per-layer weights that are not plain projections, all in the file's head order.
struct GdnWeights {
    Floats conv;     // [conv_dim][K]: channel c's taps, oldest input first
    Floats a;        // [Nv] A = -exp(A_log)
    Floats dt_bias;  // [Nv]
    Floats norm;     // [d_v] gated-norm weight (plain, no +1)
};

// Recurrent state of one layer for one sequence. Empty = start of sequence (zeros).
struct GdnState {
    Floats conv;            // [K-1][conv_dim] pre-conv qkv rows, oldest first
    std::vector<double> s;  // [Nv][d_k][d_v]
};

// Runs n tokens: qkv [n][conv_dim], z [n][value_dim], b and a [n][Nv] (pre-activation). Updates
// `state` (initialised if empty) and returns y [n][value_dim] for out_proj.
Floats gated_delta_net(std::span<const float> qkv, std::span<const float> z, std::span<const float> b,
                       std::span<const float> a, const GdnWeights& w, const GdnDims& d, GdnState& state);

}  // namespace tdm::ref
