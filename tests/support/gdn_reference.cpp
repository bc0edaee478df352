// SPDX-License-Identifier: Apache-2.0
// tests/support/gdn_reference.cpp: the Gated DeltaNet recurrence (see gdn_reference.h), one
// token at a time in the recurrent form of HF's torch_recurrent_gated_delta_rule; every sum in
// double.
#include "support/gdn_reference.h"

#include "common/error.h"

#include <cmath>

namespace tdm::ref {
namespace {

double silu_d(double x) { return x / (1.0 + std::exp(-x)); }
double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// torch.nn.functional.softplus (beta 1, threshold 20).
double softplus_d(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

// x / sqrt(sum(x^2) + eps) over one head, in place (HF l2norm).
void l2_normalize(std::vector<double>& x, int64_t off, int64_t n, double eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += x[size_t(off + i)] * x[size_t(off + i)];
    const double inv = 1.0 / std::sqrt(ss + eps);
    for (int64_t i = 0; i < n; ++i) x[size_t(off + i)] *= inv;
}

}  // namespace

Floats gated_delta_net(std::span<const float> qkv, std::span<const float> z, std::span<const float> b,
                       std::span<const float> a, const GdnWeights& w, const GdnDims& d, GdnState& state) {
    const int64_t C = d.conv_dim(), K = d.conv_kernel, Nv = d.n_v_heads, dk = d.d_k, dv = d.d_v;
    const int64_t kd = d.key_dim(), vd = d.value_dim();
    TDM_ASSERT(d.n_k_heads > 0 && Nv % d.n_k_heads == 0 && K >= 1);
    const int64_t n = int64_t(qkv.size()) / C;
    TDM_ASSERT(int64_t(qkv.size()) == n * C && int64_t(z.size()) == n * vd);
    TDM_ASSERT(int64_t(b.size()) == n * Nv && int64_t(a.size()) == n * Nv);
    TDM_ASSERT(int64_t(w.conv.size()) == C * K && int64_t(w.a.size()) == Nv && int64_t(w.dt_bias.size()) == Nv);
    TDM_ASSERT(int64_t(w.norm.size()) == dv);
    if (state.conv.empty()) state.conv.assign(size_t((K - 1) * C), 0.0f);
    if (state.s.empty()) state.s.assign(size_t(Nv * dk * dv), 0.0);
    TDM_ASSERT(int64_t(state.conv.size()) == (K - 1) * C && int64_t(state.s.size()) == Nv * dk * dv);

    const double q_scale = 1.0 / std::sqrt(double(dk));
    Floats y(size_t(n * vd));
    std::vector<double> c(static_cast<size_t>(C));     // conv output after SiLU: [q | k | v]
    std::vector<double> u(static_cast<size_t>(dv)), o(static_cast<size_t>(dv));
    for (int64_t t = 0; t < n; ++t) {
        const float* x = qkv.data() + t * C;
        // Causal depthwise conv: taps 0..K-2 read the state (oldest first), tap K-1 the token.
        for (int64_t ch = 0; ch < C; ++ch) {
            const float* wc = w.conv.data() + ch * K;
            double acc = 0.0;
            for (int64_t j = 0; j < K - 1; ++j) acc += double(wc[j]) * state.conv[size_t(j * C + ch)];
            acc += double(wc[K - 1]) * x[ch];
            c[size_t(ch)] = silu_d(acc);
        }
        // The state keeps pre-conv inputs (docs/models/qwen35.md pitfall 7): drop the oldest, append qkv_t.
        if (K > 1) {
            state.conv.erase(state.conv.begin(), state.conv.begin() + C);
            state.conv.insert(state.conv.end(), x, x + C);
        }
        for (int64_t kh = 0; kh < d.n_k_heads; ++kh) {
            l2_normalize(c, kh * dk, dk, d.l2_eps);       // q
            l2_normalize(c, kd + kh * dk, dk, d.l2_eps);  // k
            for (int64_t i = 0; i < dk; ++i) c[size_t(kh * dk + i)] *= q_scale;
        }
        for (int64_t h = 0; h < Nv; ++h) {
            const int64_t kh = d.key_head(h);
            const double* qh = c.data() + kh * dk;
            const double* khd = c.data() + kd + kh * dk;
            const double* vh = c.data() + 2 * kd + h * dv;
            const double beta = sigmoid_d(b[size_t(t * Nv + h)]);
            const double g = double(w.a[size_t(h)]) * softplus_d(double(a[size_t(t * Nv + h)]) + w.dt_bias[size_t(h)]);
            const double decay = std::exp(g);
            double* S = state.s.data() + h * dk * dv;  // [dk][dv]
            for (int64_t i = 0; i < dk * dv; ++i) S[i] *= decay;
            // u = S^T k (the memory's prediction of v); delta = beta (v - u); S += k delta^T.
            for (int64_t j = 0; j < dv; ++j) {
                double acc = 0.0;
                for (int64_t i = 0; i < dk; ++i) acc += S[i * dv + j] * khd[i];
                u[size_t(j)] = beta * (vh[j] - acc);
            }
            for (int64_t i = 0; i < dk; ++i)
                for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += khd[i] * u[size_t(j)];
            if (d.f32_state)
                for (int64_t i = 0; i < dk * dv; ++i) S[i] = double(float(S[i]));
            for (int64_t j = 0; j < dv; ++j) {
                double acc = 0.0;
                for (int64_t i = 0; i < dk; ++i) acc += S[i * dv + j] * qh[i];
                o[size_t(j)] = acc;
            }
            // Gated RMSNorm over this head: norm_w * rms(o) * silu(z), plain weight.
            double ss = 0.0;
            for (int64_t j = 0; j < dv; ++j) ss += o[size_t(j)] * o[size_t(j)];
            const double inv = 1.0 / std::sqrt(ss / double(dv) + double(d.norm_eps));
            const float* zh = z.data() + t * vd + h * dv;
            float* yh = y.data() + t * vd + h * dv;
            for (int64_t j = 0; j < dv; ++j)
                yh[j] = float(double(w.norm[size_t(j)]) * o[size_t(j)] * inv * silu_d(double(zh[j])));
        }
    }
    return y;
}

}  // namespace tdm::ref
