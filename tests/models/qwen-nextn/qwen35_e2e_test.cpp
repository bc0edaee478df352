// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/qwen35_e2e_test.cpp: Qwen3.5 (qwen35, qwen35moe) end to end
// through the qwen-nextn plugin on synthetic models the test builds in both
// layouts (GGUF as llama.cpp's converter writes it: +1 baked into the norms,
// tiled value heads; HF as the checkpoints ship: +1 convention, grouped heads,
// per-expert or fused experts), checked against the plain-C++ reference
// (tests/support/qwen35_reference.h).
//
// Every case checks the logits of every prompt position (prefilled in chunks,
// so recurrent state crosses chunk boundaries) and 24 greedy steps, each
// runtime token the reference's argmax for the same prefix (near-ties aside).
#include <gtest/gtest.h>

#include <cstring>

#include "engine/generate.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "support/device_fixture.h"
#include "support/plugin_registry.h"
#include "support/prefill.h"
#include "support/fixtures.h"
#include "support/qwen35_reference.h"
#include "support/teacher_check.h"

namespace tdm {
namespace {

struct LoadedQwen35E2e {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

LoadedQwen35E2e load_qwen35_e2e(const std::string& path, uint32_t n_checkpoints = 8, std::map<std::string, std::string> options = {}) {
    LoadedQwen35E2e l;
    ModelLoadOptions mo;
    mo.options = std::move(options);
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device(), mo);
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 128;
    kc.n_checkpoints = n_checkpoints;
    auto kv = KvPool::create(test::test_device(), l.model->attention_layers(), kc, "test", l.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) l.kv = std::move(kv).value();
    return l;
}

struct Qwen35Case {
    const char* name;
    const char* preset;  // tiny | tiny-moe
    DType type;
    bool hf;
    bool fused_experts;
};

std::string make_model(const Qwen35Case& c) {
    auto shape = synth::qwen35_preset(c.preset);
    EXPECT_TRUE(shape.ok());
    synth::Qwen35SynthOptions o;
    o.weight_type = c.type;
    o.seed = 5;
    o.hf_fused_experts = c.fused_experts;
    const std::string path = test::make_temp_dir("qwen35") + (c.hf ? "/hf" : "/m.gguf");
    const Status st = c.hf ? synth::synth_qwen35_hf(path, *shape, o) : synth::synth_qwen35_gguf(path, *shape, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 42, 9, 400, 3, 255, 128, 64, 77, 5};

class Qwen35EndToEnd : public test::DeviceTest, public ::testing::WithParamInterface<Qwen35Case> {};

TEST_P(Qwen35EndToEnd, vulkan_logits_and_greedy_tokens_match_the_reference) {
    const Qwen35Case c = GetParam();
    const std::string path = make_model(c);
    LoadedQwen35E2e l = load_qwen35_e2e(path);
    ASSERT_TRUE(l.kv);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    const int seq = *l.kv->add_sequence();
    ref::Qwen35RefOptions ro;
    ro.f16_kv = true;
    ro.f32_state = true;
    auto ref = ref::Qwen35Reference::open(path, ro);
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const uint32_t n_vocab = l.model->info().n_vocab;
    ASSERT_EQ(int64_t(n_vocab), ref->hparams().n_vocab);

    // (1) prompt logits at every position, prefilled in chunks of 5
    std::vector<float> got;
    auto st = test::prefill(runner, seq, kPrompt, 5, true,
                      [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    ASSERT_TRUE(st.ok()) << st.error().message();
    const auto want = ref->forward(kPrompt);
    ASSERT_EQ(got.size(), want.logits.size());
    EXPECT_LT(ref::nmse(got, want.logits), 1e-7) << c.name;

    // (2) greedy continuation, teacher-checked against the reference
    ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
    GenerateParams gp;
    gp.max_tokens = 24;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    auto gen = generate(runner, nullptr, seq, kPrompt, gp, {});
    ASSERT_TRUE(gen.ok()) << gen.error().message();
    ASSERT_EQ(gen->tokens.size(), 24u);
    std::vector<int32_t> all = kPrompt;
    all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
    const auto logits = ref->forward(all).logits;
    test::expect_greedy_follows_teacher(kPrompt, gen->tokens, logits, n_vocab, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    LayoutsAndTypes, Qwen35EndToEnd,
    ::testing::Values(Qwen35Case{"dense_gguf_f32", "tiny", DType::F32, false, false},
                      Qwen35Case{"dense_gguf_q8_0", "tiny", DType::Q8_0, false, false},
                      Qwen35Case{"dense_gguf_q4_K", "tiny", DType::Q4_K, false, false},
                      Qwen35Case{"dense_hf_bf16", "tiny", DType::BF16, true, false},
                      Qwen35Case{"moe_gguf_f16", "tiny-moe", DType::F16, false, false},
                      Qwen35Case{"moe_gguf_q8_0", "tiny-moe", DType::Q8_0, false, false},
                      Qwen35Case{"moe_hf_f32_per_expert", "tiny-moe", DType::F32, true, false},
                      Qwen35Case{"moe_hf_f16_fused", "tiny-moe", DType::F16, true, true}),
    [](const auto& p) { return std::string(p.param.name); });

// GGUF and HF copies of one model: the loader's conversions (+1, -exp, head
// order, expert stacking) make the same weights, so the same tokens come out.
TEST_F(Qwen35EndToEnd, gguf_and_hf_layouts_of_the_same_model_generate_identical_tokens) {
    for (const char* preset : {"tiny", "tiny-moe"}) {
        std::vector<std::vector<int32_t>> outs;
        for (bool hf : {false, true}) {
            LoadedQwen35E2e l = load_qwen35_e2e(make_model({"", preset, DType::F32, hf, false}));
            ASSERT_TRUE(l.kv);
            Runner runner(*l.model, *l.kv, device(), pipelines());
            GenerateParams gp;
            gp.max_tokens = 24;
            gp.sampling.temperature = 0;
            gp.ignore_eog = true;
            auto gen = generate(runner, nullptr, *l.kv->add_sequence(), kPrompt, gp, {});
            ASSERT_TRUE(gen.ok()) << gen.error().message();
            outs.push_back(gen->tokens);
        }
        EXPECT_EQ(outs[0], outs[1]) << preset;
    }
}

// The chunked (WY) form of the delta rule for prefill equals the recurrent form
// up to f32 rounding.
TEST_F(Qwen35EndToEnd, chunked_delta_rule_prefill_matches_the_recurrent_form) {
    const std::string path = make_model({"", "tiny", DType::F32, false, false});
    std::vector<std::vector<float>> logits;
    for (const char* chunk : {"0", "4"}) {
        LoadedQwen35E2e l = load_qwen35_e2e(path, 8, {{"gdn_chunk", chunk}});
        ASSERT_TRUE(l.kv);
        Runner runner(*l.model, *l.kv, device(), pipelines());
        std::vector<float> got;
        auto st = test::prefill(runner, *l.kv->add_sequence(), kPrompt, 64, true,
                          [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
        ASSERT_TRUE(st.ok()) << st.error().message();
        logits.push_back(std::move(got));
    }
    EXPECT_LT(ref::nmse(logits[1], logits[0]), 1e-10);
    EXPECT_NE(logits[1], logits[0]);  // the option did select the other kernel
}

// Speculative rollback on the device (issue 6): a verify pass of k+1 tokens
// writes the state after every row into checkpoints; accepting m drafts
// truncates to that length. For every m, the conv and SSM states and the next
// logits must equal, bit for bit, those of a plain token-by-token decode of the
// accepted tokens.
TEST_F(Qwen35EndToEnd, verify_then_rollback_for_every_accepted_count_equals_plain_decode_bit_for_bit) {
    for (const char* preset : {"tiny", "tiny-moe"}) {
        const std::string path = make_model({"", preset, DType::Q8_0, false, false});
        const uint32_t k = 4;
        LoadedQwen35E2e a = load_qwen35_e2e(path, k + 2);
        LoadedQwen35E2e b = load_qwen35_e2e(path, k + 2);
        ASSERT_TRUE(a.kv && b.kv);
        Runner ra(*a.model, *a.kv, device(), pipelines());
        Runner rb(*b.model, *b.kv, device(), pipelines());
        const int sa = *a.kv->add_sequence(), sb = *b.kv->add_sequence();
        const std::vector<int32_t> tail = {11, 200, 33, 7, 91};  // last token + k drafts
        const uint32_t n_prompt = uint32_t(kPrompt.size());
        for (uint32_t m = 0; m <= k; ++m) {
            // a: prefill, one verify pass of k+1 rows, roll back to m accepted drafts
            ASSERT_TRUE(a.kv->truncate(sa, 0).ok());
            ASSERT_TRUE(test::prefill(ra, sa, kPrompt, 64, false, {}).ok());
            std::vector<int32_t> pos(k + 1), rows(k + 1);
            for (uint32_t i = 0; i <= k; ++i) pos[i] = int32_t(n_prompt + i), rows[i] = int32_t(i);
            auto vr = ra.forward({tail, pos, sa, rows});
            ASSERT_TRUE(vr.ok()) << vr.error().message();
            ASSERT_TRUE(a.kv->truncate(sa, n_prompt + 1 + m).ok()) << "m = " << m;
            // b: the same tokens one at a time
            ASSERT_TRUE(b.kv->truncate(sb, 0).ok());
            ASSERT_TRUE(test::prefill(rb, sb, kPrompt, 64, false, {}).ok());
            for (uint32_t i = 0; i <= m; ++i) {
                const int32_t t = tail[i], p = int32_t(n_prompt + i), r = 0;
                ASSERT_TRUE(rb.forward({{&t, 1}, {&p, 1}, sb, {&r, 1}}).ok());
            }
            for (uint32_t s = 0; s < a.kv->n_states(); ++s) {
                auto x = a.kv->read_state(sa, s);
                auto y = b.kv->read_state(sb, s);
                ASSERT_TRUE(x.ok() && y.ok());
                ASSERT_EQ(x->size(), y->size());
                EXPECT_EQ(std::memcmp(x->data(), y->data(), x->size() * 4), 0)
                    << preset << ": state " << s << " differs after accepting " << m << " of " << k;
            }
            // the next step (attention reads the truncated KV) agrees bit for bit
            const int32_t t = 123, p = int32_t(n_prompt + 1 + m), r = 0;
            auto oa = ra.forward({{&t, 1}, {&p, 1}, sa, {&r, 1}});
            ASSERT_TRUE(oa.ok()) << oa.error().message();
            std::vector<float> la(oa->logits, oa->logits + a.model->info().n_vocab);
            auto ob = rb.forward({{&t, 1}, {&p, 1}, sb, {&r, 1}});
            ASSERT_TRUE(ob.ok());
            EXPECT_EQ(std::memcmp(la.data(), ob->logits, la.size() * 4), 0) << preset << ": m = " << m;
        }
    }
}

TEST_F(Qwen35EndToEnd, rolling_back_further_than_the_checkpoints_reach_is_an_error) {
    LoadedQwen35E2e l = load_qwen35_e2e(make_model({"", "tiny", DType::F32, false, false}), 3);
    ASSERT_TRUE(l.kv);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    const int seq = *l.kv->add_sequence();
    ASSERT_TRUE(test::prefill(runner, seq, kPrompt, 4, false, {}).ok());  // chunks keep only their last state
    const Status st = l.kv->truncate(seq, uint32_t(kPrompt.size()) - 2);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("checkpoint"), std::string::npos) << st.error().message();
}

}  // namespace
}  // namespace tdm
