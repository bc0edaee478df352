// SPDX-License-Identifier: Apache-2.0
// tests/support/reference.cpp: plain C++ reference ops (see reference.h), written from
// docs/models/common.md and docs/formats/quants.md. Straightforward loops accumulating in double: clarity over
// speed, since these only run on the small shapes of tests.
// Not here: kernels, batching, KV-cache management, model forward passes.
#include "support/reference.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "common/error.h"
#include "common/fp16.h"
#include "common/quant.h"

namespace tdm::ref {
namespace {

int64_t rows_of(std::span<const float> x, int64_t n_cols) {
    TDM_ASSERT(n_cols > 0);
    TDM_ASSERT_MSG(int64_t(x.size()) % n_cols == 0, "size is not a multiple of n_cols");
    return int64_t(x.size()) / n_cols;
}

double silu1(double x) { return x / (1.0 + std::exp(-x)); }

double gelu_tanh1(double x) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// Elementwise binary op with optional one-row broadcast of b.
template <class F>
Floats binary(std::span<const float> a, std::span<const float> b, int64_t n_cols, F f) {
    const int64_t n_rows = rows_of(a, n_cols);
    const bool bcast = int64_t(b.size()) == n_cols && n_rows != 1;
    TDM_ASSERT_MSG(bcast || b.size() == a.size(), "b must match a or be one row");
    Floats y(a.size());
    for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t c = 0; c < n_cols; ++c) {
            const size_t i = size_t(r * n_cols + c);
            y[i] = float(f(double(a[i]), double(b[bcast ? size_t(c) : i])));
        }
    return y;
}

// Elementwise binary op with b one value per row of a.
template <class F>
Floats binary_col(std::span<const float> a, std::span<const float> b, int64_t n_cols, F f) {
    const int64_t n_rows = rows_of(a, n_cols);
    TDM_ASSERT_MSG(int64_t(b.size()) == n_rows, "b must have one value per row of a");
    Floats y(a.size());
    for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t c = 0; c < n_cols; ++c) {
            const size_t i = size_t(r * n_cols + c);
            y[i] = float(f(double(a[i]), double(b[size_t(r)])));
        }
    return y;
}

template <class F>
Floats unary(std::span<const float> x, F f) {
    Floats y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = float(f(double(x[i])));
    return y;
}

// 1 / sqrt(mean(x^2) + eps) over n values.
double inv_rms(const float* x, int64_t n, double eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    return 1.0 / std::sqrt(ss / double(n) + eps);
}

// Which position stream (0 = t, 1 = h, 2 = w, 3 = e) frequency slot i takes; ggml's
// ggml_mrope_cache_init rule (docs/models/common.md §2.5), sector = i % sum(sections).
int mrope_stream(MRope mode, const std::array<int, 4>& s, int64_t i) {
    const int sum = s[0] + s[1] + s[2] + s[3];
    TDM_ASSERT_MSG(sum > 0, "M-RoPE needs non-empty sections");
    const int sector = int(i % sum);
    if (mode == MRope::Interleaved) {
        if (sector % 3 == 1 && sector < 3 * s[1]) return 1;
        if (sector % 3 == 2 && sector < 3 * s[2]) return 2;
        if (sector % 3 == 0 && sector < 3 * s[0]) return 0;
        return 3;
    }
    if (sector < s[0]) return 0;
    if (sector < s[0] + s[1]) return 1;
    if (sector < s[0] + s[1] + s[2]) return 2;
    return 3;
}

}  // namespace

// ===== lookup and matrix product ================================================================

Floats get_rows(DType t, std::span<const uint8_t> table, int64_t n_cols,
                std::span<const int32_t> ids) {
    const uint64_t rb = row_bytes(t, uint64_t(n_cols));
    TDM_ASSERT_MSG(table.size() % rb == 0, "table is not a whole number of rows");
    const int64_t n_table_rows = int64_t(table.size() / rb);
    Floats y(ids.size() * size_t(n_cols));
    for (size_t i = 0; i < ids.size(); ++i) {
        TDM_ASSERT_MSG(ids[i] >= 0 && ids[i] < n_table_rows, "row id out of range");
        dequantize_row(t, table.data() + uint64_t(ids[i]) * rb, y.data() + i * size_t(n_cols),
                       n_cols);
    }
    return y;
}

Floats matmul(std::span<const float> x, DType t, std::span<const uint8_t> w, int64_t rows,
              int64_t cols) {
    const int64_t n = rows_of(x, cols);
    const uint64_t rb = row_bytes(t, uint64_t(cols));
    TDM_ASSERT_MSG(w.size() == rb * uint64_t(rows), "weight bytes do not match rows x cols");
    Floats wrow(static_cast<size_t>(cols));
    Floats y(size_t(n * rows));
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(t, w.data() + uint64_t(r) * rb, wrow.data(), cols);
        for (int64_t i = 0; i < n; ++i) {
            const float* xi = x.data() + i * cols;
            double acc = 0.0;
            for (int64_t c = 0; c < cols; ++c) acc += double(xi[c]) * double(wrow[size_t(c)]);
            y[size_t(i * rows + r)] = float(acc);
        }
    }
    return y;
}

Floats select_rows(std::span<const float> x, int64_t n_cols, std::span<const int32_t> ids) {
    const int64_t n_rows = rows_of(x, n_cols);
    Floats y;
    y.reserve(ids.size() * size_t(n_cols));
    for (const int32_t id : ids) {
        TDM_ASSERT_MSG(id >= 0 && id < n_rows, "row id out of range");
        y.insert(y.end(), x.begin() + id * n_cols, x.begin() + (id + 1) * n_cols);
    }
    return y;
}

// ===== elementwise ==============================================================================

Floats add(std::span<const float> a, std::span<const float> b, int64_t n_cols) {
    return binary(a, b, n_cols, [](double u, double v) { return u + v; });
}
Floats sub(std::span<const float> a, std::span<const float> b, int64_t n_cols) {
    return binary(a, b, n_cols, [](double u, double v) { return u - v; });
}
Floats mul(std::span<const float> a, std::span<const float> b, int64_t n_cols) {
    return binary(a, b, n_cols, [](double u, double v) { return u * v; });
}
Floats add_col(std::span<const float> a, std::span<const float> b, int64_t n_cols) {
    return binary_col(a, b, n_cols, [](double u, double v) { return u + v; });
}
Floats sub_col(std::span<const float> a, std::span<const float> b, int64_t n_cols) {
    return binary_col(a, b, n_cols, [](double u, double v) { return u - v; });
}
Floats mul_col(std::span<const float> a, std::span<const float> b, int64_t n_cols) {
    return binary_col(a, b, n_cols, [](double u, double v) { return u * v; });
}
Floats scale(std::span<const float> x, float s) {
    return unary(x, [s](double v) { return v * double(s); });
}
Floats add_scalar(std::span<const float> x, float s) {
    return unary(x, [s](double v) { return v + double(s); });
}
Floats neg(std::span<const float> x) {
    return unary(x, [](double v) { return -v; });
}
Floats softcap(std::span<const float> x, float c) {
    TDM_ASSERT(c > 0.0f);
    return unary(x, [c](double v) { return double(c) * std::tanh(v / double(c)); });
}

Floats silu(std::span<const float> x) { return unary(x, silu1); }
Floats gelu_tanh(std::span<const float> x) { return unary(x, gelu_tanh1); }
Floats gelu_erf(std::span<const float> x) {
    return unary(x, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); });
}
Floats sigmoid(std::span<const float> x) {
    return unary(x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}
Floats softplus(std::span<const float> x) {
    // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): never overflows, exact to double precision.
    return unary(x, [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); });
}
Floats exp(std::span<const float> x) {
    return unary(x, [](double v) { return std::exp(v); });
}

Floats swiglu(std::span<const float> gate, std::span<const float> up) {
    TDM_ASSERT(gate.size() == up.size());
    Floats y(gate.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = float(silu1(gate[i]) * double(up[i]));
    return y;
}
Floats geglu(std::span<const float> gate, std::span<const float> up) {
    TDM_ASSERT(gate.size() == up.size());
    Floats y(gate.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = float(gelu_tanh1(gate[i]) * double(up[i]));
    return y;
}

// ===== norms ====================================================================================

Floats rms_norm(std::span<const float> x, int64_t n_cols, float eps, NormWeight mode,
                std::span<const float> w) {
    const int64_t n_rows = rows_of(x, n_cols);
    TDM_ASSERT_MSG(mode == NormWeight::None || int64_t(w.size()) == n_cols,
                   "norm weight must have n_cols values");
    Floats y(x.size());
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x.data() + r * n_cols;
        const double inv = inv_rms(xr, n_cols, eps);
        for (int64_t c = 0; c < n_cols; ++c) {
            double v = double(xr[c]) * inv;
            if (mode == NormWeight::Plain) v *= double(w[size_t(c)]);
            if (mode == NormWeight::OnePlus) v *= 1.0 + double(w[size_t(c)]);
            y[size_t(r * n_cols + c)] = float(v);
        }
    }
    return y;
}

Floats layer_norm(std::span<const float> x, int64_t n_cols, float eps, std::span<const float> w,
                  std::span<const float> b) {
    const int64_t n_rows = rows_of(x, n_cols);
    Floats y(x.size());
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x.data() + r * n_cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < n_cols; ++c) mean += xr[c];
        mean /= double(n_cols);
        for (int64_t c = 0; c < n_cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
        const double inv = 1.0 / std::sqrt(var / double(n_cols) + double(eps));
        for (int64_t c = 0; c < n_cols; ++c) {
            double v = (xr[c] - mean) * inv;
            if (!w.empty()) v *= double(w[size_t(c)]);
            if (!b.empty()) v += double(b[size_t(c)]);
            y[size_t(r * n_cols + c)] = float(v);
        }
    }
    return y;
}

Floats l2_norm(std::span<const float> x, int64_t n_cols, float eps) {
    const int64_t n_rows = rows_of(x, n_cols);
    Floats y(x.size());
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x.data() + r * n_cols;
        double ss = 0.0;
        for (int64_t c = 0; c < n_cols; ++c) ss += double(xr[c]) * xr[c];
        const double inv = 1.0 / std::sqrt(ss + double(eps));
        for (int64_t c = 0; c < n_cols; ++c) y[size_t(r * n_cols + c)] = float(xr[c] * inv);
    }
    return y;
}

Floats gated_rms_norm(std::span<const float> o, std::span<const float> z, int64_t n_cols,
                      int64_t group, std::span<const float> w, float eps) {
    const int64_t n_rows = rows_of(o, n_cols);
    TDM_ASSERT(o.size() == z.size());
    TDM_ASSERT_MSG(group > 0 && n_cols % group == 0, "n_cols must be a multiple of group");
    TDM_ASSERT_MSG(int64_t(w.size()) == group || int64_t(w.size()) == n_cols,
                   "weight must have group or n_cols values");
    const bool per_column = int64_t(w.size()) == n_cols && n_cols != group;
    Floats y(o.size());
    for (int64_t r = 0; r < n_rows; ++r)
        for (int64_t g0 = 0; g0 < n_cols; g0 += group) {
            const int64_t base = r * n_cols + g0;
            const double inv = inv_rms(o.data() + base, group, eps);
            for (int64_t c = 0; c < group; ++c) {
                const double wc = w[size_t(per_column ? g0 + c : c)];
                y[size_t(base + c)] = float(wc * (double(o[size_t(base + c)]) * inv) *
                                            silu1(z[size_t(base + c)]));
            }
        }
    return y;
}

// ===== RoPE =====================================================================================

Floats rope(std::span<const float> x, int64_t n_tokens, int64_t n_head, int64_t head_dim,
            std::span<const int32_t> pos, const RopeParams& p) {
    TDM_ASSERT(int64_t(x.size()) == n_tokens * n_head * head_dim);
    TDM_ASSERT_MSG(p.n_rot > 0 && p.n_rot % 2 == 0 && p.n_rot <= head_dim, "bad n_rot");
    const int64_t half = p.n_rot / 2;
    TDM_ASSERT_MSG(p.freq_factors.empty() || int64_t(p.freq_factors.size()) == half,
                   "freq_factors must have n_rot/2 values");
    int64_t n_streams = 1;
    if (p.mrope == MRope::None) {
        TDM_ASSERT(int64_t(pos.size()) == n_tokens);
    } else {
        TDM_ASSERT_MSG(int64_t(pos.size()) == 3 * n_tokens || int64_t(pos.size()) == 4 * n_tokens,
                       "M-RoPE needs 3 or 4 position streams");
        n_streams = int64_t(pos.size()) / n_tokens;
    }

    Floats y(x.begin(), x.end());  // the tail [n_rot, head_dim) passes through
    std::vector<double> cos_a(static_cast<size_t>(half)), sin_a(static_cast<size_t>(half));
    for (int64_t i = 0; i < n_tokens; ++i) {
        // Angles depend on the token only, so compute them once for all heads.
        for (int64_t s = 0; s < half; ++s) {
            if (p.n_freq > 0 && s >= p.n_freq) {
                cos_a[size_t(s)] = 1.0;
                sin_a[size_t(s)] = 0.0;
                continue;
            }
            int64_t stream = 0;
            if (p.mrope != MRope::None) {
                stream = mrope_stream(p.mrope, p.sections, s);
                TDM_ASSERT_MSG(stream < n_streams, "a slot selects the 4th position stream");
            }
            const double position = pos[size_t(i * n_streams + stream)];
            const double inv_freq = std::pow(p.theta, -2.0 * double(s) / double(p.n_rot));
            double angle = p.freq_scale * position * inv_freq;
            if (!p.freq_factors.empty()) angle /= double(p.freq_factors[size_t(s)]);
            cos_a[size_t(s)] = std::cos(angle);
            sin_a[size_t(s)] = std::sin(angle);
        }
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t base = (i * n_head + h) * head_dim;
            for (int64_t s = 0; s < half; ++s) {
                const int64_t ia = p.pairing == RopePairing::NeoX ? s : 2 * s;
                const int64_t ib = p.pairing == RopePairing::NeoX ? s + half : 2 * s + 1;
                const double a = x[size_t(base + ia)], b = x[size_t(base + ib)];
                y[size_t(base + ia)] = float(a * cos_a[size_t(s)] - b * sin_a[size_t(s)]);
                y[size_t(base + ib)] = float(b * cos_a[size_t(s)] + a * sin_a[size_t(s)]);
            }
        }
    }
    return y;
}

// ===== softmax and attention ====================================================================

Floats softmax(std::span<const float> x, int64_t n_cols, float scale) {
    const int64_t n_rows = rows_of(x, n_cols);
    Floats y(x.size());
    std::vector<double> e(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x.data() + r * n_cols;
        double mx = -INFINITY;
        for (int64_t c = 0; c < n_cols; ++c) mx = std::max(mx, double(scale) * xr[c]);
        double sum = 0.0;
        for (int64_t c = 0; c < n_cols; ++c) {
            e[size_t(c)] = std::exp(double(scale) * xr[c] - mx);
            sum += e[size_t(c)];
        }
        for (int64_t c = 0; c < n_cols; ++c) y[size_t(r * n_cols + c)] = float(e[size_t(c)] / sum);
    }
    return y;
}

Floats attention(std::span<const float> q, std::span<const int32_t> q_pos,
                 std::span<const float> k, std::span<const float> v,
                 std::span<const int32_t> k_pos, const AttnParams& p) {
    TDM_ASSERT(p.n_head > 0 && p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0);
    TDM_ASSERT(p.head_dim > 0 && p.head_dim_v > 0);
    const int64_t n_q = int64_t(q_pos.size());
    TDM_ASSERT(int64_t(q.size()) == n_q * p.n_head * p.head_dim);
    const int64_t kv_len = int64_t(k.size()) / (p.n_head_kv * p.head_dim);
    TDM_ASSERT(int64_t(k.size()) == kv_len * p.n_head_kv * p.head_dim);
    TDM_ASSERT(int64_t(v.size()) == kv_len * p.n_head_kv * p.head_dim_v);
    TDM_ASSERT(k_pos.empty() || int64_t(k_pos.size()) == kv_len);
    const int64_t group = p.n_head / p.n_head_kv;

    Floats out(size_t(n_q * p.n_head * p.head_dim_v), 0.0f);
    std::vector<double> logit(static_cast<size_t>(kv_len));
    std::vector<double> acc(static_cast<size_t>(p.head_dim_v));
    for (int64_t i = 0; i < n_q; ++i) {
        const int64_t qp = q_pos[size_t(i)];
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t hk = h / group;
            const float* qv = q.data() + (i * p.n_head + h) * p.head_dim;
            double mx = -INFINITY;
            for (int64_t j = 0; j < kv_len; ++j) {
                const int64_t kp = k_pos.empty() ? j : k_pos[size_t(j)];
                const bool visible = kp <= qp && (p.window <= 0 || qp - kp < p.window);
                if (!visible) {
                    logit[size_t(j)] = -INFINITY;
                    continue;
                }
                const float* kv = k.data() + (j * p.n_head_kv + hk) * p.head_dim;
                double dot = 0.0;
                for (int64_t d = 0; d < p.head_dim; ++d) dot += double(qv[d]) * kv[d];
                double l = double(p.scale) * dot;
                if (p.softcap > 0.0f) l = double(p.softcap) * std::tanh(l / double(p.softcap));
                logit[size_t(j)] = l;
                mx = std::max(mx, l);
            }
            if (mx == -INFINITY) continue;  // no visible key: output stays zero
            double sum = 0.0;
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j = 0; j < kv_len; ++j) {
                if (logit[size_t(j)] == -INFINITY) continue;
                const double e = std::exp(logit[size_t(j)] - mx);
                sum += e;
                const float* vv = v.data() + (j * p.n_head_kv + hk) * p.head_dim_v;
                for (int64_t d = 0; d < p.head_dim_v; ++d) acc[size_t(d)] += e * vv[d];
            }
            float* o = out.data() + (i * p.n_head + h) * p.head_dim_v;
            for (int64_t d = 0; d < p.head_dim_v; ++d) o[d] = float(acc[size_t(d)] / sum);
        }
    }
    return out;
}

// ===== layout and casts =========================================================================

Floats concat(std::span<const float> a, int64_t a_cols, std::span<const float> b, int64_t b_cols) {
    const int64_t n_rows = rows_of(a, a_cols);
    TDM_ASSERT_MSG(rows_of(b, b_cols) == n_rows, "concat: row counts differ");
    Floats y;
    y.reserve(a.size() + b.size());
    for (int64_t r = 0; r < n_rows; ++r) {
        y.insert(y.end(), a.begin() + r * a_cols, a.begin() + (r + 1) * a_cols);
        y.insert(y.end(), b.begin() + r * b_cols, b.begin() + (r + 1) * b_cols);
    }
    return y;
}

Floats copy(std::span<const float> x) { return Floats(x.begin(), x.end()); }

Floats view_cols(std::span<const float> x, int64_t n_cols, int64_t first, int64_t count) {
    const int64_t n_rows = rows_of(x, n_cols);
    TDM_ASSERT_MSG(first >= 0 && count >= 0 && first + count <= n_cols, "columns out of range");
    Floats y;
    y.reserve(size_t(n_rows * count));
    for (int64_t r = 0; r < n_rows; ++r)
        y.insert(y.end(), x.begin() + r * n_cols + first, x.begin() + r * n_cols + first + count);
    return y;
}

std::vector<uint16_t> to_f16(std::span<const float> x) {
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_f16(x[i]);
    return h;
}
Floats from_f16(std::span<const uint16_t> h) {
    Floats y(h.size());
    for (size_t i = 0; i < h.size(); ++i) y[i] = f16_to_f32(h[i]);
    return y;
}
std::vector<uint16_t> to_bf16(std::span<const float> x) {
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = f32_to_bf16(x[i]);
    return h;
}
Floats from_bf16(std::span<const uint16_t> h) {
    Floats y(h.size());
    for (size_t i = 0; i < h.size(); ++i) y[i] = bf16_to_f32(h[i]);
    return y;
}

Floats cast_round(std::span<const float> x, DType t) {
    switch (t) {
        case DType::F32: return copy(x);
        case DType::F16: return from_f16(to_f16(x));
        case DType::BF16: return from_bf16(to_bf16(x));
        default: TDM_ASSERT_MSG(false, "cast_round: F32, F16 or BF16 only");
    }
    return {};
}

// ===== selection ================================================================================

std::vector<int32_t> argmax(std::span<const float> x, int64_t n_cols) {
    const int64_t n_rows = rows_of(x, n_cols);
    std::vector<int32_t> idx(static_cast<size_t>(n_rows));
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x.data() + r * n_cols;
        int64_t best = 0;
        for (int64_t c = 1; c < n_cols; ++c)
            if (xr[c] > xr[best]) best = c;  // strict: the first maximum wins
        idx[size_t(r)] = int32_t(best);
    }
    return idx;
}

std::vector<int32_t> top_k(std::span<const float> x, int64_t n_cols, int64_t k) {
    const int64_t n_rows = rows_of(x, n_cols);
    TDM_ASSERT_MSG(k >= 0 && k <= n_cols, "top_k: k out of range");
    std::vector<int32_t> out;
    out.reserve(size_t(n_rows * k));
    std::vector<int32_t> order(static_cast<size_t>(n_cols));
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x.data() + r * n_cols;
        std::iota(order.begin(), order.end(), 0);
        // Stable sort descending: equal values keep ascending index order.
        std::stable_sort(order.begin(), order.end(),
                         [xr](int32_t a, int32_t b) { return xr[a] > xr[b]; });
        out.insert(out.end(), order.begin(), order.begin() + k);
    }
    return out;
}

// ===== comparison helpers =======================================================================

double nmse(std::span<const float> a, std::span<const float> b) {
    TDM_ASSERT(a.size() == b.size());
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        const double d = double(a[i]) - double(b[i]);
        num += d * d;
        den += double(b[i]) * b[i];
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
    return num / den;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
    TDM_ASSERT(a.size() == b.size());
    double m = 0.0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
    return m;
}

}  // namespace tdm::ref
