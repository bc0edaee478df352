// SPDX-License-Identifier: Apache-2.0
// tests/support/reference_recurrent.cpp: reference conv1d, gated delta rule, matmul_id and
// moe_sum (see reference_recurrent.h). Plain loops in double: clarity over speed.
#include "support/reference_recurrent.h"

#include <cmath>

#include "common/error.h"
#include "common/quant.h"

namespace tdm::ref {

Conv1dResult conv1d_causal(std::span<const float> x, int64_t C, std::span<const float> w, int64_t K,
                           std::span<const float> state, bool silu) {
    TDM_ASSERT(C > 0 && K >= 2 && x.size() % size_t(C) == 0);
    TDM_ASSERT(int64_t(w.size()) == C * K && int64_t(state.size()) == C * (K - 1));
    const int64_t n = int64_t(x.size()) / C;
    // window[j] = input j of the sequence seen so far: K-1 from the state, then x
    std::vector<float> seq(state.begin(), state.end());
    seq.insert(seq.end(), x.begin(), x.end());
    Conv1dResult r;
    r.y.resize(x.size());
    for (int64_t t = 0; t < n; ++t) {
        // x_{t-K+1+j} is row t + j of seq (seq row K-1 is x_0)
        for (int64_t c = 0; c < C; ++c) {
            double acc = 0.0;
            for (int64_t j = 0; j < K; ++j) acc += double(w[size_t(c * K + j)]) * seq[size_t((t + j) * C + c)];
            if (silu) acc = acc / (1.0 + std::exp(-acc));
            r.y[size_t(t * C + c)] = float(acc);
        }
        // the state after row t: rows t+1 .. t+K-1 of seq
        r.state.emplace_back(seq.begin() + (t + 1) * C, seq.begin() + (t + K) * C);
    }
    return r;
}

DeltaRuleResult gated_delta_rule(std::span<const float> qkv, std::span<const float> g, std::span<const float> beta,
                                 std::span<const float> state, const DeltaRuleParams& p) {
    const int64_t Nk = p.n_k_heads, Nv = p.n_v_heads, dk = p.dk, dv = p.dv;
    TDM_ASSERT(Nk > 0 && Nv % Nk == 0 && dk > 0 && dv > 0);
    const int64_t cols = 2 * Nk * dk + Nv * dv;
    TDM_ASSERT(qkv.size() % size_t(cols) == 0);
    const int64_t n = int64_t(qkv.size()) / cols;
    TDM_ASSERT(int64_t(g.size()) == n * Nv && int64_t(beta.size()) == n * Nv);
    TDM_ASSERT(int64_t(state.size()) == Nv * dk * dv);
    const double scale = p.scale != 0.0 ? p.scale : 1.0 / std::sqrt(double(dk));
    std::vector<double> S(state.begin(), state.end());  // [Nv][dk][dv]
    DeltaRuleResult r;
    r.out.resize(size_t(n * Nv * dv));
    std::vector<double> q(static_cast<size_t>(dk)), k(static_cast<size_t>(dk)), u(static_cast<size_t>(dv));
    // x / sqrt(sum x^2 + eps), times s
    auto l2 = [&](const float* x, double s, std::vector<double>& y) {
        double ss = 0.0;
        for (int64_t i = 0; i < dk; ++i) ss += double(x[i]) * x[i];
        const double inv = s / std::sqrt(ss + p.eps);
        for (int64_t i = 0; i < dk; ++i) y[size_t(i)] = x[i] * inv;
    };
    for (int64_t t = 0; t < n; ++t) {
        const float* row = qkv.data() + t * cols;
        for (int64_t h = 0; h < Nv; ++h) {
            const int64_t kh = p.grouped ? h / (Nv / Nk) : h % Nk;
            l2(row + kh * dk, scale, q);
            l2(row + (Nk + kh) * dk, 1.0, k);
            const float* v = row + 2 * Nk * dk + h * dv;
            double* Sh = S.data() + h * dk * dv;
            const double a = std::exp(double(g[size_t(t * Nv + h)])), b = beta[size_t(t * Nv + h)];
            for (int64_t i = 0; i < dk * dv; ++i) Sh[i] *= a;
            for (int64_t j = 0; j < dv; ++j) {
                double acc = 0.0;
                for (int64_t i = 0; i < dk; ++i) acc += Sh[i * dv + j] * k[size_t(i)];
                u[size_t(j)] = acc;
            }
            for (int64_t i = 0; i < dk; ++i)
                for (int64_t j = 0; j < dv; ++j) Sh[i * dv + j] += k[size_t(i)] * b * (double(v[j]) - u[size_t(j)]);
            for (int64_t j = 0; j < dv; ++j) {
                double acc = 0.0;
                for (int64_t i = 0; i < dk; ++i) acc += Sh[i * dv + j] * q[size_t(i)];
                r.out[size_t((t * Nv + h) * dv + j)] = float(acc);
            }
        }
        r.state.emplace_back(S.begin(), S.end());
    }
    return r;
}

Floats matmul_id(std::span<const float> x, DType t, std::span<const uint8_t> w, int64_t K, int64_t M, int64_t E,
                 std::span<const int32_t> ids, int64_t n_used) {
    TDM_ASSERT(n_used > 0 && ids.size() % size_t(n_used) == 0);
    const int64_t n = int64_t(ids.size()) / n_used;
    const bool per_slot = int64_t(x.size()) == n * n_used * K && n_used > 1;
    TDM_ASSERT_MSG(per_slot || int64_t(x.size()) == n * K, "x must be [n][K] or [n][n_used][K]");
    const uint64_t rb = row_bytes(t, uint64_t(K));
    TDM_ASSERT_MSG(w.size() == rb * uint64_t(E * M), "weight bytes do not match E x M x K");
    Floats y(size_t(n * n_used * M), 0.0f);
    Floats wrow(static_cast<size_t>(K));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n_used; ++j) {
            const int32_t e = ids[size_t(i * n_used + j)];
            if (e < 0 || e >= E) continue;  // zero row
            const float* xr = x.data() + (per_slot ? i * n_used + j : i) * K;
            for (int64_t r = 0; r < M; ++r) {
                dequantize_row(t, w.data() + uint64_t(e * M + r) * rb, wrow.data(), K);
                double acc = 0.0;
                for (int64_t c = 0; c < K; ++c) acc += double(xr[c]) * wrow[size_t(c)];
                y[size_t((i * n_used + j) * M + r)] = float(acc);
            }
        }
    return y;
}

Floats moe_sum(std::span<const float> y, std::span<const float> w, int64_t M, int64_t n_used) {
    TDM_ASSERT(M > 0 && n_used > 0 && y.size() % size_t(M * n_used) == 0);
    const int64_t n = int64_t(y.size()) / (M * n_used);
    TDM_ASSERT(int64_t(w.size()) == n * n_used);
    Floats out(size_t(n * M));
    for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < M; ++r) {
            double acc = 0.0;
            for (int64_t j = 0; j < n_used; ++j) acc += double(w[size_t(t * n_used + j)]) * y[size_t((t * n_used + j) * M + r)];
            out[size_t(t * M + r)] = float(acc);
        }
    return out;
}

}  // namespace tdm::ref
