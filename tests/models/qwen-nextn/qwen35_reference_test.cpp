// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/qwen35_reference_test.cpp: the Qwen3.5 reference forward pass on synthetic models:
// GGUF and HF copies (different conventions: +1 norms, grouped vs tiled GDN heads, A_log) give the
// same logits, and a reference that applies the wrong head order does not; the GDN recurrence
// matches the matrix form of the delta rule; the pass is deterministic, causal, incremental ==
// full, snapshots roll back the recurrent state; reduced-precision variants stay close; the
// repeating model's greedy output follows succ(t); non-Qwen3.5 files are refused.
// To add a model property: synthesize with test35::make() and call the reference.
#include "support/qwen35_synth_helpers.h"

#include "formats/expect_error.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/gguf_builder.h"
#include "writers/gguf_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace tdm;
using namespace tdm::synth;
using tdm::ref::Floats;
using tdm::ref::Qwen35Reference;
using tdm::test::fails_with;
using tdm::test35::make;
using tdm::test35::preset;
using tdm::test35::row;

namespace {

const std::vector<int32_t> kTokens = {12, 300, 5, 5, 508, 42, 220, 77, 1, 400};

// Deterministic pseudo-random values in [-1, 1).
std::vector<float> noise(size_t n, uint32_t seed) {
    std::vector<float> v(n);
    for (float& x : v) {
        seed = seed * 1664525u + 1013904223u;
        x = float(int32_t(seed)) / 2147483648.0f;
    }
    return v;
}

}  // namespace

TEST(Qwen35Reference, gguf_and_hf_copies_of_a_model_give_the_same_logits) {
    struct Case {
        const char* preset;
        DType type;
        bool fused;
    };
    for (const Case& c : {Case{"tiny", DType::F32, false}, Case{"tiny", DType::BF16, false},
                          Case{"tiny-moe", DType::F32, false}, Case{"tiny-moe", DType::F16, true}}) {
        SCOPED_TRACE(std::string(c.preset) + " " + std::string(dtype_name(c.type)));
        Qwen35SynthOptions o;
        o.weight_type = c.type;
        o.hf_fused_experts = c.fused;
        const Qwen35Reference g = make(preset(c.preset), o), h = make(preset(c.preset), o, /*hf=*/true);
        EXPECT_EQ(g.hparams().head_order, ref::GdnHeadOrder::tiled);
        EXPECT_EQ(h.hparams().head_order, ref::GdnHeadOrder::grouped);
        EXPECT_FALSE(g.hparams().one_plus_norms);
        EXPECT_TRUE(h.hparams().one_plus_norms);
        EXPECT_EQ(g.hparams().n_rot, h.hparams().n_rot);
        EXPECT_EQ(g.hparams().mrope_sections, h.hparams().mrope_sections);
        EXPECT_EQ(g.hparams().rope_theta, h.hparams().rope_theta);
        EXPECT_EQ(g.hparams().recurrent, h.hparams().recurrent);
        EXPECT_EQ(g.hparams().has_mtp, h.hparams().has_mtp);
        const ref::Qwen35Output a = g.forward(kTokens), b = h.forward(kTokens);
        // Same values summed in a different order where heads were permuted: equal up to the
        // last bit of a double sum rounded to f32.
        const double diff = ref::max_abs_diff(a.logits, b.logits);
        RecordProperty(std::string("max_abs_diff_") + c.preset, fmt::format("{:.3g}", diff));
        EXPECT_LT(diff, 1e-5);
        EXPECT_LT(ref::max_abs_diff(a.hidden, b.hidden), 1e-5);
        EXPECT_LT(ref::max_abs_diff(a.hidden_pre_norm, b.hidden_pre_norm), 1e-5);
        // And the MTP heads agree too.
        ref::Qwen35MtpCache ca, cb;
        const ref::Qwen35MtpOutput ma = g.mtp_prefill(kTokens, a.hidden, ca), mb = h.mtp_prefill(kTokens, b.hidden, cb);
        EXPECT_LT(ref::max_abs_diff(ma.logits, mb.logits), 1e-5);
    }
}

TEST(Qwen35Reference, a_reference_that_applies_the_wrong_value_head_order_gives_different_logits) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const std::string gguf = test35::synth_model(preset(name), {}), hf = test35::synth_model(preset(name), {}, true);
        const Floats right = test35::open_reference(gguf).forward(kTokens).logits;
        const Floats wrong_gguf =
            test35::open_reference(gguf, {.head_order_override = ref::GdnHeadOrder::grouped}).forward(kTokens).logits;
        const Floats wrong_hf =
            test35::open_reference(hf, {.head_order_override = ref::GdnHeadOrder::tiled}).forward(kTokens).logits;
        const double e1 = ref::nmse(wrong_gguf, right), e2 = ref::nmse(wrong_hf, right);
        RecordProperty(std::string("nmse_wrong_order_") + name, fmt::format("{:.3g}", e1));
        EXPECT_GT(e1, 1e-3);
        EXPECT_GT(e2, 1e-3);
    }
    // With Nv == Nk the two orders coincide: the override changes nothing.
    Qwen35Shape s = preset("tiny");
    s.linear_n_v_heads = s.linear_n_k_heads;
    const std::string path = test35::synth_model(s, {});
    EXPECT_EQ(test35::open_reference(path).forward(kTokens).logits,
              test35::open_reference(path, {.head_order_override = ref::GdnHeadOrder::grouped}).forward(kTokens).logits);
}

TEST(Qwen35Reference, gdn_recurrence_matches_the_matrix_form_of_the_gated_delta_rule) {
    // One key head, two value heads, kernel 3, five tokens of random inputs.
    ref::GdnDims d;
    d.n_k_heads = 1;
    d.n_v_heads = 2;
    d.d_k = 4;
    d.d_v = 3;
    d.conv_kernel = 3;
    const int64_t n = 5, C = d.conv_dim(), vd = d.value_dim(), Nv = 2, dk = 4, dv = 3;
    const std::vector<float> qkv = noise(size_t(n * C), 1), z = noise(size_t(n * vd), 2), b = noise(size_t(n * Nv), 3),
                             a = noise(size_t(n * Nv), 4);
    ref::GdnWeights w;
    w.conv = noise(size_t(C * 3), 5);
    w.a = {-0.5f, -2.0f};
    w.dt_bias = {0.3f, -1.0f};
    w.norm = {1.1f, 0.9f, 1.0f};
    ref::GdnState st;
    const Floats y = ref::gated_delta_net(qkv, z, b, a, w, d, st);

    // S_t = alpha (I - beta k k^T) S_{t-1} + beta k v^T, o = S_t^T q, from docs/models/common.md §6.
    std::vector<std::vector<double>> S(2, std::vector<double>(size_t(dk * dv), 0.0));
    for (int64_t t = 0; t < n; ++t) {
        std::vector<double> c(static_cast<size_t>(C));
        for (int64_t ch = 0; ch < C; ++ch) {
            double acc = 0;
            for (int64_t j = 0; j < 3; ++j) {
                const int64_t src = t - 2 + j;  // zero padding before the sequence
                if (src >= 0) acc += double(w.conv[size_t(ch * 3 + j)]) * qkv[size_t(src * C + ch)];
            }
            c[size_t(ch)] = acc / (1 + std::exp(-acc));
        }
        auto l2 = [](std::vector<double> v) {
            double s2 = 0;
            for (double x : v) s2 += x * x;
            for (double& x : v) x /= std::sqrt(s2 + 1e-6);
            return v;
        };
        std::vector<double> q = l2({c.begin(), c.begin() + dk}), k = l2({c.begin() + dk, c.begin() + 2 * dk});
        for (double& x : q) x /= 2.0;  // 1 / sqrt(dk)
        for (int64_t h = 0; h < Nv; ++h) {
            const double beta = 1 / (1 + std::exp(-double(b[size_t(t * Nv + h)])));
            const double g = w.a[size_t(h)] * std::log1p(std::exp(double(a[size_t(t * Nv + h)]) + w.dt_bias[size_t(h)]));
            const double alpha = std::exp(g);
            std::vector<double> next(size_t(dk * dv));
            for (int64_t i = 0; i < dk; ++i)
                for (int64_t j = 0; j < dv; ++j) {
                    double m = 0;  // ((I - beta k k^T) S)[i][j]
                    for (int64_t l = 0; l < dk; ++l)
                        m += ((i == l ? 1.0 : 0.0) - beta * k[size_t(i)] * k[size_t(l)]) * S[size_t(h)][size_t(l * dv + j)];
                    next[size_t(i * dv + j)] = alpha * m + beta * k[size_t(i)] * c[size_t(2 * dk + h * dv + j)];
                }
            S[size_t(h)] = next;
            std::vector<double> o(static_cast<size_t>(dv));
            double ss = 0;
            for (int64_t j = 0; j < dv; ++j) {
                for (int64_t i = 0; i < dk; ++i) o[size_t(j)] += next[size_t(i * dv + j)] * q[size_t(i)];
                ss += o[size_t(j)] * o[size_t(j)];
            }
            for (int64_t j = 0; j < dv; ++j) {
                const double zz = z[size_t(t * vd + h * dv + j)];
                const double want = w.norm[size_t(j)] * o[size_t(j)] / std::sqrt(ss / double(dv) + 1e-6) * zz / (1 + std::exp(-zz));
                EXPECT_NEAR(y[size_t(t * vd + h * dv + j)], want, 1e-5) << "token " << t << " head " << h << " dim " << j;
            }
        }
    }
    // The conv state holds the last K-1 = 2 pre-conv rows.
    EXPECT_TRUE(std::equal(st.conv.begin(), st.conv.end(), qkv.begin() + (n - 2) * C));
}

TEST(Qwen35Reference, tiled_heads_with_converter_permuted_inputs_give_permuted_outputs) {
    // Nk = 2, Nv = 4: run grouped inputs, then the same inputs moved to tiled order as the converter
    // moves them; the tiled run's head h equals the grouped run's head tiled_to_grouped(h).
    ref::GdnDims d;
    d.n_k_heads = 2;
    d.n_v_heads = 4;
    d.d_k = 3;
    d.d_v = 2;
    const int64_t n = 4, kd = 6, vd = 8, C = 2 * kd + vd, Nv = 4, dv = 2, K = 4;
    const std::vector<float> qkv = noise(size_t(n * C), 11), z = noise(size_t(n * vd), 12), b = noise(size_t(n * Nv), 13),
                             a = noise(size_t(n * Nv), 14);
    ref::GdnWeights w;
    w.conv = noise(size_t(C * K), 15);
    w.a = {-0.5f, -1.0f, -2.0f, -0.25f};
    w.dt_bias = {0.1f, -0.2f, 0.3f, -0.4f};
    w.norm = {1.2f, 0.8f};
    auto src = [&](int64_t tiled_head) { return int64_t(qwen35_tiled_to_grouped(int32_t(tiled_head), 2, 4)); };
    std::vector<float> qkv_t = qkv, z_t = z, b_t = b, a_t = a;
    ref::GdnWeights wt = w;
    for (int64_t h = 0; h < Nv; ++h)
        for (int64_t j = 0; j < dv; ++j) {
            for (int64_t t = 0; t < n; ++t) {
                qkv_t[size_t(t * C + 2 * kd + h * dv + j)] = qkv[size_t(t * C + 2 * kd + src(h) * dv + j)];
                z_t[size_t(t * vd + h * dv + j)] = z[size_t(t * vd + src(h) * dv + j)];
            }
            for (int64_t tap = 0; tap < K; ++tap)
                wt.conv[size_t((2 * kd + h * dv + j) * K + tap)] = w.conv[size_t((2 * kd + src(h) * dv + j) * K + tap)];
        }
    for (int64_t h = 0; h < Nv; ++h) {
        for (int64_t t = 0; t < n; ++t) {
            b_t[size_t(t * Nv + h)] = b[size_t(t * Nv + src(h))];
            a_t[size_t(t * Nv + h)] = a[size_t(t * Nv + src(h))];
        }
        wt.a[size_t(h)] = w.a[size_t(src(h))];
        wt.dt_bias[size_t(h)] = w.dt_bias[size_t(src(h))];
    }
    ref::GdnState s1, s2;
    const Floats yg = ref::gated_delta_net(qkv, z, b, a, w, d, s1);
    ref::GdnDims dt = d;
    dt.order = ref::GdnHeadOrder::tiled;
    const Floats yt = ref::gated_delta_net(qkv_t, z_t, b_t, a_t, wt, dt, s2);
    for (int64_t t = 0; t < n; ++t)
        for (int64_t h = 0; h < Nv; ++h)
            for (int64_t j = 0; j < dv; ++j)
                EXPECT_EQ(yt[size_t(t * vd + h * dv + j)], yg[size_t(t * vd + src(h) * dv + j)]) << t << " " << h;
    // Using the grouped rule on the tiled inputs mixes the wrong key heads in.
    ref::GdnState s3;
    EXPECT_NE(ref::gated_delta_net(qkv_t, z_t, b_t, a_t, wt, d, s3), yt);
}

TEST(Qwen35Reference, forward_is_deterministic_and_causal_and_the_gdn_state_carries_the_past) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const Qwen35Reference m = make(preset(name), {});
        const int64_t V = m.hparams().n_vocab;
        std::vector<int32_t> tokens = kTokens;
        ref::Qwen35Trace t1, t2;
        const Floats a = m.forward(tokens, &t1).logits, b = m.forward(tokens).logits;
        EXPECT_EQ(a, b);
        tokens[5] = 301;
        const Floats c = m.forward(tokens).logits;
        for (int64_t i = 0; i < 5; ++i) EXPECT_TRUE(std::ranges::equal(row(a, V, i), row(c, V, i))) << i;
        for (int64_t i = 5; i < 10; ++i) EXPECT_FALSE(std::ranges::equal(row(a, V, i), row(c, V, i))) << i;
        // Layer 0 is GDN with nothing before it: a later position sees token 0 only through the
        // conv window (3 tokens) and the recurrent state, so at position 6 it is the state.
        tokens = kTokens;
        tokens[0] = 99;
        m.forward(tokens, &t2);
        const int64_t E = m.hparams().n_embd;
        EXPECT_FALSE(std::ranges::equal(row(t1.at("linear_attn_out-0"), E, 6), row(t2.at("linear_attn_out-0"), E, 6)));
    }
}

TEST(Qwen35Reference, decoding_token_by_token_with_the_cache_equals_the_full_forward) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const Qwen35Reference m = make(preset(name), {}, false, {.f16_kv = true, .f32_state = true});
        const ref::Qwen35Output full = m.forward(kTokens);
        ref::Qwen35Cache cache;
        ref::Qwen35Output steps = m.forward(std::span(kTokens).first(3), cache);
        for (size_t i = 3; i < kTokens.size(); i += (i < 6 ? 1 : 2)) {
            const size_t len = std::min<size_t>(i < 6 ? 1 : 2, kTokens.size() - i);
            const ref::Qwen35Output part = m.forward(std::span(kTokens).subspan(i, len), cache);
            steps.logits.insert(steps.logits.end(), part.logits.begin(), part.logits.end());
            steps.hidden.insert(steps.hidden.end(), part.hidden.begin(), part.hidden.end());
        }
        EXPECT_EQ(cache.n_past, int64_t(kTokens.size()));
        EXPECT_EQ(full.logits, steps.logits);
        EXPECT_EQ(full.hidden, steps.hidden);
    }
}

TEST(Qwen35Reference, a_copied_cache_is_a_snapshot_that_rolls_back_the_recurrent_state) {
    const Qwen35Reference m = make(preset("tiny"), {});
    ref::Qwen35Cache cache;
    m.forward(std::span(kTokens).first(4), cache);
    const ref::Qwen35Cache snapshot = cache;
    const int32_t wrong[3] = {7, 8, 9}, right[1] = {kTokens[4]};
    m.forward(wrong, cache);  // speculative tokens, rejected
    cache = snapshot;         // GDN state cannot be truncated: restore it
    const Floats after = m.forward(right, cache).logits;
    const Floats full = m.forward(std::span(kTokens).first(5)).logits;
    EXPECT_TRUE(std::ranges::equal(after, row(full, m.hparams().n_vocab, 4)));
}

TEST(Qwen35Reference, reduced_precision_kv_state_and_weights_stay_close) {
    const Qwen35Shape s = preset("tiny-moe");
    const Floats exact = make(s, {}).forward(kTokens).logits;
    const std::pair<const char*, Floats> variants[] = {
        {"f16_kv", make(s, {}, false, {.f16_kv = true}).forward(kTokens).logits},
        {"f32_state", make(s, {}, false, {.f32_state = true}).forward(kTokens).logits},
    };
    for (const auto& [what, logits] : variants) {
        const double e = ref::nmse(logits, exact);
        RecordProperty(std::string("nmse_") + what, fmt::format("{:.3g}", e));
        EXPECT_GT(e, 0.0) << what;
        EXPECT_LT(e, 1e-6) << what;
    }
    // Bounds ~10x today's values (BF16 4e-4, Q8_0 4e-4 on tiny-moe); a layout bug gives ~1.
    for (const auto& [t, bound] : {std::pair{DType::BF16, 5e-3}, std::pair{DType::Q8_0, 5e-3}}) {
        Qwen35SynthOptions o;
        o.weight_type = t;
        const double e = ref::nmse(make(s, o).forward(kTokens).logits, exact);
        RecordProperty(std::string("nmse_") + std::string(dtype_name(t)), fmt::format("{:.3g}", e));
        EXPECT_GT(e, 0.0);
        EXPECT_LT(e, bound);
    }
}

TEST(Qwen35Reference, repeating_model_greedy_generation_follows_succ) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const Qwen35Shape s = preset(name);
        Qwen35SynthOptions o;
        o.repeating = true;
        const Qwen35Reference m = make(s, o);
        EXPECT_FALSE(m.hparams().tied);
        std::vector<int32_t> all(512);
        for (int32_t i = 0; i < 512; ++i) all[size_t(i)] = (i * 7) % 512;
        const std::vector<int32_t> best = ref::argmax(m.forward(all).logits, 512);
        for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(best[i], qwen35_repeat_successor(s, o, all[i])) << all[i];
        const std::vector<int32_t> out = m.generate(std::vector<int32_t>{100, 2, 3}, 12);
        for (size_t i = 5; i < out.size(); ++i) EXPECT_EQ(out[i], out[i - 5]);
    }
}

TEST(Qwen35Reference, reference_refuses_models_that_are_not_complete_qwen35) {
    const std::string dir = test::make_temp_dir("q35-ref-bad");
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/qwen3.gguf", *qwen3_preset("tiny"), {}).ok());
    EXPECT_TRUE(fails_with(Qwen35Reference::open(dir + "/qwen3.gguf"), {"'qwen3'", "qwen35 or qwen35moe"}));
    ASSERT_TRUE(synth_qwen3_hf(dir + "/qwen3-hf", *qwen3_preset("tiny"), {}).ok());
    EXPECT_TRUE(fails_with(Qwen35Reference::open(dir + "/qwen3-hf"), {"model_type is 'qwen3'"}));

    GgufWriter w;
    w.add_string("general.architecture", "qwen35");
    for (const char* k : {"qwen35.block_count", "qwen35.embedding_length", "qwen35.attention.head_count",
                          "qwen35.attention.key_length", "qwen35.feed_forward_length", "qwen35.ssm.conv_kernel",
                          "qwen35.ssm.state_size", "qwen35.ssm.group_count", "qwen35.ssm.time_step_rank",
                          "qwen35.ssm.inner_size", "qwen35.rope.dimension_count"})
        w.add_u32(k, 4);
    w.add_f32("qwen35.attention.layer_norm_rms_epsilon", 1e-6f);
    ASSERT_TRUE(w.write_file(dir + "/no-sections.gguf").ok());
    EXPECT_TRUE(fails_with(Qwen35Reference::open(dir + "/no-sections.gguf"), "rope.dimension_sections"));
    w.add_array("qwen35.rope.dimension_sections", std::vector<int32_t>{1, 1, 0, 0});
    ASSERT_TRUE(w.write_file(dir + "/empty.gguf").ok());
    EXPECT_TRUE(fails_with(Qwen35Reference::open(dir + "/empty.gguf"), "'token_embd.weight' not found"));
}
