// SPDX-License-Identifier: Apache-2.0
// tests/models/eagle3/eagle3_spec_sampling_test.cpp: issue 41's T > 0 requirement for the
// EAGLE-3 head (DESIGN invariant 2): speculative sampling with the head drafting leaves the
// target's distribution as it is, on the tiny Qwen3 target with the GGUF head
// (tests/support/head_sampling_check.h).
// Not here: greedy exactness and the head's drafts against the reference (eagle3_e2e_test.cpp).
#include <gtest/gtest.h>

#include <random>

#include "eagle3_targets.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/head_sampling_check.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

class Eagle3SpecSampling : public test::DeviceTest {};

TEST_F(Eagle3SpecSampling, speculative_sampling_with_the_head_preserves_the_target_distribution) {
    const std::string dir = test::make_temp_dir("eagle3-sampling");
    const std::string target = test::eagle3::write_target(test::eagle3::Target::qwen3, dir);
    auto m = Model::load(target, test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    const std::unique_ptr<Model> model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(device(), model->attention_layers(), kc, "eagle3-sampling");
    ASSERT_TRUE(kv.ok()) << kv.error().message();

    auto src = ModelSource::open(test::eagle3::write_head(target, false, dir));
    ASSERT_TRUE(src.ok()) << src.error().message();
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("eagle3", model->arch().desc->name);
    ASSERT_TRUE(e);
    DraftHeadOptions o;
    o.options = {{"n_vocab", std::to_string(model->info().n_vocab)},
                 {"target_n_layer", std::to_string(model->info().n_attention_layers)}};
    auto head = DraftHeadDrafter::create(*e, "eagle3", std::shared_ptr<const ModelSource>(std::move(src).value()),
                                         *model, **kv, device(), pipelines(), o);
    ASSERT_TRUE(head.ok()) << head.error().message();
    Runner runner(*model, **kv, device(), pipelines());
    runner.set_hidden_point((*head)->hidden_point());

    std::mt19937_64 rng(41);
    std::vector<int32_t> prompt(9);
    for (auto& x : prompt) x = int32_t(3 + rng() % 400);
    const int runs = 120;  // about ten cells of enough mass; each run is 2 or 3 tokens (CI budget)
    const test::HeadSamplingCounts c =
        test::sample_with_head(runner, **kv, prompt, **head, model->info().n_vocab, runs);
    test::expect_same_distribution(c, runs);
}

}  // namespace
}  // namespace tdm
