// SPDX-License-Identifier: Apache-2.0
// tests/gemma4/gemma4_assistant_e2e_test.cpp: the gemma4-assistant draft head of the gemma4
// plugin, run by the host as a stateless, constant-position head, on tiny targets and
// assistants written by the tests (gemma4_tiny*.h), checked against the independent assistant
// reference (tests/support/gemma4_assistant_reference.h):
//   - its drafts after rounds that accepted 0..k drafts equal the reference's, for the
//     centroid-masked head (E2B-style) and the full tied head (31B/26B-style), GGUF and HF;
//   - greedy speculative output with it equals plain greedy output, on prompts and
//     generations that cross the sliding window;
//   both with the target's sliding-window layers in rings of 32 positions (rows_max 16), so
//   the assistant's reads of the target's window cross the ring's wrap;
//   - an assistant for another target (hidden size, vocabulary, head dims, window) is refused
//     with both values named; a target file passed as the assistant says what to pass.
#include <gtest/gtest.h>

#include "engine/generate.h"
#include "formats/expect_error.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"
#include "gemma4_tiny_runtime.h"
#include "plugin/plugin_loader.h"
#include "speculative/draft_head.h"
#include "speculative/scheduler.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/gemma4_assistant_reference.h"
#include "support/gemma4_reference.h"

namespace tdm {
namespace {

namespace g4 = test::g4;
using Tokens = std::vector<int32_t>;

using g4::greedy;
using g4::kRowsMax;
using g4::plugins;
using g4::random_tokens;

struct Pair {
    std::string target_path, assistant_path;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

// A target and its assistant, written in one layout.
Pair write_pair(const std::string& preset, bool hf, const g4::AssistantBreak& brk = {}) {
    Pair p;
    const std::string dir = test::make_temp_dir("gemma4-asst");
    const g4::Preset tp = g4::preset(preset);
    const g4::Weights tw = g4::make_weights(tp, 31);
    const g4::AssistantPreset ap = g4::assistant_preset(preset, brk);
    const g4::AssistantWeights aw = g4::make_assistant_weights(ap, 32);
    g4::AssistantWriteOptions ao;
    ao.brk = brk;
    p.target_path = hf ? g4::write_hf(tp, tw, dir + "/target") : g4::write_gguf(tp, tw, dir + "/target.gguf");
    p.assistant_path =
        hf ? g4::write_assistant_hf(ap, aw, dir + "/assistant", ao) : g4::write_assistant_gguf(ap, aw, dir + "/a.gguf", ao);
    auto m = Model::load(p.target_path, plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return p;
    p.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.rows_max = kRowsMax;
    auto kv = KvPool::create(test::test_device(), p.model->attention_layers(), kc, "test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) p.kv = std::move(kv).value();
    EXPECT_TRUE(!p.kv || p.kv->has_rings());
    return p;
}

Result<std::unique_ptr<DraftHeadDrafter>> make_assistant(const Pair& p) {
    return g4::load_assistant(p.assistant_path, *p.model, *p.kv);
}

struct Case {
    const char* name;
    const char* preset;
    bool hf;
};

class Gemma4Assistant : public test::DeviceTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Gemma4Assistant, drafts_equal_the_reference_after_every_accepted_count) {
    const Case c = GetParam();
    const uint32_t k = 3;
    Pair pair = write_pair(c.preset, c.hf);
    ASSERT_TRUE(pair.kv);
    auto tref = ref::Gemma4Reference::open(pair.target_path, {true});
    ASSERT_TRUE(tref.ok()) << tref.error().message();
    auto aref = ref::Gemma4AssistantReference::open(pair.assistant_path, *tref);
    ASSERT_TRUE(aref.ok()) << aref.error().message();
    Runner runner(*pair.model, *pair.kv, device(), pipelines());
    runner.set_hidden_point(TDM_HIDDEN_POST_NORM);
    const int seq = *pair.kv->add_sequence();
    auto asst = make_assistant(pair);
    ASSERT_TRUE(asst.ok()) << asst.error().message();
    EXPECT_TRUE((*asst)->stateless());
    const uint32_t E = pair.model->info().n_embd;

    const Tokens prompt = random_tokens(7, 11);  // longer than the window (8)
    const Tokens truth = tref->generate(prompt, 40);
    Tokens history = prompt;
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE((*asst)->begin(prompt).ok());
    ASSERT_TRUE((*asst)->observe({prompt, 0, out->hidden, E}).ok());
    size_t g = 0;
    history.push_back(truth[g++]);

    // the reference: the target's cache and hidden rows over everything committed (< p), then
    // one assistant round from the hidden of p - 1 and the token at p
    auto reference_drafts = [&](const Tokens& h) {
        const std::span<const int32_t> committed(h.data(), h.size() - 1);
        ref::Gemma4Cache cache;
        const ref::Gemma4Output fw = tref->run(committed, &cache);
        const int64_t p = int64_t(committed.size());
        const std::span<const float> h_prev(fw.hidden.data() + size_t(p - 1) * E, E);
        return aref->draft(*tref, cache, h_prev, h.back(), p, int(k));
    };

    for (uint32_t m : {2u, 0u, 3u, 1u, 3u, 0u, 2u}) {
        const uint32_t p = uint32_t(history.size() - 1);
        DraftRequest req{history, p, k, seq};
        auto drafts = (*asst)->draft(req);
        ASSERT_TRUE(drafts.ok()) << drafts.error().message();
        EXPECT_EQ(*drafts, reference_drafts(history)) << c.name << ": round at position " << p;
        // verify [last, oracle drafts with the (m+1)-th wrong], accept m
        std::vector<int32_t> vt = {history.back()}, vp = {int32_t(p)}, vr = {0};
        for (uint32_t j = 0; j < k; ++j) {
            vt.push_back(j == m ? (truth[g + j] + 1) % 1024 : truth[g + j]);
            vp.push_back(int32_t(p + 1 + j));
            vr.push_back(int32_t(j + 1));
        }
        auto v = runner.forward({vt, vp, seq, vr});
        ASSERT_TRUE(v.ok()) << v.error().message();
        for (uint32_t j = 0; j < m; ++j) ASSERT_EQ(v->argmax[j], truth[g + j]) << "oracle draft rejected";
        ASSERT_TRUE(pair.kv->truncate(seq, p + 1 + m).ok());
        std::vector<float> hid(v->hidden, v->hidden + size_t(m + 1) * E);
        ASSERT_TRUE((*asst)->observe({std::span<const int32_t>(vt.data(), m + 1), p, hid.data(), E}).ok());
        for (uint32_t j = 0; j < m; ++j) history.push_back(truth[g++]);
        history.push_back(truth[g++]);
        ASSERT_TRUE((*asst)->accept(history, k, m).ok());
    }
}

TEST_P(Gemma4Assistant, greedy_speculative_output_equals_plain_greedy_output) {
    const Case c = GetParam();
    Pair pair = write_pair(c.preset, c.hf);
    ASSERT_TRUE(pair.kv);
    Runner runner(*pair.model, *pair.kv, device(), pipelines());
    auto asst = make_assistant(pair);
    ASSERT_TRUE(asst.ok()) << asst.error().message();
    runner.set_hidden_point((*asst)->hidden_point());
    uint64_t drafted = 0;
    for (int i = 0; i < 4; ++i) {
        const Tokens prompt = random_tokens(200 + uint64_t(i), size_t(3 + 9 * i));
        int seq = *pair.kv->add_sequence();
        auto plain = generate(runner, nullptr, seq, prompt, greedy(40), {});
        pair.kv->free_sequence(seq);
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        Drafter* chain[] = {asst->get()};
        SpecParams sp;
        sp.draft_max = 1 + i;
        seq = *pair.kv->add_sequence();
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(40), chain, sp, {});
        pair.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << c.name << " prompt " << i;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(drafted, 0u) << "the assistant never drafted";
}

INSTANTIATE_TEST_SUITE_P(Families, Gemma4Assistant,
                         ::testing::Values(Case{"e2b_centroid_gguf", "tiny-e2b", false},
                                           Case{"e2b_centroid_hf", "tiny-e2b", true},
                                           Case{"31b_full_head_gguf", "tiny-31b", false},
                                           Case{"26b_full_head_hf", "tiny-26b", true}),
                         [](const auto& p) { return std::string(p.param.name); });

class Gemma4AssistantBadInput : public test::DeviceTest {};

TEST_F(Gemma4AssistantBadInput, an_assistant_for_another_target_is_refused_naming_both_values) {
    struct Bad {
        g4::AssistantBreak brk;
        std::vector<std::string_view> needles;
    };
    const Bad cases[] = {
        {{.backbone_delta = 16}, {"hidden size 80", "64"}},
        {{.vocab_delta = 32}, {"vocabulary", "1056", "1024"}},
        {{.head_dim_delta = 16}, {"head dims", "80", "64"}},
        {{.window_delta = 4}, {"sliding window is 12", "8"}},
    };
    for (const Bad& b : cases) {
        Pair pair = write_pair("tiny-31b", false, b.brk);
        ASSERT_TRUE(pair.kv);
        auto d = make_assistant(pair);
        ASSERT_FALSE(d.ok());
        for (std::string_view n : b.needles)
            EXPECT_NE(d.error().message().find(n), std::string::npos) << "lacks " << n << ": " << d.error().message();
    }
}

TEST_F(Gemma4AssistantBadInput, a_target_file_as_the_assistant_says_what_to_pass) {
    Pair pair = write_pair("tiny-31b", false);
    ASSERT_TRUE(pair.kv);
    const DraftHeadEntry* e = plugins().find_draft_head("assistant", "gemma4");
    ASSERT_NE(e, nullptr);
    auto d = DraftHeadDrafter::create(*e, "assistant", pair.model->shared_source(), *pair.model, *pair.kv,
                                      test::test_device(), test::test_pipelines(), {});
    EXPECT_TRUE(test::fails_with(d, {"no Gemma 4 assistant", "-md"}));
}

TEST_F(Gemma4AssistantBadInput, a_missing_assistant_tensor_is_named) {
    Pair pair = write_pair("tiny-e2b", false, {.drop_tensor = "masked_embd_ordering.weight"});
    ASSERT_TRUE(pair.kv);
    EXPECT_TRUE(test::fails_with(make_assistant(pair), "masked_embd_ordering.weight"));
}

}  // namespace
}  // namespace tdm
