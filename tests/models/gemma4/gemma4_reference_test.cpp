// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_reference_test.cpp: the Gemma 4 reference forward pass on tiny models
// built here (gemma4_tiny.h): it agrees with the loop-by-loop naive implementation on each
// family (PLE + KV-shared + double-wide, K=V full layers, MoE); stepping with the cache is
// bit-identical to the full forward; GGUF and HF copies (both HF config forms) give identical
// logits; the HF embedding scale is rounded to the table's dtype; sliding layers ignore keys W or
// more positions back while full layers do not; broken files give errors naming the problem.
#include "gemma4_tiny.h"

#include "formats/expect_error.h"
#include "support/gemma4_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace tdm;
using namespace tdm::test::g4;
using tdm::ref::Floats;
using tdm::ref::Gemma4Cache;
using tdm::ref::Gemma4Reference;
using tdm::ref::Gemma4Trace;
using tdm::test::fails_with;

namespace {

// 14 tokens: longer than the window (8), so sliding layers really drop keys.
const std::vector<int32_t> kTokens = {2, 105, 300, 5, 5, 508, 42, 220, 77, 1, 400, 1023, 17, 9};
const char* const kPresets[] = {"tiny-e2b", "tiny-31b", "tiny-26b"};

Gemma4Reference open_ref(const std::string& path, ref::Gemma4RefOptions o = {}) {
    auto r = Gemma4Reference::open(path, o);
    if (!r.ok()) throw std::runtime_error(r.error().message());
    return std::move(*r);
}

struct Model {
    Preset p;
    Weights w;
    std::string gguf, hf;
};

Model build(const Preset& p, uint32_t seed, DType type = DType::F32, bool per_layer_config = false) {
    Model m{p, make_weights(p, seed, type), "", ""};
    WriteOptions o;
    o.type = type;
    o.per_layer_config = per_layer_config;
    m.gguf = write_gguf(p, m.w, temp_path("m.gguf"), o);
    m.hf = write_hf(p, m.w, temp_path("hf"), o);
    return m;
}

double max_diff(const Floats& a, const std::vector<double>& b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0.0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
    return d;
}

double max_abs(const std::vector<double>& b) {
    double m = 0.0;
    for (double v : b) m = std::max(m, std::abs(v));
    return m;
}

std::vector<float> row(const Floats& x, int64_t n_cols, int64_t i) {
    return std::vector<float>(x.begin() + i * n_cols, x.begin() + (i + 1) * n_cols);
}

}  // namespace

// ===== agreement with the naive implementation ================================================

TEST(Gemma4Reference, agrees_with_the_naive_loops_on_every_family) {
    for (const char* name : kPresets) {
        SCOPED_TRACE(name);
        const Model m = build(preset(name), 11);
        const std::vector<double> want = naive_forward(m.p, m.w, kTokens, std::sqrt(64.0), std::sqrt(16.0));
        ASSERT_GT(max_abs(want), 0.5);  // logits are not trivially small
        for (const std::string& path : {m.gguf, m.hf}) {
            SCOPED_TRACE(path);
            const Gemma4Reference r = open_ref(path);
            // The reference rounds every intermediate to f32, the naive code keeps doubles: the
            // difference is f32 rounding carried through the layers (~1e-6), far below any
            // structural mistake (a wrong norm, scale or RoPE slot moves logits by 1e-2 or more).
            EXPECT_LT(max_diff(r.forward(kTokens), want), 2e-5);
        }
    }
}

TEST(Gemma4Reference, hparams_follow_the_presets) {
    const Model e2b = build(preset("tiny-e2b"), 3);
    for (const std::string& path : {e2b.gguf, e2b.hf}) {
        SCOPED_TRACE(path);
        const Gemma4Reference r = open_ref(path);
        const auto& hp = r.hparams();
        EXPECT_EQ(hp.n_layer, 5);
        EXPECT_EQ(hp.kv_source, (std::vector<int64_t>{0, 1, 2, 1, 2}));
        EXPECT_EQ(hp.n_ff, (std::vector<int64_t>{128, 128, 128, 256, 256}));
        EXPECT_EQ(hp.sliding, (std::vector<bool>{true, true, false, true, false}));
        EXPECT_EQ(hp.n_head_kv, (std::vector<int64_t>{1, 1, 1, 1, 1}));
        EXPECT_EQ(hp.head_dim_swa, 32);
        EXPECT_EQ(hp.head_dim_full, 64);
        EXPECT_EQ(hp.n_rot_full, 8);  // int(0.25 * 64 / 2)
        EXPECT_EQ(hp.n_embd_per_layer, 16);
        EXPECT_EQ(hp.window, 8);
        EXPECT_FLOAT_EQ(hp.softcap, 30.0f);
        EXPECT_EQ(hp.embd_scale, 8.0f);
        EXPECT_EQ(hp.ple_scale, 4.0f);
    }
    const Model b31 = build(preset("tiny-31b"), 3);
    for (const std::string& path : {b31.gguf, b31.hf}) {
        SCOPED_TRACE(path);
        const Gemma4Reference r = open_ref(path);
        const auto& hp = r.hparams();
        EXPECT_EQ(hp.k_eq_v, (std::vector<bool>{false, false, false, false, false, true}));
        EXPECT_EQ(hp.n_head_kv, (std::vector<int64_t>{2, 2, 2, 2, 2, 1}));
        EXPECT_EQ(hp.n_expert, 0);
    }
    const Gemma4Reference r26 = open_ref(build(preset("tiny-26b"), 3).hf);
    const auto& moe = r26.hparams();
    EXPECT_EQ(moe.n_expert, 4);
    EXPECT_EQ(moe.n_expert_used, 2);
    EXPECT_EQ(moe.n_ff_exp, 32);
}

// ===== incremental == full ====================================================================

TEST(Gemma4Reference, stepping_with_the_cache_equals_the_full_forward) {
    for (const char* name : kPresets) {
        for (bool f16_kv : {false, true}) {
            SCOPED_TRACE(std::string(name) + (f16_kv ? " f16_kv" : ""));
            const Model m = build(preset(name), 5);
            const Gemma4Reference r = open_ref(m.gguf, {.f16_kv = f16_kv});
            const int64_t V = r.hparams().n_vocab;
            Gemma4Trace full_trace;
            const ref::Gemma4Output full = r.run(kTokens, nullptr, &full_trace);
            // A 5-token prefill, then one token at a time.
            Gemma4Cache cache;
            const std::vector<int32_t> head(kTokens.begin(), kTokens.begin() + 5);
            Floats logits = r.forward(head, cache);
            for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(row(logits, V, i), row(full.logits, V, i)) << i;
            for (size_t i = 5; i < kTokens.size(); ++i) {
                const int32_t one[1] = {kTokens[i]};
                const ref::Gemma4Output step = r.run(one, &cache);
                EXPECT_EQ(step.logits, row(full.logits, V, int64_t(i))) << i;
                EXPECT_EQ(step.hidden, row(full.hidden, r.hparams().n_embd, int64_t(i))) << i;
            }
            EXPECT_EQ(cache.n_past, int64_t(kTokens.size()));
            // KV-shared layers keep no K/V of their own; sources keep every position.
            for (int64_t il = 0; il < r.hparams().n_layer; ++il) {
                const int64_t src = r.hparams().kv_source[size_t(il)];
                EXPECT_EQ(cache.k[size_t(il)].empty(), src != il) << il;
                EXPECT_EQ(full_trace.count("Kcur-" + std::to_string(il)), src == il ? 1u : 0u) << il;
            }
        }
    }
}

TEST(Gemma4Reference, f16_kv_rounds_the_stored_kv_only) {
    const Model m = build(preset("tiny-31b"), 6);
    const Gemma4Reference exact = open_ref(m.gguf), f16 = open_ref(m.gguf, {.f16_kv = true});
    Gemma4Trace a, b;
    const Floats la = exact.forward(kTokens, &a), lb = f16.forward(kTokens, &b);
    EXPECT_NE(la, lb);
    EXPECT_LT(ref::max_abs_diff(la, lb), 0.05);
    EXPECT_EQ(b.at("Kcur-0"), ref::cast_round(a.at("Kcur-0"), DType::F16));  // layer 0 inputs are equal
    EXPECT_EQ(b.at("Vcur-0"), ref::cast_round(a.at("Vcur-0"), DType::F16));
}

TEST(Gemma4Reference, generate_is_greedy_over_the_full_forward) {
    const Model m = build(preset("tiny-e2b"), 8);
    const Gemma4Reference r = open_ref(m.gguf);
    const std::vector<int32_t> prompt(kTokens.begin(), kTokens.begin() + 4);
    const std::vector<int32_t> out = r.generate(prompt, 6);
    ASSERT_EQ(out.size(), 6u);
    std::vector<int32_t> seq = prompt;
    for (int32_t t : out) {
        const Floats l = r.forward(seq);
        EXPECT_EQ(ref::argmax(row(l, r.hparams().n_vocab, int64_t(seq.size()) - 1), r.hparams().n_vocab)[0], t);
        seq.push_back(t);
    }
}

// ===== GGUF vs HF =============================================================================

TEST(Gemma4Reference, gguf_and_hf_copies_give_identical_logits) {
    for (const char* name : kPresets) {
        for (DType type : {DType::F32, DType::BF16}) {
            for (bool plc : {false, true}) {
                SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(type)) + (plc ? " per_layer_config" : ""));
                const Model m = build(preset(name), 21, type, plc);
                const Gemma4Reference g = open_ref(m.gguf), h = open_ref(m.hf);
                EXPECT_EQ(g.source().format(), SourceFormat::gguf);
                EXPECT_EQ(h.source().format(), SourceFormat::safetensors);
                Gemma4Trace tg, th;
                EXPECT_EQ(g.forward(kTokens, &tg), h.forward(kTokens, &th));
                // GGUF emulates proportional RoPE with rope_freqs; HF derives it: same Q.
                const std::string full = "Qcur-" + std::to_string(g.hparams().n_layer - 1);
                EXPECT_EQ(tg.at(full), th.at(full));
            }
        }
    }
}

TEST(Gemma4Reference, other_layouts_of_the_same_model_give_identical_logits) {
    // GGUF with a scalar head_count_kv (every layer of tiny-e2b has 1), and an HF text-only
    // checkpoint (model_type gemma4_text at the top, tensors under "model.").
    const Preset p = preset("tiny-e2b");
    const Weights w = make_weights(p, 13);
    const Floats base = open_ref(write_gguf(p, w, temp_path("m.gguf"))).forward(kTokens);
    WriteOptions scalar;
    scalar.scalar_kv_heads = true;
    EXPECT_EQ(open_ref(write_gguf(p, w, temp_path("s.gguf"), scalar)).forward(kTokens), base);
    WriteOptions text;
    text.text_only = true;
    const Gemma4Reference t = open_ref(write_hf(p, w, temp_path("text"), text));
    EXPECT_EQ(t.source().architecture(), "gemma4_text");
    EXPECT_EQ(t.forward(kTokens), base);
}

TEST(Gemma4Reference, kv_shared_layers_ignore_their_own_kv_weights) {
    // The HF copy carries k/v weights on KV-shared layers (as checkpoints do); changing them
    // changes nothing, while changing the source layer's does.
    const Preset p = preset("tiny-e2b");
    Weights w = make_weights(p, 9);
    const Floats base = open_ref(write_hf(p, w, temp_path("a"))).forward(kTokens);
    for (float& v : w.at("layers.3.self_attn.k_proj.weight").data) v = -v;
    for (float& v : w.at("layers.4.self_attn.v_proj.weight").data) v *= 3.0f;
    EXPECT_EQ(open_ref(write_hf(p, w, temp_path("b"))).forward(kTokens), base);
    for (float& v : w.at("layers.1.self_attn.v_proj.weight").data) v *= 3.0f;
    EXPECT_NE(open_ref(write_hf(p, w, temp_path("c"))).forward(kTokens), base);
}

// ===== embedding scale ========================================================================

TEST(Gemma4Reference, embedding_scale_follows_the_format_and_dtype) {
    EXPECT_EQ(ref::gemma4_embed_scale(5376, SourceFormat::safetensors, DType::BF16), 73.5f);
    EXPECT_EQ(ref::gemma4_embed_scale(5376, SourceFormat::gguf, DType::BF16), std::sqrt(5376.0f));
    EXPECT_NEAR(ref::gemma4_embed_scale(5376, SourceFormat::safetensors, DType::F32), 73.3212, 1e-4);
    EXPECT_EQ(ref::gemma4_embed_scale(64, SourceFormat::safetensors, DType::BF16), 8.0f);
    EXPECT_EQ(ref::gemma4_embed_scale(72, SourceFormat::safetensors, DType::F16), 8.484375f);  // f16(8.48528)

    // H = 72: bf16(sqrt(72)) = 8.5 but sqrtf(72) = 8.4853. The bf16 HF copy scales by 8.5, the
    // GGUF copy of the same weights by 8.4853, and each agrees with the naive pass at its scale.
    Preset p = preset("tiny-31b");
    p.n_embd = 72;
    const Model m = build(p, 31, DType::BF16);
    const Gemma4Reference g = open_ref(m.gguf), h = open_ref(m.hf);
    EXPECT_EQ(h.hparams().embd_scale, 8.5f);
    EXPECT_EQ(g.hparams().embd_scale, std::sqrt(72.0f));
    Gemma4Trace tg, th;
    const Floats lg = g.forward(kTokens, &tg), lh = h.forward(kTokens, &th);
    const std::vector<float>& e = m.w.at("embed_tokens.weight").data;
    EXPECT_EQ(th.at("inp_embd")[3], e[size_t(kTokens[0] * 72 + 3)] * 8.5f);
    EXPECT_EQ(tg.at("inp_embd")[3], e[size_t(kTokens[0] * 72 + 3)] * std::sqrt(72.0f));
    EXPECT_NE(lg, lh);
    EXPECT_LT(max_diff(lh, naive_forward(p, m.w, kTokens, 8.5, 0.0)), 2e-5);
    EXPECT_LT(max_diff(lg, naive_forward(p, m.w, kTokens, std::sqrt(72.0f), 0.0)), 2e-5);
    EXPECT_GT(max_diff(lh, naive_forward(p, m.w, kTokens, std::sqrt(72.0f), 0.0)), 1e-4);
}

// ===== sliding window =========================================================================

TEST(Gemma4Reference, sliding_layers_do_not_see_keys_window_or_more_back) {
    // One layer, 16 tokens, W = 8: the last query (position 15) sees keys 8..15 on a sliding
    // layer. Changing token 7 (15 - 7 = W) leaves its logits bit-identical on the sliding-only
    // model and changes them on the full-attention model; changing token 8 (inside) changes both.
    std::vector<int32_t> toks;
    for (int i = 0; i < 16; ++i) toks.push_back(int32_t(37 * i + 11) % 1024);
    for (const char* layers : {"S", "F"}) {
        SCOPED_TRACE(layers);
        Preset p = preset("tiny-31b");
        p.layers = layers;
        p.k_eq_v = false;
        const Gemma4Reference r = open_ref(write_gguf(p, make_weights(p, 41), temp_path("w.gguf")));
        const int64_t V = r.hparams().n_vocab;
        const std::vector<float> base = row(r.forward(toks), V, 15);
        std::vector<int32_t> far = toks, near = toks;
        far[7] = 999;
        near[8] = 999;
        const std::vector<float> far_l = row(r.forward(far), V, 15), near_l = row(r.forward(near), V, 15);
        if (layers[0] == 'S') EXPECT_EQ(far_l, base);
        else EXPECT_GT(ref::max_abs_diff(far_l, base), 1e-4);
        EXPECT_GT(ref::max_abs_diff(near_l, base), 1e-4);
    }
}

// ===== errors =================================================================================

TEST(Gemma4Reference, broken_files_give_errors_naming_the_problem) {
    const Preset p = preset("tiny-e2b");
    const Weights w = make_weights(p, 2);
    auto gguf = [&](Break b) {
        WriteOptions o;
        o.brk = b;
        return Gemma4Reference::open(write_gguf(p, w, temp_path("bad.gguf"), o));
    };
    auto hf = [&](Break b) {
        WriteOptions o;
        o.brk = b;
        return Gemma4Reference::open(write_hf(p, w, temp_path("bad"), o));
    };
    EXPECT_TRUE(fails_with(gguf({.arch = "llama"}), {"general.architecture", "llama", "gemma4"}));
    EXPECT_TRUE(fails_with(hf({.arch = "gemma3"}), {"model_type", "gemma3"}));
    EXPECT_TRUE(fails_with(gguf({.drop_key = "attention.sliding_window"}), "gemma4.attention.sliding_window"));
    EXPECT_TRUE(fails_with(gguf({.drop_key = "attention.head_count_kv"}), "gemma4.attention.head_count_kv"));
    EXPECT_TRUE(fails_with(hf({.drop_key = "sliding_window"}), "\"sliding_window\" missing"));
    EXPECT_TRUE(fails_with(gguf({.drop_tensor = "blk.1.attn_q.weight"}), {"blk.1.attn_q.weight", "not found"}));
    EXPECT_TRUE(fails_with(gguf({.drop_tensor = "rope_freqs.weight"}), {"rope_freqs.weight", "not found"}));
    EXPECT_TRUE(fails_with(hf({.drop_tensor = "model.language_model.layers.2.self_attn.k_proj.weight"}),
                           {"layers.2.self_attn.k_proj.weight", "not found"}));
    EXPECT_TRUE(fails_with(gguf({.pattern_extra = 1}), {"sliding_window_pattern", "6 entries", "5"}));
    EXPECT_TRUE(fails_with(hf({.pattern_extra = 2}), {"layer_types", "one type per layer"}));
    EXPECT_TRUE(fails_with(gguf({.ple_shape = true}), {"per_layer_token_embd.weight", "64", "80"}));
    EXPECT_TRUE(fails_with(hf({.ple_shape = true}), {"embed_tokens_per_layer.weight", "64", "80"}));
    // The same files unbroken load.
    EXPECT_TRUE(gguf({}).ok());
    EXPECT_TRUE(hf({}).ok());
}
