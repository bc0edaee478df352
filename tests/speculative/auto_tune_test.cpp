// SPDX-License-Identifier: Apache-2.0
// tests/speculative/auto_tune_test.cpp: the draft-length tuner on synthetic timings
// (no device): it drafts long when drafts are accepted and verifying is cheap,
// and stops drafting when nothing is accepted, even when a verify pass costs
// barely more than a plain step (the case a strong prior would keep drafting).
#include <gtest/gtest.h>

#include "speculative/auto_tune.h"

namespace tdm {
namespace {

// One simulated run: plain step 10 ms, a verify pass of k+1 tokens
// 10 * (1 + verify_per_draft * k) ms, no draft cost; `accept(k)` drafts accepted.
template <class Accept>
std::pair<int, int> simulate(AutoTune& t, double verify_per_draft, int steps, Accept accept) {
    int rounds = 0, plain = 0;
    for (int i = 0; i < steps; ++i) {
        const int k = t.choose(8);
        if (k == 0) {
            t.observe_plain(10.0);
            ++plain;
        } else {
            t.observe_round(k, accept(k), 0.0, 10.0 * (1.0 + verify_per_draft * k));
            ++rounds;
        }
    }
    return {rounds, plain};
}

TEST(AutoTune, drafts_the_longest_paying_length_when_everything_is_accepted) {
    AutoTune t(8);
    simulate(t, 0.05, 40, [](int k) { return k; });
    EXPECT_EQ(t.choose(8), 8);
    EXPECT_GT(t.acceptance(), 0.9);
    EXPECT_GT(t.predicted_speedup(8), 3.0);
}

TEST(AutoTune, stops_drafting_when_nothing_is_accepted_even_if_verifying_is_cheap) {
    AutoTune t(8, 24);
    auto [rounds, plain] = simulate(t, 0.05, 300, [](int) { return 0; });
    // a few rounds to learn, then only the periodic k = 1 probes
    EXPECT_LT(rounds, 40) << "kept drafting with zero acceptance";
    EXPECT_GT(plain, 250);
    EXPECT_LT(t.acceptance(), 0.05);
}

TEST(AutoTune, stops_drafting_when_nothing_is_accepted_even_if_verifying_costs_no_more_than_a_plain_step) {
    // On a tiny model a verify pass of k+1 tokens takes as long as a plain
    // step; only the acceptance estimate can switch drafting off.
    AutoTune t(8, 24);
    auto [rounds, plain] = simulate(t, 0.0, 400, [](int) { return 0; });
    EXPECT_LT(rounds, 60) << "kept drafting with zero acceptance";
    EXPECT_GT(plain, 330);
    EXPECT_LT(t.acceptance(), 0.02);
}

TEST(AutoTune, a_gain_within_timing_noise_is_not_worth_drafting) {
    AutoTune t(1);
    t.observe_plain(10.0);
    t.observe_plain(10.0);
    // one draft in 100 accepted and verify costs what a plain step does: a gain under 1%
    for (int i = 0; i < 400; ++i) t.observe_round(1, i % 100 == 0 ? 1 : 0, 0.0, 10.0);
    EXPECT_GT(t.predicted_speedup(1), 1.0);
    EXPECT_LT(t.predicted_speedup(1), 1.02);
    EXPECT_EQ(t.choose(1), 0);
}

TEST(AutoTune, never_drafts_where_verifying_costs_more_than_the_drafts_win) {
    AutoTune t(8);
    // half the drafts accepted, but a verify pass costs a plain step per draft
    auto [rounds, plain] = simulate(t, 1.0, 200, [](int k) { return k / 2; });
    EXPECT_LT(rounds, 40);
    EXPECT_GT(plain, 150);
}

TEST(AutoTune, the_first_round_of_each_length_does_not_count_for_timing) {
    AutoTune t(4);
    t.observe_plain(1000.0);  // first plain step: graph builds, ignored
    t.observe_plain(10.0);
    t.observe_round(2, 2, 0.0, 5000.0);  // first verify of width 3: ignored for timing
    t.observe_round(2, 2, 0.0, 12.0);
    EXPECT_GT(t.predicted_speedup(2), 1.5);
}

}  // namespace
}  // namespace tdm
