// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/qwen3_reference_test.cpp: the Qwen3 reference forward pass on synthetic models:
// it agrees with a second, loop-by-loop implementation written in this file; it is
// deterministic, causal, position-shift invariant (RoPE), incremental == full; GGUF and HF
// copies of a model give identical logits; quantized copies stay close; the repeating model's
// greedy output follows succ(t); a perturbed draft agrees with its target often but not always.
// To add a model property: synthesize into make_temp_dir(), open with Qwen3Reference::open.
#include <gtest/gtest.h>

#include "common/quant.h"
#include "formats/expect_error.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"
#include "support/gguf_builder.h"
#include "support/qwen3_reference.h"
#include "writers/gguf_writer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

using namespace tdm;
using namespace tdm::synth;
using tdm::ref::Floats;
using tdm::ref::Qwen3Reference;
using tdm::test::fails_with;

namespace {

Qwen3Shape reference_preset(const char* name) {
    auto s = qwen3_preset(name);
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : Qwen3Shape{};
}

// Synthesizes a GGUF (or, with hf, an HF directory) and opens the reference on it.
Qwen3Reference make(const Qwen3Shape& s, const Qwen3SynthOptions& o, bool hf = false, ref::Qwen3RefOptions ro = {}) {
    const std::string path = test::make_temp_dir("qwen3-ref") + (hf ? "/hf" : "/m.gguf");
    Status st = hf ? synth_qwen3_hf(path, s, o) : synth_qwen3_gguf(path, s, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    auto r = Qwen3Reference::open(path, ro);
    // No ASSERT in a value-returning helper: throwing fails the calling test with the message.
    if (!r.ok()) throw std::runtime_error(r.error().message());
    return std::move(*r);
}

std::span<const float> row(const Floats& logits, int64_t n_vocab, int64_t i) {
    return std::span<const float>(logits.data() + i * n_vocab, size_t(n_vocab));
}

// ===== a second implementation, plain loops straight from docs/models/common.md ==========================

std::vector<float> dequant(const ModelSource& src, const std::string& name) {
    const SourceTensor* t = src.find(name);
    EXPECT_TRUE(t) << name;
    const int64_t n = t->ne[0] * t->ne[1];
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t->type), t->data, out.data(), n);
    return out;
}

// y[r] = sum_c W[r][c] x[c] for W [rows][cols].
std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x, int64_t rows) {
    const int64_t cols = int64_t(x.size());
    std::vector<float> y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (int64_t c = 0; c < cols; ++c) acc += double(w[size_t(r * cols + c)]) * x[size_t(c)];
        y[size_t(r)] = float(acc);
    }
    return y;
}

void rmsnorm_inplace(float* x, int64_t n, const std::vector<float>& w, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const double s = 1.0 / std::sqrt(ss / double(n) + eps);
    for (int64_t i = 0; i < n; ++i) x[i] = float(double(x[i]) * s) * w[size_t(i)];
}

// Logits of every position, one token at a time with explicit K/V lists.
std::vector<std::vector<float>> loop_forward(const ModelSource& src, const ref::Qwen3Hparams& hp,
                                             const std::vector<int32_t>& tokens) {
    const int64_t D = hp.head_dim, E = hp.n_embd, Hq = hp.n_head, Hk = hp.n_head_kv;
    const std::vector<float> embd = dequant(src, "token_embd.weight");
    const std::vector<float> out_w = hp.tied ? embd : dequant(src, "output.weight");
    std::vector<std::vector<std::vector<float>>> K(size_t(hp.n_layer)), V(size_t(hp.n_layer));
    std::vector<std::vector<float>> logits;
    for (size_t p = 0; p < tokens.size(); ++p) {
        std::vector<float> x(embd.begin() + tokens[p] * E, embd.begin() + (tokens[p] + 1) * E);
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            auto w = [&](const char* n) { return dequant(src, "blk." + std::to_string(il) + "." + n + ".weight"); };
            std::vector<float> h = x;
            rmsnorm_inplace(h.data(), E, w("attn_norm"), hp.rms_eps);
            std::vector<float> q = matvec(w("attn_q"), h, Hq * D), k = matvec(w("attn_k"), h, Hk * D),
                               v = matvec(w("attn_v"), h, Hk * D);
            const std::vector<float> qn = w("attn_q_norm"), kn = w("attn_k_norm");
            auto rope = [&](float* head) {  // NeoX: dims i and i + D/2 rotate together
                for (int64_t i = 0; i < D / 2; ++i) {
                    const double a = double(p) * std::pow(hp.rope_theta, -2.0 * double(i) / double(D));
                    const double x0 = head[i], x1 = head[i + D / 2];
                    head[i] = float(x0 * std::cos(a) - x1 * std::sin(a));
                    head[i + D / 2] = float(x1 * std::cos(a) + x0 * std::sin(a));
                }
            };
            for (int64_t hh = 0; hh < Hq; ++hh) rmsnorm_inplace(q.data() + hh * D, D, qn, hp.rms_eps), rope(q.data() + hh * D);
            for (int64_t hh = 0; hh < Hk; ++hh) rmsnorm_inplace(k.data() + hh * D, D, kn, hp.rms_eps), rope(k.data() + hh * D);
            K[size_t(il)].push_back(k);
            V[size_t(il)].push_back(v);
            std::vector<float> attn(static_cast<size_t>(Hq * D));
            for (int64_t hh = 0; hh < Hq; ++hh) {
                const int64_t kh = hh / (Hq / Hk);  // GQA: repeat_interleave
                std::vector<double> s(p + 1);
                double mx = -1e300, sum = 0;
                for (size_t j = 0; j <= p; ++j) {
                    double d = 0;
                    for (int64_t c = 0; c < D; ++c) d += double(q[size_t(hh * D + c)]) * K[size_t(il)][j][size_t(kh * D + c)];
                    s[j] = d / std::sqrt(double(D));
                    mx = std::max(mx, s[j]);
                }
                for (size_t j = 0; j <= p; ++j) sum += (s[j] = std::exp(s[j] - mx));
                for (int64_t c = 0; c < D; ++c) {
                    double acc = 0;
                    for (size_t j = 0; j <= p; ++j) acc += s[j] * V[size_t(il)][j][size_t(kh * D + c)];
                    attn[size_t(hh * D + c)] = float(acc / sum);
                }
            }
            const std::vector<float> o = matvec(w("attn_output"), attn, E);
            for (int64_t i = 0; i < E; ++i) x[size_t(i)] += o[size_t(i)];
            h = x;
            rmsnorm_inplace(h.data(), E, w("ffn_norm"), hp.rms_eps);
            std::vector<float> g = matvec(w("ffn_gate"), h, hp.n_ff), u = matvec(w("ffn_up"), h, hp.n_ff);
            for (int64_t i = 0; i < hp.n_ff; ++i)
                g[size_t(i)] = float(double(g[size_t(i)]) / (1.0 + std::exp(-double(g[size_t(i)]))) * u[size_t(i)]);
            const std::vector<float> d = matvec(w("ffn_down"), g, E);
            for (int64_t i = 0; i < E; ++i) x[size_t(i)] += d[size_t(i)];
        }
        rmsnorm_inplace(x.data(), E, dequant(src, "output_norm.weight"), hp.rms_eps);
        logits.push_back(matvec(out_w, x, hp.n_vocab));
    }
    return logits;
}

}  // namespace

TEST(Qwen3Reference, forward_matches_a_loop_by_loop_implementation_of_the_spec) {
    for (bool tied : {false, true}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        Qwen3SynthOptions o;
        o.tied = tied;
        const Qwen3Reference m = make(reference_preset("tiny"), o);
        const std::vector<int32_t> tokens = {17, 300, 5, 5, 508, 42, 220};
        const Floats logits = m.forward(tokens);
        const auto want = loop_forward(m.source(), m.hparams(), tokens);
        ASSERT_EQ(logits.size(), tokens.size() * 512);
        for (size_t i = 0; i < tokens.size(); ++i) {
            const double err = ref::max_abs_diff(row(logits, 512, int64_t(i)), want[i]);
            EXPECT_LT(err, 1e-4) << "position " << i;
        }
    }
}

TEST(Qwen3Reference, forward_is_deterministic_and_causal) {
    const Qwen3Reference m = make(reference_preset("tiny"), {});
    std::vector<int32_t> tokens = {1, 2, 3, 400, 5, 6, 7, 8};
    const Floats a = m.forward(tokens), b = m.forward(tokens);
    EXPECT_EQ(a, b);
    // Changing the tokens after position 3 leaves positions 0..3 bit for bit unchanged.
    tokens[4] = 300;
    tokens[7] = 11;
    const Floats c = m.forward(tokens);
    for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(std::ranges::equal(row(a, 512, i), row(c, 512, i))) << i;
    EXPECT_FALSE(std::ranges::equal(row(a, 512, 4), row(c, 512, 4)));
    EXPECT_FALSE(std::ranges::equal(row(a, 512, 7), row(c, 512, 7)));
}

TEST(Qwen3Reference, decoding_token_by_token_with_the_cache_equals_the_full_forward) {
    const Qwen3Reference m = make(reference_preset("tiny"), {}, false, {.f16_kv = true});
    const std::vector<int32_t> tokens = {9, 8, 7, 6, 100, 200, 300};
    const Floats full = m.forward(tokens);
    ref::Qwen3Cache cache;
    Floats steps = m.forward(std::span(tokens).first(3), cache);
    for (size_t i = 3; i < tokens.size(); ++i) {
        const Floats one = m.forward(std::span(tokens).subspan(i, 1), cache);
        steps.insert(steps.end(), one.begin(), one.end());
    }
    EXPECT_EQ(cache.n_past, 7);
    EXPECT_EQ(full, steps);
}

TEST(Qwen3Reference, logits_depend_on_relative_positions_only) {
    const Qwen3Reference m = make(reference_preset("tiny"), {});
    const std::vector<int32_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6};
    const Floats at0 = m.forward(tokens, 0), at1000 = m.forward(tokens, 1000);
    EXPECT_LT(ref::nmse(at1000, at0), 1e-9);
    EXPECT_NE(at0, at1000);  // the positions were really different
}

TEST(Qwen3Reference, f16_kv_storage_changes_logits_only_slightly) {
    const Qwen3Shape s = reference_preset("tiny");
    const std::vector<int32_t> tokens = {10, 20, 30, 40, 50, 60};
    const Floats exact = make(s, {}).forward(tokens);
    const Floats f16 = make(s, {}, false, {.f16_kv = true}).forward(tokens);
    const double e = ref::nmse(f16, exact);
    RecordProperty("nmse", fmt::format("{:.3g}", e));
    EXPECT_GT(e, 0.0);
    EXPECT_LT(e, 1e-5);
}

TEST(Qwen3Reference, gguf_and_hf_copies_of_a_model_give_identical_logits) {
    const Qwen3Shape s = reference_preset("tiny");
    const std::vector<int32_t> tokens = {12, 34, 56, 78, 90, 123};
    for (DType t : {DType::F16, DType::F32, DType::BF16}) {
        SCOPED_TRACE(std::string(dtype_name(t)));
        Qwen3SynthOptions o;
        o.weight_type = t;
        const Qwen3Reference g = make(s, o), h = make(s, o, /*hf=*/true);
        EXPECT_EQ(g.hparams().tied, h.hparams().tied);
        EXPECT_EQ(g.hparams().rope_theta, h.hparams().rope_theta);
        EXPECT_EQ(g.hparams().rms_eps, h.hparams().rms_eps);
        EXPECT_EQ(g.forward(tokens), h.forward(tokens));
    }
}

TEST(Qwen3Reference, quantized_copies_stay_close_to_the_f32_model) {
    const Qwen3Shape s = reference_preset("small");
    std::vector<int32_t> tokens;
    for (int i = 0; i < 12; ++i) tokens.push_back((i * 337 + 11) % 4093);
    const Floats f32 = make(s, {}).forward(tokens);
    // Bounds are 2-3x what tdm's reference quantizers give today (Q4_0 ~0.08, Q4_K ~0.06 over
    // 4 random layers); they catch a wrong scale or layout (nmse ~1), not quantizer quality.
    const std::pair<DType, double> cases[] = {
        {DType::F16, 1e-5}, {DType::BF16, 1e-3}, {DType::Q8_0, 1e-3}, {DType::Q6_K, 1e-2},
        {DType::Q5_K, 5e-2}, {DType::Q4_K, 0.15}, {DType::Q4_0, 0.2}, {DType::Q5_0, 5e-2}, {DType::Q5_1, 5e-2},
    };
    for (const auto& [t, bound] : cases) {
        SCOPED_TRACE(std::string(dtype_name(t)));
        Qwen3SynthOptions o;
        o.weight_type = t;
        const double e = ref::nmse(make(s, o).forward(tokens), f32);
        RecordProperty(std::string("nmse_") + std::string(dtype_name(t)), fmt::format("{:.3g}", e));
        EXPECT_LT(e, bound);
        EXPECT_GT(e, 0.0);
    }
}

TEST(Qwen3Reference, repeating_model_greedy_generation_follows_succ) {
    const Qwen3Shape s = reference_preset("tiny");
    for (DType t : {DType::F32, DType::Q4_0}) {
        SCOPED_TRACE(std::string(dtype_name(t)));
        Qwen3SynthOptions o;
        o.repeating = true;
        o.weight_type = t;
        const Qwen3Reference m = make(s, o);
        EXPECT_FALSE(m.hparams().tied);
        // Every id, specials and all, has its successor as the argmax, whatever came before.
        std::vector<int32_t> all(512);
        for (int32_t i = 0; i < 512; ++i) all[size_t(i)] = (i * 7) % 512;
        const Floats logits = m.forward(all);
        const std::vector<int32_t> best = ref::argmax(logits, 512);
        for (size_t i = 0; i < all.size(); ++i) {
            const int32_t succ = qwen3_repeat_successor(s, o, all[i]);
            EXPECT_EQ(best[i], succ) << "token " << all[i];
            EXPECT_LT(succ, 509);  // never a special token
        }
        // Greedy generation cycles with the period.
        const std::vector<int32_t> prompt = {100, 2, 3};
        const std::vector<int32_t> out = m.generate(prompt, 12);
        int32_t prev = prompt.back();
        for (int32_t tok : out) {
            EXPECT_EQ(tok, qwen3_repeat_successor(s, o, prev));
            prev = tok;
        }
        for (size_t i = 5; i < out.size(); ++i) EXPECT_EQ(out[i], out[i - 5]);
    }
}

TEST(Qwen3Reference, perturbed_or_shallower_draft_agrees_with_its_target_often_but_not_always) {
    const Qwen3Shape s = reference_preset("small");
    // Teacher forcing on the target's own greedy continuation: the fraction of positions where
    // the draft's argmax is the target's next token.
    auto agreement = [&](const Qwen3SynthOptions& o, const Qwen3Reference& draft) {
        const Qwen3Reference target = make(s, o);
        std::vector<int32_t> seq = {100, 200, 300, 400};
        const std::vector<int32_t> gen = target.generate(seq, 40);
        seq.insert(seq.end(), gen.begin(), gen.end());
        const std::vector<int32_t> a = ref::argmax(target.forward(seq), s.n_vocab);
        const std::vector<int32_t> b = ref::argmax(draft.forward(seq), s.n_vocab);
        int same = 0;
        for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
        return double(same) / double(a.size());
    };
    Qwen3SynthOptions o;
    o.weight_type = DType::F16;
    // Same layers, 2% noise: ~75% today.
    const double noisy = agreement(o, make(s, qwen3_draft_options(o, 0.02f)));
    // First 2 of 4 layers: with equal layers about chance; with residual_decay 0.5 ~60% today.
    const double shallow = agreement(o, make(*qwen3_draft_shape(s, 2), qwen3_draft_options(o, 0.0f)));
    o.residual_decay = 0.5f;
    const double shallow_decayed = agreement(o, make(*qwen3_draft_shape(s, 2), qwen3_draft_options(o, 0.0f)));
    RecordProperty("agreement_noise_0.02", fmt::format("{:.3f}", noisy));
    RecordProperty("agreement_2_of_4_layers", fmt::format("{:.3f}", shallow));
    RecordProperty("agreement_2_of_4_layers_decay_0.5", fmt::format("{:.3f}", shallow_decayed));
    EXPECT_GT(noisy, 0.5);
    EXPECT_LT(noisy, 1.0);
    EXPECT_LT(shallow, 0.3);
    EXPECT_GT(shallow_decayed, 0.4);
    EXPECT_LT(shallow_decayed, 1.0);
}

TEST(Qwen3Reference, reference_refuses_models_that_are_not_complete_qwen3) {
    const std::string dir = test::make_temp_dir("qwen3-ref-bad");
    {
        std::FILE* f = std::fopen((dir + "/llama.gguf").c_str(), "wb");
        ASSERT_TRUE(f);
        const std::string bytes = test::small_valid_gguf();
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
    EXPECT_TRUE(fails_with(Qwen3Reference::open(dir + "/llama.gguf"), {"'llama'", "needs 'qwen3'"}));

    GgufWriter w;
    w.add_string("general.architecture", "qwen3");
    w.add_u32("qwen3.embedding_length", 8);
    for (const char* k : {"qwen3.block_count", "qwen3.attention.head_count", "qwen3.feed_forward_length"})
        w.add_u32(k, 4);
    w.add_f32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
    ASSERT_TRUE(w.write_file(dir + "/empty.gguf").ok());
    EXPECT_TRUE(fails_with(Qwen3Reference::open(dir + "/empty.gguf"), "'token_embd.weight' not found"));
}
