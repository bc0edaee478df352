// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_assistant_e2e_test.cpp: the gemma4-assistant draft head of the gemma4
// plugin, run by the host as a stateless, constant-position head, on tiny targets and
// assistants written by the tests (gemma4_tiny*.h), checked against the independent assistant
// reference (tests/support/gemma4_assistant_reference.h) with gemma4_assistant_harness.h:
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
#include "gemma4_assistant_harness.h"
#include "gemma4_tiny_runtime.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"
#include "support/device_fixture.h"
#include "speculative/draft_head.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

namespace g4 = test::g4;
using g4::make_assistant;


// A target and its assistant, written in one layout by the tests' writers.
g4::AssistantPair write_pair_gemma4_assistant_e2e(const std::string& preset, bool hf, const g4::AssistantBreak& brk = {}) {
    const std::string dir = test::make_temp_dir("gemma4-asst");
    const g4::Preset tp = g4::preset(preset);
    const g4::Weights tw = g4::make_weights(tp, 31);
    const g4::AssistantPreset ap = g4::assistant_preset(preset, brk);
    const g4::AssistantWeights aw = g4::make_assistant_weights(ap, 32);
    g4::AssistantWriteOptions ao;
    ao.brk = brk;
    const std::string target = hf ? g4::write_hf(tp, tw, dir + "/target") : g4::write_gguf(tp, tw, dir + "/target.gguf");
    const std::string assistant =
        hf ? g4::write_assistant_hf(ap, aw, dir + "/assistant", ao) : g4::write_assistant_gguf(ap, aw, dir + "/a.gguf", ao);
    return g4::load_assistant_pair(target, assistant);
}

struct Case {
    const char* name;
    const char* preset;
    bool hf;
};

class Gemma4Assistant : public test::DeviceTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Gemma4Assistant, drafts_equal_the_reference_after_every_accepted_count) {
    g4::AssistantPair pair = write_pair_gemma4_assistant_e2e(GetParam().preset, GetParam().hf);
    g4::check_drafts_match_reference(pair, GetParam().name);
}

TEST_P(Gemma4Assistant, greedy_speculative_output_equals_plain_greedy_output) {
    g4::AssistantPair pair = write_pair_gemma4_assistant_e2e(GetParam().preset, GetParam().hf);
    g4::check_speculative_equals_plain(pair, GetParam().name, 4);
}

INSTANTIATE_TEST_SUITE_P(Families, Gemma4Assistant,
                         ::testing::Values(Case{"e2b_centroid_gguf", "tiny-e2b", false},
                                           Case{"e2b_centroid_hf", "tiny-e2b", true},
                                           Case{"31b_full_head_gguf", "tiny-31b", false},
                                           Case{"26b_full_head_hf", "tiny-26b", true}),
                         [](const auto& p) { return std::string(p.param.name); });

// The assistant picks its own tokens (TDM_OUTPUT_DRAFT_TOKENS), so a reduced draft
// vocabulary asked for each round (--draft-vocab auto) does not apply: after the first step
// built, the host asks no more (else each width would be a graph computing the same), and
// output stays exact.
class Gemma4AssistantVocab : public test::DeviceTest {};

TEST_F(Gemma4AssistantVocab, a_head_that_picks_its_own_tokens_is_asked_for_a_vocabulary_once) {
    g4::AssistantPair pair = write_pair_gemma4_assistant_e2e("tiny-e2b", false);
    ASSERT_TRUE(pair.kv);
    auto src = ModelSource::open(pair.assistant_path);
    ASSERT_TRUE(src.ok());
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head_source((*src)->architecture(), "gemma4");
    ASSERT_NE(e, nullptr);
    DraftHeadOptions o;
    o.auto_vocab = true;
    o.vocab_policy.smallest = 64;  // the tiny vocabulary (1024 ids): rungs 64, 96, 128, ...
    o.vocab_policy.min_tokens = 8;
    auto d = DraftHeadDrafter::create(*e, "assistant", std::shared_ptr<const ModelSource>(std::move(src).value()),
                                      *pair.model, *pair.kv, test::test_device(), test::test_pipelines(), o);
    ASSERT_TRUE(d.ok()) << d.error().message();
    EXPECT_TRUE((*d)->asks_vocab());
    Runner runner(*pair.model, *pair.kv, test::test_device(), test::test_pipelines());
    const int seq = *pair.kv->add_sequence();
    std::vector<int32_t> prompt;
    for (int i = 0; i < 30; ++i) prompt.push_back(3 + (i * 7) % 40);  // ids below 64
    GenerateParams gp;
    gp.max_tokens = 16;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    auto plain = generate(runner, nullptr, seq, prompt, gp, {});
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    ASSERT_TRUE(pair.kv->truncate(seq, 0).ok());
    Drafter* chain[] = {d->get()};
    SpecParams sp;
    sp.draft_max = 3;
    auto spec = generate_speculative(runner, nullptr, seq, prompt, gp, chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_GT(spec->stats.rounds, 1u);
    EXPECT_FALSE((*d)->asks_vocab());
    const auto rounds = (*d)->rounds_by_vocab();
    ASSERT_EQ(rounds.size(), 1u);
    EXPECT_EQ(rounds.begin()->first, 0u) << "its rounds drafted over every id";
}

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
        g4::AssistantPair pair = write_pair_gemma4_assistant_e2e("tiny-31b", false, b.brk);
        ASSERT_TRUE(pair.kv);
        auto d = make_assistant(pair);
        ASSERT_FALSE(d.ok());
        for (std::string_view n : b.needles)
            EXPECT_NE(d.error().message().find(n), std::string::npos) << "lacks " << n << ": " << d.error().message();
    }
}

TEST_F(Gemma4AssistantBadInput, a_target_file_as_the_assistant_says_what_to_pass) {
    g4::AssistantPair pair = write_pair_gemma4_assistant_e2e("tiny-31b", false);
    ASSERT_TRUE(pair.kv);
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("assistant", "gemma4");
    ASSERT_NE(e, nullptr);
    auto d = DraftHeadDrafter::create(*e, "assistant", pair.model->shared_source(), *pair.model, *pair.kv,
                                      test::test_device(), test::test_pipelines(), {});
    EXPECT_TRUE(test::fails_with(d, {"no Gemma 4 assistant", "-md"}));
}

TEST_F(Gemma4AssistantBadInput, a_missing_assistant_tensor_is_named) {
    g4::AssistantPair pair = write_pair_gemma4_assistant_e2e("tiny-e2b", false, {.drop_tensor = "masked_embd_ordering.weight"});
    ASSERT_TRUE(pair.kv);
    EXPECT_TRUE(test::fails_with(make_assistant(pair), "masked_embd_ordering.weight"));
}

}  // namespace
}  // namespace tdm
