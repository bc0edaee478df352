// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_assistant_reference_test.cpp: the assistant drafter reference
// (support/gemma4_assistant_reference.h) on the tiny drafters of gemma4_tiny_assistant.h: it
// agrees with a loop-by-loop double version of the draft step written here from
// docs/models/gemma4.md §3.3-3.5 (both heads, both KV caches precisions); GGUF and HF copies draft
// identical tokens and logits; the centroid head's token is the argmax of the full masked
// computation and differs from the unmasked argmax; drafts read the target cache only at
// committed positions < p, sliding layers only the last W of them; incompatible or incomplete
// drafters fail to open with messages naming both values; the written files carry the spec's
// GGUF keys and tensor names and the HF config fields.
// To add a case: build a target and a drafter with make_pair(), draft with ref.draft(), and
// compare against naive_round() or another reference run.
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"

#include "formats/expect_error.h"
#include "support/gemma4_assistant_reference.h"
#include "support/gemma4_reference.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>

using namespace tdm;
using namespace tdm::test::g4;
using tdm::ref::Floats;
using tdm::ref::Gemma4AssistantReference;
using tdm::ref::Gemma4Cache;
using tdm::ref::Gemma4Output;
using tdm::ref::Gemma4Reference;
using tdm::test::fails_with;

namespace {

using Vec = std::vector<double>;

const std::vector<int32_t> kTokens = {2, 105, 300, 5, 5, 508, 42, 220, 77, 1, 400, 1023, 17, 9};
const char* const kPresets[] = {"tiny-e2b", "tiny-31b", "tiny-26b"};

template <class T>
T unwrap(Result<T> r) {
    if (!r.ok()) throw std::runtime_error(r.error().message());
    return std::move(*r);
}

// A target and its drafter, written as GGUF and HF.
struct Pair {
    Preset tp;
    Weights tw;
    AssistantPreset ap;
    AssistantWeights aw;
    std::string target_gguf, gguf, hf;
};

Pair make_pair(const std::string& name, uint32_t seed, DType type = DType::F32) {
    Pair m{preset(name), {}, assistant_preset(name), {}, "", "", ""};
    m.tw = make_weights(m.tp, seed, type);
    m.aw = make_assistant_weights(m.ap, seed + 100, type);
    WriteOptions to;
    to.type = type;
    m.target_gguf = write_gguf(m.tp, m.tw, temp_path("t.gguf"), to);
    AssistantWriteOptions o;
    o.type = type;
    m.gguf = write_assistant_gguf(m.ap, m.aw, temp_path("a.gguf"), o);
    m.hf = write_assistant_hf(m.ap, m.aw, temp_path("a"), o);
    return m;
}

// The state after the target processed positions 0..p-1: cache, and the row that produced x_p.
struct Committed {
    Gemma4Cache cache;
    Floats h_prev;  // [Hb]
    int32_t tok = 0;
};

Committed commit(const Gemma4Reference& t, std::span<const int32_t> tokens) {
    Committed c;
    const Gemma4Output out = t.run(tokens, &c.cache);
    const int64_t Hb = t.hparams().n_embd, V = t.hparams().n_vocab, n = int64_t(tokens.size());
    c.h_prev.assign(out.hidden.begin() + (n - 1) * Hb, out.hidden.end());
    const Floats last(out.logits.begin() + (n - 1) * V, out.logits.end());
    c.tok = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
    return c;
}

// ===== the naive draft step (spec §3.3-3.4 in plain double loops) ===============================

const double kEps = 1e-6;

const std::vector<float>& data(const Weights& w, const std::string& name) { return w.at(name).data; }

// y = W x with W [out][in] from the in-memory weights.
Vec linear(const Tensor& W, const Vec& x) {
    const size_t out = size_t(W.shape[0]), in = size_t(W.shape[1]);
    Vec y(out, 0.0);
    for (size_t r = 0; r < out; ++r)
        for (size_t c = 0; c < in; ++c) y[r] += double(W.data[r * in + c]) * x[c];
    return y;
}

void rms_inplace(double* x, size_t n, const std::vector<float>& w) {
    double ss = 0.0;
    for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
    const double inv = 1.0 / std::sqrt(ss / double(n) + kEps);
    for (size_t i = 0; i < n; ++i) x[i] = x[i] * inv * double(w[i]);
}

Vec rms(Vec x, const std::vector<float>& w) {
    rms_inplace(x.data(), x.size(), w);
    return x;
}

double gelu(double v) { return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v))); }

// The target's last own-KV layer of a type, from the target preset.
int64_t kv_layer(const Preset& tp, bool sliding) {
    for (int64_t j = first_shared(tp) - 1; j >= 0; --j)
        if (is_sliding(tp, j) == sliding) return j;
    throw std::runtime_error("no KV layer");
}

struct NaiveStep {
    Vec logits, hidden;
    int32_t token = 0;
};

NaiveStep naive_step(const Pair& m, double embd_scale, const Gemma4Cache& cache, const Vec& hb, int32_t tok, int64_t p) {
    const Preset& tp = m.tp;
    const Preset& d = m.ap.text;
    const Weights& w = m.aw.w;
    const int64_t Hb = tp.n_embd, Ha = d.n_embd, V = d.n_vocab, H = d.n_head;
    // in = [E_target[tok] * sqrt(Hb), hb]; x = pre_projection(in)
    Vec in(size_t(2 * Hb));
    for (int64_t c = 0; c < Hb; ++c) {
        in[size_t(c)] = double(data(m.tw, "embed_tokens.weight")[size_t(tok * Hb + c)]) * embd_scale;
        in[size_t(Hb + c)] = hb[size_t(c)];
    }
    Vec x = linear(w.at("pre_projection.weight"), in);
    for (int64_t il = 0; il < int64_t(d.layers.size()); ++il) {
        const std::string l = "model.layers." + std::to_string(il) + ".";
        const bool swa = is_sliding(d, il);
        const int64_t D = head_dim_of(d, il);
        const int64_t slots = swa ? D / 2 : int64_t(d.factor * double(D) / 2.0);
        const double theta = swa ? 1e4 : 1e6;
        // q per head: q_norm, then NeoX rotation at position p.
        Vec q = linear(w.at(l + "self_attn.q_proj.weight"), rms(x, data(w, l + "input_layernorm.weight")));
        for (int64_t h = 0; h < H; ++h) {
            double* qh = q.data() + h * D;
            rms_inplace(qh, size_t(D), data(w, l + "self_attn.q_norm.weight"));
            for (int64_t i = 0; i < slots; ++i) {
                const double ang = double(p) * std::pow(theta, -2.0 * double(i) / double(D));
                const double a = qh[i], b = qh[i + D / 2];
                qh[i] = a * std::cos(ang) - b * std::sin(ang);
                qh[i + D / 2] = b * std::cos(ang) + a * std::sin(ang);
            }
        }
        // Attention over the target's K/V rows [lo, p) of its last own-KV layer of this type.
        const int64_t src = kv_layer(tp, swa), nkv = kv_heads_of(tp, src);
        const int64_t lo = swa ? std::max<int64_t>(0, p - d.window) : 0;
        const Floats& K = cache.k[size_t(src)];
        const Floats& Vv = cache.v[size_t(src)];
        Vec o(size_t(H * D), 0.0);
        for (int64_t h = 0; h < H; ++h) {
            const int64_t kh = h / (H / nkv);
            Vec s;
            for (int64_t j = lo; j < p; ++j) {
                double dot = 0.0;
                for (int64_t c = 0; c < D; ++c) dot += q[size_t(h * D + c)] * double(K[size_t((j * nkv + kh) * D + c)]);
                s.push_back(dot);  // scale 1.0
            }
            if (s.empty()) continue;
            const double mx = *std::max_element(s.begin(), s.end());
            double sum = 0.0;
            for (double& v : s) sum += (v = std::exp(v - mx));
            for (int64_t j = lo; j < p; ++j)
                for (int64_t c = 0; c < D; ++c)
                    o[size_t(h * D + c)] += s[size_t(j - lo)] / sum * double(Vv[size_t((j * nkv + kh) * D + c)]);
        }
        Vec att = rms(linear(w.at(l + "self_attn.o_proj.weight"), o), data(w, l + "post_attention_layernorm.weight"));
        for (int64_t c = 0; c < Ha; ++c) x[size_t(c)] += att[size_t(c)];
        // GeGLU MLP.
        const Vec hh = rms(x, data(w, l + "pre_feedforward_layernorm.weight"));
        const Vec g = linear(w.at(l + "mlp.gate_proj.weight"), hh), u = linear(w.at(l + "mlp.up_proj.weight"), hh);
        Vec gu(g.size());
        for (size_t i = 0; i < g.size(); ++i) gu[i] = gelu(g[i]) * u[i];
        const Vec f = rms(linear(w.at(l + "mlp.down_proj.weight"), gu), data(w, l + "post_feedforward_layernorm.weight"));
        const double ls = double(data(w, l + "layer_scalar")[0]);
        for (int64_t c = 0; c < Ha; ++c) x[size_t(c)] = (x[size_t(c)] + f[size_t(c)]) * ls;
    }
    const Vec hn = rms(x, data(w, "model.norm.weight"));
    NaiveStep out;
    out.hidden = linear(w.at("post_projection.weight"), hn);
    const Tensor& E = w.at("model.embed_tokens.weight");
    auto logit = [&](int64_t id) {
        double acc = 0.0;
        for (int64_t c = 0; c < Ha; ++c) acc += double(E.data[size_t(id * Ha + c)]) * hn[size_t(c)];
        return acc;
    };
    if (!m.ap.ordered) {
        out.logits.resize(size_t(V));
        for (int64_t id = 0; id < V; ++id) out.logits[size_t(id)] = logit(id);
        out.token = int32_t(std::max_element(out.logits.begin(), out.logits.end()) - out.logits.begin());
    } else {
        // Clusters by centroid score (largest first, lower index on ties), their groups in order.
        const Vec cs = linear(w.at("masked_embedding.centroids.weight"), hn);
        std::vector<int64_t> order(cs.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cs[size_t(a)] > cs[size_t(b)]; });
        const int64_t group = V / m.ap.n_centroids;
        std::vector<int64_t> cand;
        for (int64_t j = 0; j < m.ap.n_centroids_top_k; ++j)
            for (int64_t i = 0; i < group; ++i) cand.push_back(m.aw.ordering[size_t(order[size_t(j)] * group + i)]);
        Vec s;
        for (int64_t id : cand) s.push_back(logit(id));
        const double lo = *std::min_element(s.begin(), s.end());
        out.logits.assign(size_t(V), lo - 1.0);
        for (size_t j = 0; j < cand.size(); ++j) out.logits[size_t(cand[j])] = s[j];
        out.token = int32_t(cand[size_t(std::max_element(s.begin(), s.end()) - s.begin())]);
    }
    if (m.ap.softcap > 0.0)
        for (double& v : out.logits) v = m.ap.softcap * std::tanh(v / m.ap.softcap);
    return out;
}

// k naive steps: constant position, hidden and token fed back.
std::vector<NaiveStep> naive_round(const Pair& m, double embd_scale, const Committed& c, int64_t p, int k) {
    std::vector<NaiveStep> out;
    Vec hb(c.h_prev.begin(), c.h_prev.end());
    int32_t tok = c.tok;
    for (int j = 0; j < k; ++j) {
        out.push_back(naive_step(m, embd_scale, c.cache, hb, tok, p));
        hb = out.back().hidden;
        tok = out.back().token;
    }
    return out;
}

double max_diff(const Floats& a, const Vec& b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0.0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
    return d;
}

double max_abs(const Vec& b) {
    double m = 0.0;
    for (double v : b) m = std::max(m, std::abs(v));
    return m;
}

}  // namespace

// ===== the written files =======================================================================

TEST(Gemma4AssistantReference, written_drafters_carry_the_spec_keys_and_tensor_names) {
    const AssistantPreset ap = assistant_preset("tiny-e2b");
    const AssistantWeights aw = make_assistant_weights(ap, 1);
    const auto g = unwrap(ModelSource::open(write_assistant_gguf(ap, aw, temp_path("a.gguf"))));
    EXPECT_EQ(g->architecture(), "gemma4-assistant");
    const GgufFile& f = *g->gguf();
    for (const char* key : {"context_length", "embedding_length", "embedding_length_out", "block_count",
                            "nextn_predict_layers", "feed_forward_length", "attention.head_count",
                            "attention.head_count_kv", "attention.key_length", "attention.value_length",
                            "attention.key_length_swa", "attention.value_length_swa", "attention.sliding_window",
                            "attention.sliding_window_pattern", "attention.layer_norm_rms_epsilon",
                            "rope.dimension_count", "rope.dimension_count_swa", "rope.freq_base", "rope.freq_base_swa"})
        EXPECT_NE(f.find(std::string("gemma4-assistant.") + key), nullptr) << key;
    EXPECT_EQ(f.find("gemma4-assistant.final_logit_softcapping"), nullptr);  // null for e2b-style
    EXPECT_EQ(unwrap(f.get_uint("gemma4-assistant.embedding_length_out")), 64u);
    EXPECT_EQ(unwrap(f.get_int_array("gemma4-assistant.attention.head_count_kv")), (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_EQ(unwrap(f.get_bool_array("gemma4-assistant.attention.sliding_window_pattern")),
              (std::vector<bool>{true, true, true, false}));
    auto ne = [&](const char* name) {
        const SourceTensor* t = g->find(name);
        EXPECT_NE(t, nullptr) << name;
        return t ? std::vector<int64_t>(t->ne, t->ne + t->n_dims) : std::vector<int64_t>{};
    };
    EXPECT_EQ(ne("token_embd.weight"), (std::vector<int64_t>{32, 1024}));
    EXPECT_EQ(ne("nextn.pre_projection.weight"), (std::vector<int64_t>{128, 32}));
    EXPECT_EQ(ne("nextn.post_projection.weight"), (std::vector<int64_t>{32, 64}));
    EXPECT_EQ(ne("masked_embd_centroids.weight"), (std::vector<int64_t>{32, 32}));
    EXPECT_EQ(ne("masked_embd_ordering.weight"), (std::vector<int64_t>{1024}));
    EXPECT_EQ(g->find("masked_embd_ordering.weight")->type, uint32_t(DType::I32));
    EXPECT_EQ(ne("rope_freqs.weight"), (std::vector<int64_t>{32}));
    EXPECT_EQ(ne("blk.3.attn_q.weight"), (std::vector<int64_t>{32, 4 * 64}));
    EXPECT_EQ(g->find("blk.0.attn_k.weight"), nullptr);
    EXPECT_EQ(g->find("blk.0.attn_norm.weight")->type, uint32_t(DType::F32));

    const auto h = unwrap(ModelSource::open(write_assistant_hf(ap, aw, temp_path("a"))));
    EXPECT_EQ(h->architecture(), "gemma4_assistant");
    const nlohmann::json& c = *h->hf_config();
    EXPECT_EQ(c["architectures"][0], "Gemma4AssistantForCausalLM");
    EXPECT_EQ(c["backbone_hidden_size"], 64);
    EXPECT_EQ(c["text_config"]["num_kv_shared_layers"], 4);
    EXPECT_TRUE(c["text_config"]["final_logit_softcapping"].is_null());
    EXPECT_EQ(h->find("masked_embedding.token_ordering")->dtype, "I64");
    EXPECT_NE(h->find("model.layers.0.layer_scalar"), nullptr);
    EXPECT_EQ(h->find("model.layers.0.self_attn.k_proj.weight"), nullptr);
}

// ===== agreement with the naive loops =========================================================

TEST(Gemma4AssistantReference, agrees_with_the_naive_loops_on_every_family) {
    const int64_t p = 12;
    const int k = 4;
    for (const char* name : kPresets) {
        for (const bool f16_kv : {false, true}) {
            SCOPED_TRACE(std::string(name) + (f16_kv ? " f16 KV" : " f32 KV"));
            const Pair m = make_pair(name, 5);
            const Gemma4Reference t = unwrap(Gemma4Reference::open(m.target_gguf, {.f16_kv = f16_kv}));
            const Gemma4AssistantReference a = unwrap(Gemma4AssistantReference::open(m.gguf, t));
            const Committed c = commit(t, std::span(kTokens).first(size_t(p)));
            std::vector<Floats> logits;
            const std::vector<int32_t> d = a.draft(t, c.cache, c.h_prev, c.tok, p, k, &logits);
            const std::vector<NaiveStep> want = naive_round(m, std::sqrt(double(float(m.tp.n_embd))), c, p, k);
            ASSERT_EQ(d.size(), size_t(k));
            ASSERT_EQ(logits.size(), size_t(k));
            for (int j = 0; j < k; ++j) {
                SCOPED_TRACE(j);
                ASSERT_GT(max_abs(want[size_t(j)].logits), 0.5);  // not trivially small
                EXPECT_EQ(d[size_t(j)], want[size_t(j)].token);
                EXPECT_LT(max_diff(logits[size_t(j)], want[size_t(j)].logits), 2e-5);
            }
            // The first step's next hidden row.
            const ref::Gemma4AssistantStep st = a.step(t, c.cache, c.h_prev, c.tok, p);
            EXPECT_EQ(st.token, d[0]);
            EXPECT_LT(max_diff(st.hidden, want[0].hidden), 2e-5);
            EXPECT_GT(max_abs(want[0].hidden), 0.1);
        }
    }
}

TEST(Gemma4AssistantReference, the_round_feeds_the_drafted_token_and_hidden_back_at_a_constant_position) {
    // A round of 3 equals three single steps chained by hand at the same p, and differs from
    // steps that advance the position.
    const Pair m = make_pair("tiny-31b", 8);
    const Gemma4Reference t = unwrap(Gemma4Reference::open(m.target_gguf));
    const Gemma4AssistantReference a = unwrap(Gemma4AssistantReference::open(m.gguf, t));
    const int64_t p = 10;
    const Committed c = commit(t, std::span(kTokens).first(size_t(p)));
    std::vector<Floats> logits;
    const std::vector<int32_t> d = a.draft(t, c.cache, c.h_prev, c.tok, p, 3, &logits);
    Floats hb = c.h_prev;
    int32_t tok = c.tok;
    for (int j = 0; j < 3; ++j) {
        const ref::Gemma4AssistantStep st = a.step(t, c.cache, hb, tok, p);
        EXPECT_EQ(st.token, d[size_t(j)]);
        EXPECT_EQ(st.logits, logits[size_t(j)]);
        hb = st.hidden;
        tok = st.token;
    }
    const ref::Gemma4AssistantStep first = a.step(t, c.cache, c.h_prev, c.tok, p);
    const ref::Gemma4AssistantStep moved = a.step(t, c.cache, first.hidden, first.token, p - 1);
    EXPECT_GT(ref::max_abs_diff(moved.logits, logits[1]), 1e-4);
}

// ===== GGUF and HF ============================================================================

TEST(Gemma4AssistantReference, gguf_and_hf_copies_draft_identical_tokens_and_logits) {
    for (const char* name : kPresets) {
        for (const DType type : {DType::F32, DType::BF16}) {
            SCOPED_TRACE(std::string(name) + (type == DType::F32 ? " f32" : " bf16"));
            const Pair m = make_pair(name, 21, type);
            const Gemma4Reference t = unwrap(Gemma4Reference::open(m.target_gguf));
            const Gemma4AssistantReference g = unwrap(Gemma4AssistantReference::open(m.gguf, t));
            const Gemma4AssistantReference h = unwrap(Gemma4AssistantReference::open(m.hf, t));
            const ref::Gemma4AssistantHparams &hg = g.hparams(), &hh = h.hparams();
            EXPECT_EQ(hg.n_embd, 32);
            EXPECT_EQ(hg.n_embd_backbone, m.tp.n_embd);
            EXPECT_EQ(hg.ordered, m.ap.ordered);
            EXPECT_EQ(hh.ordered, m.ap.ordered);
            EXPECT_EQ(hg.sliding, hh.sliding);
            EXPECT_EQ(hg.n_head_kv, hh.n_head_kv);
            EXPECT_EQ(hg.n_rot_full, hh.n_rot_full);
            EXPECT_EQ(hg.softcap, hh.softcap);
            if (m.ap.ordered) {
                EXPECT_EQ(hg.n_centroids, 32);
                EXPECT_EQ(hh.n_centroids, 32);
                EXPECT_EQ(hg.n_centroids_top_k, 4);
                EXPECT_EQ(hh.n_centroids_top_k, 4);
            }
            for (const int64_t p : {int64_t(3), int64_t(13)}) {
                const Committed c = commit(t, std::span(kTokens).first(size_t(p)));
                std::vector<Floats> lg, lh;
                EXPECT_EQ(g.draft(t, c.cache, c.h_prev, c.tok, p, 4, &lg), h.draft(t, c.cache, c.h_prev, c.tok, p, 4, &lh));
                EXPECT_EQ(lg, lh);
            }
        }
    }
}

TEST(Gemma4AssistantReference, softcap_follows_the_file_unless_turned_off) {
    // tiny-31b's drafter sets final_logit_softcapping 30: same tokens, logits 30 tanh(l / 30).
    const Pair m = make_pair("tiny-31b", 9);
    const Gemma4Reference t = unwrap(Gemma4Reference::open(m.target_gguf));
    const Gemma4AssistantReference on = unwrap(Gemma4AssistantReference::open(m.gguf, t));
    const Gemma4AssistantReference off = unwrap(Gemma4AssistantReference::open(m.hf, t, {.apply_softcap = false}));
    const Committed c = commit(t, std::span(kTokens).first(9));
    std::vector<Floats> l_on, l_off;
    EXPECT_EQ(on.draft(t, c.cache, c.h_prev, c.tok, 9, 3, &l_on), off.draft(t, c.cache, c.h_prev, c.tok, 9, 3, &l_off));
    EXPECT_EQ(l_on[0], ref::softcap(l_off[0], 30.0f));
    EXPECT_GT(ref::max_abs_diff(l_on[0], l_off[0]), 1e-3);
}

// ===== the centroid-masked head ===============================================================

TEST(Gemma4AssistantReference, centroid_head_picks_the_argmax_of_the_full_masked_computation) {
    const Pair m = make_pair("tiny-e2b", 31);
    const Gemma4Reference t = unwrap(Gemma4Reference::open(m.target_gguf));
    const Gemma4AssistantReference a = unwrap(Gemma4AssistantReference::open(m.gguf, t));
    const int64_t Ha = 32, V = 1024, nc = 32, group = V / nc;
    const std::vector<float>& E = data(m.aw.w, "model.embed_tokens.weight");
    const std::vector<float>& C = data(m.aw.w, "masked_embedding.centroids.weight");
    uint32_t seed = 77;
    int outside = 0;
    const int n_rows = 300;
    for (int r = 0; r < n_rows; ++r) {
        SCOPED_TRACE(r);
        Floats hn(static_cast<size_t>(Ha));
        for (float& v : hn) {
            seed = seed * 1664525u + 1013904223u;
            v = 2.0f * float(int32_t(seed)) / 2147483648.0f;
        }
        // Full computation: every logit and every centroid score, then mask to the tokens of the
        // top-4 clusters (non-candidates at min(candidates) - 1).
        Vec full(size_t(V), 0.0), cs(size_t(nc), 0.0);
        for (int64_t id = 0; id < V; ++id)
            for (int64_t c = 0; c < Ha; ++c) full[size_t(id)] += double(E[size_t(id * Ha + c)]) * double(hn[size_t(c)]);
        for (int64_t k = 0; k < nc; ++k)
            for (int64_t c = 0; c < Ha; ++c) cs[size_t(k)] += double(C[size_t(k * Ha + c)]) * double(hn[size_t(c)]);
        std::vector<bool> in(size_t(V), false);
        for (int j = 0; j < 4; ++j) {
            const int64_t best = std::max_element(cs.begin(), cs.end()) - cs.begin();
            cs[size_t(best)] = -INFINITY;
            for (int64_t i = 0; i < group; ++i) in[size_t(m.aw.ordering[size_t(best * group + i)])] = true;
        }
        double lo = INFINITY;
        for (int64_t id = 0; id < V; ++id)
            if (in[size_t(id)]) lo = std::min(lo, full[size_t(id)]);
        Vec masked = full;
        for (int64_t id = 0; id < V; ++id)
            if (!in[size_t(id)]) masked[size_t(id)] = lo - 1.0;
        const int32_t want = int32_t(std::max_element(masked.begin(), masked.end()) - masked.begin());
        const int32_t unmasked = int32_t(std::max_element(full.begin(), full.end()) - full.begin());

        const ref::Gemma4AssistantHead h = a.head(hn);
        EXPECT_EQ(h.token, want);
        EXPECT_EQ(h.candidates.size(), size_t(4 * group));
        EXPECT_LT(max_diff(h.logits, masked), 1e-4);
        outside += unmasked != want ? 1 : 0;
    }
    // The mask matters: the unmasked argmax usually lies outside the 4 of 32 clusters.
    EXPECT_GT(outside, n_rows / 2);
}

// ===== what the drafter reads from the target cache ==========================================

TEST(Gemma4AssistantReference, drafts_read_the_target_cache_only_below_p_and_sliding_layers_only_the_last_w) {
    for (const char* name : {"tiny-e2b", "tiny-31b"}) {
        SCOPED_TRACE(name);
        const Pair m = make_pair(name, 13);
        const Gemma4Reference t = unwrap(Gemma4Reference::open(m.target_gguf));
        const Gemma4AssistantReference a = unwrap(Gemma4AssistantReference::open(m.gguf, t));
        const int64_t p = 11, W = m.tp.window;  // sliding window of the drafter: positions 3..10
        const Committed c = commit(t, std::span(kTokens).first(size_t(p)));
        std::vector<Floats> base;
        const std::vector<int32_t> d = a.draft(t, c.cache, c.h_prev, c.tok, p, 3, &base);
        auto draft_with = [&](const Gemma4Cache& cache, std::vector<Floats>& logits) {
            return a.draft(t, cache, c.h_prev, c.tok, p, 3, &logits);
        };
        const int64_t s_l = t.shared_kv_layer(true), f_l = t.shared_kv_layer(false);
        ASSERT_EQ(s_l, kv_layer(m.tp, true));
        ASSERT_EQ(f_l, kv_layer(m.tp, false));
        auto row_size = [&](int64_t il) { return size_t(t.hparams().n_head_kv[size_t(il)] * head_dim_of(m.tp, il)); };
        auto poke = [&](Gemma4Cache& cache, int64_t il, int64_t pos) {
            for (Floats* kv : {&cache.k[size_t(il)], &cache.v[size_t(il)]})
                for (size_t i = 0; i < row_size(il); ++i) (*kv)[size_t(pos) * row_size(il) + i] += 3.0f;
        };

        // A cache that runs past p (the target processed more, e.g. a verify pass), with garbage
        // at positions >= p on every layer and everywhere on layers the drafter does not read.
        Gemma4Cache longer;
        t.run(kTokens, &longer);
        ASSERT_GT(longer.n_past, p);
        for (int64_t il = 0; il < int64_t(longer.k.size()); ++il)
            for (int64_t pos = (il == s_l || il == f_l) ? p : 0; pos < longer.n_past; ++pos)
                if (!longer.k[size_t(il)].empty()) poke(longer, il, pos);
        std::vector<Floats> l_longer;
        EXPECT_EQ(draft_with(longer, l_longer), d);
        EXPECT_EQ(l_longer, base);

        // Sliding source: position p - W - 1 is outside the window, p - W inside.
        Gemma4Cache outside = c.cache, inside = c.cache, full_old = c.cache;
        poke(outside, s_l, p - W - 1);
        poke(inside, s_l, p - W);
        poke(full_old, f_l, 0);  // the full layer sees every committed position
        std::vector<Floats> l_out, l_in, l_full;
        draft_with(outside, l_out);
        draft_with(inside, l_in);
        draft_with(full_old, l_full);
        EXPECT_EQ(l_out, base);
        EXPECT_GT(ref::max_abs_diff(l_in[0], base[0]), 1e-4);
        EXPECT_GT(ref::max_abs_diff(l_full[0], base[0]), 1e-4);
    }
}

// ===== errors =================================================================================

TEST(Gemma4AssistantReference, incompatible_or_incomplete_drafters_fail_to_open_naming_both_values) {
    const Preset tp = preset("tiny-e2b");
    const Gemma4Reference t = unwrap(Gemma4Reference::open(write_gguf(tp, make_weights(tp, 3), temp_path("t.gguf"))));
    auto files = [&](AssistantBreak b) {
        const AssistantPreset ap = assistant_preset("tiny-e2b", b);
        const AssistantWeights aw = make_assistant_weights(ap, 4);
        AssistantWriteOptions o;
        o.brk = b;
        return std::pair{Gemma4AssistantReference::open(write_assistant_gguf(ap, aw, temp_path("bad.gguf"), o), t),
                         Gemma4AssistantReference::open(write_assistant_hf(ap, aw, temp_path("bad"), o), t)};
    };
    auto both = [&](AssistantBreak b, std::initializer_list<std::string_view> needles) {
        auto [g, h] = files(b);
        EXPECT_TRUE(fails_with(g, needles));
        EXPECT_TRUE(fails_with(h, needles));
    };
    both({.backbone_delta = 16}, {"backbone hidden size", "is 80", "is 64"});
    both({.vocab_delta = -32}, {"vocabulary", "is 992", "is 1024"});
    both({.head_dim_delta = 32}, {"head dims", "32/96", "32/64"});
    both({.window_delta = 4}, {"sliding window is 12", "is 8"});
    {
        auto [g, h] = files({.drop_tensor = "blk.1.attn_q.weight"});
        EXPECT_TRUE(fails_with(g, {"blk.1.attn_q.weight", "not found"}));
        EXPECT_TRUE(h.ok());
    }
    {
        auto [g, h] = files({.drop_tensor = "model.layers.3.mlp.down_proj.weight"});
        EXPECT_TRUE(g.ok());
        EXPECT_TRUE(fails_with(h, {"model.layers.3.mlp.down_proj.weight", "not found"}));
    }
    EXPECT_TRUE(fails_with(files({.drop_tensor = "masked_embd_ordering.weight"}).first,
                           {"masked_embd_ordering.weight", "not found"}));
    EXPECT_TRUE(fails_with(files({.drop_tensor = "masked_embedding.token_ordering"}).second,
                           {"masked_embedding.token_ordering", "not found"}));
    // A target file is not a drafter.
    EXPECT_TRUE(fails_with(Gemma4AssistantReference::open(write_gguf(tp, make_weights(tp, 3), temp_path("t.gguf")), t),
                           {"general.architecture", "'gemma4'", "gemma4-assistant"}));
    // Unbroken copies open.
    auto [g, h] = files({});
    EXPECT_TRUE(g.ok());
    EXPECT_TRUE(h.ok());
}
