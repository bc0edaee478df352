// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_assistant_tree_test.cpp: the Gemma 4 assistant (a stateless,
// constant-position head) growing draft trees (--draft-tree; speculative/draft_head_tree.cpp):
// each level's nodes are independent rows at the round's position over the target's
// committed KV. Greedy speculative output with its trees equals plain greedy output on tiny
// targets whose sliding-window rings the trees' slots wrap, and every round TreeDrafterCheck
// (tests/support/tree_drafter_check.h) checks the tree's bounds and the chain inside a
// one-child tree against the head's chain drafts. (A head that picks its own tokens, as the
// centroid-masked one does, drafts chains: tests/models/eagle3 checks that fallback.) Five
// prompts: the checks are of the mechanism.
#include <gtest/gtest.h>

#include "engine/generate.h"
#include "gemma4_assistant_harness.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"
#include "gemma4_tiny_runtime.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/tree_drafter_check.h"

namespace tdm {
namespace {

namespace g4 = test::g4;

g4::AssistantPair write_tree_pair(const std::string& preset) {
    const std::string dir = test::make_temp_dir("gemma4-asst-tree");
    const g4::Preset tp = g4::preset(preset);
    const g4::AssistantPreset ap = g4::assistant_preset(preset, {});
    const std::string target = g4::write_gguf(tp, g4::make_weights(tp, 31), dir + "/target.gguf");
    const std::string assistant =
        g4::write_assistant_gguf(ap, g4::make_assistant_weights(ap, 32), dir + "/a.gguf", g4::AssistantWriteOptions{});
    return g4::load_assistant_pair(target, assistant);
}

struct TreeCase {
    const char* name;
    const char* preset;
    bool grows_trees;
};

class Gemma4AssistantTree : public test::DeviceTest, public ::testing::WithParamInterface<TreeCase> {};

TEST_P(Gemma4AssistantTree, trees_grown_by_the_assistant_give_plain_greedy_output) {
    g4::AssistantPair pair = write_tree_pair(GetParam().preset);
    ASSERT_TRUE(pair.kv);
    Runner runner(*pair.model, *pair.kv, test::test_device(), test::test_pipelines());
    auto asst = g4::make_assistant(pair);
    ASSERT_TRUE(asst.ok()) << asst.error().message();
    runner.set_hidden_point((*asst)->hidden_point());
    SpecParams sp;
    sp.draft_max = 5;
    sp.tree = {3, 3, 6};
    uint64_t tree_rounds = 0, rounds = 0, branched = 0;
    for (int i = 0; i < 5; ++i) {
        const std::vector<int32_t> prompt = g4::random_tokens(500 + uint64_t(i), size_t(3 + 6 * i));
        int seq = *pair.kv->add_sequence();
        auto plain = generate(runner, nullptr, seq, prompt, g4::greedy(24), {});
        pair.kv->free_sequence(seq);
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        test::TreeDrafterCheck check((*asst)->another(), (*asst)->another(), (*asst)->another());
        Drafter* chain[] = {&check};
        seq = *pair.kv->add_sequence();
        auto spec = generate_speculative(runner, nullptr, seq, prompt, g4::greedy(24), chain, sp, {});
        pair.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << GetParam().name << " prompt " << i;
        tree_rounds += spec->stats.tree_rounds;
        rounds += check.rounds();
        branched += check.branched();
    }
    EXPECT_GT(rounds, 10u);
    if (GetParam().grows_trees) {
        EXPECT_GT(branched, 0u) << "no tree branched";
        EXPECT_GT(tree_rounds, 0u) << "no round verified a tree";
    } else {
        EXPECT_EQ(branched, 0u) << "a head that picks its own tokens drafts chains";
        EXPECT_FALSE((*asst)->grows_trees());
    }
}

INSTANTIATE_TEST_SUITE_P(Heads, Gemma4AssistantTree,
                         ::testing::Values(TreeCase{"full_head", "tiny-31b", true}),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace tdm
