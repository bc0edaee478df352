// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_spec_sampling_test.cpp: issue 41's T > 0 requirement for the
// DFlash head (DESIGN invariant 2): speculative sampling with the head drafting its blocks
// leaves the target's distribution as it is, on the tiny Qwen3 target with the HF head
// (tests/support/head_sampling_check.h).
// Not here: greedy exactness and the head's drafts against the reference (dflash_e2e_test.cpp).
#include <gtest/gtest.h>

#include <random>

#include "dflash_fixture.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/head_sampling_check.h"

namespace tdm {
namespace {

class DflashSpecSampling : public test::DeviceTest {};

TEST_F(DflashSpecSampling, speculative_sampling_with_the_head_preserves_the_target_distribution) {
    const std::string dir = test::make_temp_dir("dflash-sampling");
    test::dflash::Target t = test::dflash::load_target(dir, 64);
    ASSERT_TRUE(t.model && t.kv);
    auto head = test::dflash::make_head(t, test::dflash::write_head(t.path, dir + "/head"));
    ASSERT_TRUE(head.ok()) << head.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    runner.set_hidden_point((*head)->hidden_point());

    std::mt19937_64 rng(41);
    std::vector<int32_t> prompt(9);
    for (auto& x : prompt) x = int32_t(3 + rng() % 400);
    const int runs = 120;  // about ten cells of enough mass; each run is 2 or 3 tokens (CI budget)
    const test::HeadSamplingCounts c =
        test::sample_with_head(runner, *t.kv, prompt, **head, t.model->info().n_vocab, runs);
    test::expect_same_distribution(c, runs);
}

}  // namespace
}  // namespace tdm
