// SPDX-License-Identifier: Apache-2.0
// tests/speculative/tree_choice_test.cpp: the tree-or-chain choice (speculative/tree_choice.h)
// on simulated tokens per round and pass costs (no device): forced means trees, a CPU
// device means chains, and on a GPU the measured tokens per millisecond decide, with the
// other kind rechecked now and then so that a change of regime is followed.
#include <gtest/gtest.h>

#include "speculative/tree_choice.h"

namespace tdm {
namespace {

// Runs `rounds` rounds of 12 rows: a tree round yields tree_tokens in tree_ms, a chain
// round chain_tokens in chain_ms. Returns the tree rounds among them.
int simulate_choice(TreeChoice& c, int rounds, double tree_tokens, double tree_ms, double chain_tokens, double chain_ms) {
    int trees = 0;
    for (int i = 0; i < rounds; ++i) {
        const bool tree = c.choose(12);
        trees += tree;
        c.observe(tree, 12, uint32_t(tree ? tree_tokens : chain_tokens), tree ? tree_ms : chain_ms);
    }
    return trees;
}

TEST(TreeChoice, forced_always_grows_trees_and_a_cpu_device_never_does) {
    TreeChoice forced(/*cpu_device=*/true, /*forced=*/true);
    EXPECT_EQ(simulate_choice(forced, 20, 1, 100, 5, 1), 20);
    EXPECT_EQ(forced.chains_chosen(), 0u);
    TreeChoice cpu(/*cpu_device=*/true, /*forced=*/false);
    EXPECT_EQ(simulate_choice(cpu, 20, 5, 1, 1, 100), 0) << "a tree row costs an attention pass of its own there";
    EXPECT_EQ(cpu.chains_chosen(), 20u);
}

TEST(TreeChoice, on_a_gpu_trees_win_when_their_tokens_outweigh_their_cost) {
    TreeChoice c(false, false);
    // trees: 4 tokens per round at 12 ms; chains: 2.5 tokens at 10 ms
    const int trees = simulate_choice(c, 100, 4, 12, 2.5, 10);
    EXPECT_GT(trees, 85) << "a few chain rounds: the warm-up and the rechecks";
    EXPECT_GT(c.rate(true, 12), c.rate(false, 12));
    EXPECT_EQ(c.chains_chosen(), uint64_t(100 - trees));
}

TEST(TreeChoice, on_a_gpu_chains_win_when_a_tree_pass_costs_more_than_its_extra_tokens) {
    TreeChoice c(false, false);
    // trees: 3 tokens at 20 ms (a slow tree kernel); chains: 2.5 tokens at 10 ms
    EXPECT_LT(simulate_choice(c, 100, 3, 20, 2.5, 10), 15);
    EXPECT_LT(c.rate(true, 12), c.rate(false, 12));
}

TEST(TreeChoice, a_change_of_regime_is_followed_through_the_rechecks) {
    TreeChoice c(false, false);
    EXPECT_LT(simulate_choice(c, 60, 2, 10, 3, 10), 15);  // branches that do not help
    EXPECT_GT(simulate_choice(c, 120, 5, 10, 2, 10), 90) << "branches that start agreeing";
}

TEST(TreeChoice, an_unmeasured_width_is_estimated_from_the_nearest_measured_one) {
    TreeChoice c(false, false);
    for (int i = 0; i < 5; ++i) {
        c.observe(true, 8, 4, 8.0);
        c.observe(false, 8, 2, 8.0);
    }
    EXPECT_DOUBLE_EQ(c.rate(true, 16), 4.0 / 16.0);
    EXPECT_DOUBLE_EQ(c.rate(false, 8), 2.0 / 8.0);
    EXPECT_TRUE(c.choose(16));
}

}  // namespace
}  // namespace tdm
