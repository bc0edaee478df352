// SPDX-License-Identifier: Apache-2.0
// tests/speculative/draft_model_tree_test.cpp: a draft model growing draft trees
// (--draft-tree; speculative/draft_model_tree.cpp): one pass per level whose rows attend to
// the draft model's committed KV and their own ancestors. On a synthetic Qwen3 target and a
// draft model perturbed from it, greedy speculative output with its trees equals plain
// greedy output, and every round TreeDrafterCheck (tests/support/tree_drafter_check.h)
// checks the tree's bounds, the chain inside a one-child tree against the model's chain
// drafts, and that rejected branches left no trace in its KV. Four prompts: the checks are
// of the mechanism.
#include <gtest/gtest.h>

#include <random>

#include "engine/generate.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_model.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"
#include "support/tree_drafter_check.h"

namespace tdm {
namespace {

struct TreeModel {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

TreeModel load_tree_model(const std::string& path) {
    TreeModel l;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    auto kv = KvPool::create(test::test_device(), l.model->attention_layers(), kc, "tree-model");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) l.kv = std::move(kv).value();
    return l;
}

std::unique_ptr<Drafter> tree_draft_model(const std::string& path) {
    TreeModel d = load_tree_model(path);
    return std::make_unique<DraftModelDrafter>(std::move(d.model), std::move(d.kv), test::test_device(),
                                               test::test_pipelines());
}

class DraftModelTree : public test::DeviceTest {};

TEST_F(DraftModelTree, trees_grown_by_a_draft_model_give_plain_greedy_output) {
    const std::string dir = test::make_temp_dir("draft-model-tree");
    auto shape = synth::qwen3_preset("tiny");
    ASSERT_TRUE(shape.ok());
    synth::Qwen3SynthOptions so;
    so.weight_type = DType::Q8_0;
    so.seed = 11;
    const std::string target = dir + "/target.gguf", draft = dir + "/draft.gguf";
    ASSERT_TRUE(synth::synth_qwen3_gguf(target, *shape, so).ok());
    ASSERT_TRUE(synth::synth_qwen3_gguf(draft, *shape, synth::qwen3_draft_options(so, 0.03f)).ok());
    TreeModel t = load_tree_model(target);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    test::TreeDrafterCheck check(tree_draft_model(draft), tree_draft_model(draft), tree_draft_model(draft));
    Drafter* chain[] = {&check};
    SpecParams sp;
    sp.draft_max = 7;
    sp.tree = {4, 3, 8};
    GenerateParams gp;
    gp.max_tokens = 20;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    uint64_t tree_rounds = 0, accepted = 0, drafted = 0;
    for (int i = 0; i < 4; ++i) {
        std::mt19937_64 rng(5100 + uint64_t(i));
        std::vector<int32_t> prompt(4 + size_t(i) * 3);
        for (auto& tok : prompt) tok = int32_t(rng() % 400);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, gp, {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, gp, chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        tree_rounds += spec->stats.tree_rounds;
        accepted += spec->stats.accepted;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(check.rounds(), 10u);
    EXPECT_GT(check.branched(), 0u) << "no tree branched";
    EXPECT_GT(tree_rounds, 0u) << "no round verified a tree";
    EXPECT_GT(accepted, 0u);
    EXPECT_LT(accepted, drafted);
}

}  // namespace
}  // namespace tdm
