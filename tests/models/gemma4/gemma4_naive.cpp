// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_naive.cpp: naive_forward(), the second Gemma 4 implementation the
// reference is checked against: docs/models/gemma4.md §2 transcribed into plain loops over the
// in-memory HF-named weights, everything in double, no shared helpers with the reference, no
// file reading (so the reference's loader and name mapping are checked too).
#include "gemma4_tiny.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

namespace tdm::test::g4 {
namespace {

using Vec = std::vector<double>;

const double kEps = 1e-6;

const Tensor& get(const Weights& w, const std::string& name) { return w.at(name); }

// y = W x with W [out][in].
Vec linear(const Tensor& W, const Vec& x) {
    const size_t out = size_t(W.shape[0]), in = size_t(W.shape[1]);
    Vec y(out, 0.0);
    for (size_t r = 0; r < out; ++r) {
        double acc = 0.0;
        for (size_t c = 0; c < in; ++c) acc += double(W.data[r * in + c]) * x[c];
        y[r] = acc;
    }
    return y;
}

// Expert e of a stacked [E][out][in] tensor applied to x.
Vec linear_expert(const Tensor& W, int64_t e, const Vec& x) {
    const size_t out = size_t(W.shape[1]), in = size_t(W.shape[2]);
    Vec y(out, 0.0);
    const float* base = W.data.data() + size_t(e) * out * in;
    for (size_t r = 0; r < out; ++r)
        for (size_t c = 0; c < in; ++c) y[r] += double(base[r * in + c]) * x[c];
    return y;
}

// rms(x) * w on x[off, off + n) in place; w == nullptr: no weight.
void rms_inplace(Vec& x, size_t off, size_t n, const std::vector<float>* w) {
    double ss = 0.0;
    for (size_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
    const double inv = 1.0 / std::sqrt(ss / double(n) + kEps);
    for (size_t i = 0; i < n; ++i) x[off + i] = x[off + i] * inv * (w ? double((*w)[i]) : 1.0);
}

Vec rms(Vec x, const std::vector<float>* w) {
    rms_inplace(x, 0, x.size(), w);
    return x;
}

double gelu(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v))); }

// NeoX rotation of one head of width D: slot i pairs dims (i, i + D/2); slots >= n_slots keep
// angle 0.
void rotate(double* h, int64_t D, int64_t n_slots, double theta, int64_t pos) {
    for (int64_t i = 0; i < n_slots; ++i) {
        const double ang = double(pos) * std::pow(theta, -2.0 * double(i) / double(D));
        const double a = h[i], b = h[i + D / 2];
        h[i] = a * std::cos(ang) - b * std::sin(ang);
        h[i + D / 2] = b * std::cos(ang) + a * std::sin(ang);
    }
}

}  // namespace

std::vector<double> naive_forward(const Preset& p, const Weights& w, const std::vector<int32_t>& tokens,
                                  double embd_scale, double ple_scale) {
    const int64_t T = int64_t(tokens.size()), H = p.n_embd, L = int64_t(p.layers.size()), P = p.P, V = p.n_vocab;
    const Tensor& emb = get(w, "embed_tokens.weight");

    // Embedding.
    std::vector<Vec> x(static_cast<size_t>(T), Vec(static_cast<size_t>(H)));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < H; ++c) x[size_t(t)][size_t(c)] = double(emb.data[size_t(tokens[size_t(t)] * H + c)]) * embd_scale;

    // Per-layer inputs ple[t][l*P + j].
    std::vector<Vec> ple(static_cast<size_t>(T));
    if (P > 0) {
        const Tensor& tab = get(w, "embed_tokens_per_layer.weight");
        const std::vector<float>& pn = get(w, "per_layer_projection_norm.weight").data;
        for (int64_t t = 0; t < T; ++t) {
            Vec ctx = linear(get(w, "per_layer_model_projection.weight"), x[size_t(t)]);
            for (double& v : ctx) v /= std::sqrt(double(H));
            for (int64_t l = 0; l < L; ++l) rms_inplace(ctx, size_t(l * P), size_t(P), &pn);
            ple[size_t(t)].resize(size_t(L * P));
            for (int64_t j = 0; j < L * P; ++j) {
                const double tok = double(tab.data[size_t(tokens[size_t(t)] * L * P + j)]) * ple_scale;
                ple[size_t(t)][size_t(j)] = (ctx[size_t(j)] + tok) / std::sqrt(2.0);
            }
        }
    }

    // Per layer stored K/V [t][kv_head*D + d] (only layers with their own K/V).
    std::vector<std::vector<Vec>> Ks(static_cast<size_t>(L)), Vs(static_cast<size_t>(L));
    for (int64_t l = 0; l < L; ++l) {
        const std::string pre = "layers." + std::to_string(l) + ".";
        auto W = [&](const std::string& n) -> const Tensor& { return get(w, pre + n); };
        const bool swa = is_sliding(p, l);
        const int64_t D = head_dim_of(p, l), src = kv_source(p, l), nkv = kv_heads_of(p, src);
        const double theta = swa ? 1e4 : 1e6;
        const int64_t slots = swa ? D / 2 : int64_t(p.factor * double(D) / 2.0);

        // Own K and V for all tokens first (causality is enforced in the score loop).
        if (src == l) {
            for (int64_t t = 0; t < T; ++t) {
                const Vec a = rms(x[size_t(t)], &W("input_layernorm.weight").data);
                Vec k = linear(W("self_attn.k_proj.weight"), a);
                Vec v = (p.k_eq_v && !swa) ? k : linear(W("self_attn.v_proj.weight"), a);
                for (int64_t h = 0; h < nkv; ++h) {
                    rms_inplace(k, size_t(h * D), size_t(D), &W("self_attn.k_norm.weight").data);
                    rotate(k.data() + h * D, D, slots, theta, t);
                    rms_inplace(v, size_t(h * D), size_t(D), nullptr);
                }
                Ks[size_t(l)].push_back(k);
                Vs[size_t(l)].push_back(v);
            }
        }
        const std::vector<Vec>& K = Ks[size_t(src)];
        const std::vector<Vec>& Vv = Vs[size_t(src)];

        for (int64_t t = 0; t < T; ++t) {
            Vec& xt = x[size_t(t)];
            // Attention.
            const Vec a = rms(xt, &W("input_layernorm.weight").data);
            Vec q = linear(W("self_attn.q_proj.weight"), a);
            for (int64_t h = 0; h < p.n_head; ++h) {
                rms_inplace(q, size_t(h * D), size_t(D), &W("self_attn.q_norm.weight").data);
                rotate(q.data() + h * D, D, slots, theta, t);
            }
            Vec o(size_t(p.n_head * D), 0.0);
            const int64_t group = p.n_head / nkv;
            for (int64_t h = 0; h < p.n_head; ++h) {
                const int64_t hk = h / group;
                std::vector<double> s;
                std::vector<int64_t> idx;
                for (int64_t j = 0; j <= t; ++j) {
                    if (swa && t - j >= p.window) continue;
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; ++d) dot += q[size_t(h * D + d)] * K[size_t(j)][size_t(hk * D + d)];
                    s.push_back(dot);  // scale 1.0
                    idx.push_back(j);
                }
                const double mx = *std::max_element(s.begin(), s.end());
                double z = 0.0;
                for (double& e : s) z += (e = std::exp(e - mx));
                for (size_t m = 0; m < s.size(); ++m)
                    for (int64_t d = 0; d < D; ++d)
                        o[size_t(h * D + d)] += s[m] / z * Vv[size_t(idx[m])][size_t(hk * D + d)];
            }
            Vec att = rms(linear(W("self_attn.o_proj.weight"), o), &W("post_attention_layernorm.weight").data);
            for (int64_t c = 0; c < H; ++c) xt[size_t(c)] += att[size_t(c)];

            // Feed-forward.
            const Vec res = xt;
            auto geglu_mlp = [&](const Vec& in) {
                const Vec g = linear(W("mlp.gate_proj.weight"), in), u = linear(W("mlp.up_proj.weight"), in);
                Vec m(g.size());
                for (size_t i = 0; i < g.size(); ++i) m[i] = gelu(g[i]) * u[i];
                return linear(W("mlp.down_proj.weight"), m);
            };
            Vec f = geglu_mlp(rms(res, &W("pre_feedforward_layernorm.weight").data));
            if (p.n_expert > 0) {
                f = rms(f, &W("post_feedforward_layernorm_1.weight").data);
                // Router on the raw residual.
                Vec r = rms(res, nullptr);
                for (int64_t c = 0; c < H; ++c) r[size_t(c)] *= double(W("router.scale").data[size_t(c)]) / std::sqrt(double(H));
                Vec lg = linear(W("router.proj.weight"), r);
                const double mx = *std::max_element(lg.begin(), lg.end());
                double z = 0.0;
                for (double& e : lg) z += (e = std::exp(e - mx));
                for (double& e : lg) e /= z;
                std::vector<int64_t> order(size_t(p.n_expert));
                std::iota(order.begin(), order.end(), 0);
                std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return lg[size_t(i)] > lg[size_t(j)]; });
                double wsum = 0.0;
                for (int64_t j = 0; j < p.top_k; ++j) wsum += lg[size_t(order[size_t(j)])];
                const Vec xe = rms(res, &W("pre_feedforward_layernorm_2.weight").data);
                Vec f2(size_t(H), 0.0);
                for (int64_t j = 0; j < p.top_k; ++j) {
                    const int64_t e = order[size_t(j)];
                    const double we = lg[size_t(e)] / wsum * double(W("router.per_expert_scale").data[size_t(e)]);
                    const Vec gu = linear_expert(W("experts.gate_up_proj"), e, xe);
                    Vec m(size_t(p.n_ff_exp));
                    for (int64_t i = 0; i < p.n_ff_exp; ++i) m[size_t(i)] = gelu(gu[size_t(i)]) * gu[size_t(p.n_ff_exp + i)];
                    const Vec y = linear_expert(W("experts.down_proj"), e, m);
                    for (int64_t c = 0; c < H; ++c) f2[size_t(c)] += we * y[size_t(c)];
                }
                f2 = rms(f2, &W("post_feedforward_layernorm_2.weight").data);
                for (int64_t c = 0; c < H; ++c) f[size_t(c)] += f2[size_t(c)];
            }
            f = rms(f, &W("post_feedforward_layernorm.weight").data);
            for (int64_t c = 0; c < H; ++c) xt[size_t(c)] = res[size_t(c)] + f[size_t(c)];

            // Per-layer input.
            if (P > 0) {
                Vec g = linear(W("per_layer_input_gate.weight"), xt);
                for (int64_t j = 0; j < P; ++j) g[size_t(j)] = gelu(g[size_t(j)]) * ple[size_t(t)][size_t(l * P + j)];
                const Vec b = rms(linear(W("per_layer_projection.weight"), g), &W("post_per_layer_input_norm.weight").data);
                for (int64_t c = 0; c < H; ++c) xt[size_t(c)] += b[size_t(c)];
            }
            const double ls = W("layer_scalar").data[0];
            for (double& v : xt) v *= ls;
        }
    }

    // Final norm, tied head, softcap.
    std::vector<double> logits(size_t(T * V));
    for (int64_t t = 0; t < T; ++t) {
        const Vec h = rms(x[size_t(t)], &get(w, "norm.weight").data);
        const Vec lg = linear(emb, h);
        for (int64_t v = 0; v < V; ++v) logits[size_t(t * V + v)] = 30.0 * std::tanh(lg[size_t(v)] / 30.0);
    }
    return logits;
}

}  // namespace tdm::test::g4
