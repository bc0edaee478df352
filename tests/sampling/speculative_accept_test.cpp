// SPDX-License-Identifier: Apache-2.0
// tests/sampling/speculative_accept_test.cpp: the rejection rule of speculative sampling
// (DESIGN invariant 2): whatever the drafter proposes, the emitted token is distributed as
// the target's p. Checked statistically with fixed seeds (so deterministically), for a
// sampled drafter q, a greedy drafter (point mass), and supports that differ.
// To add a case: pick p and q as TokenDistributions and call expect_target_distribution.
#include "sampling/sampler.h"

#include "support/sampling_stats.h"

#include <gtest/gtest.h>

#include <map>

namespace tdm::test {
namespace {

// A random distribution over ids [0, n) with the given ids forced to 0 (dropped).
TokenDistribution random_dist(Rng& rng, int n, std::vector<int32_t> zero = {}) {
    TokenDistribution d;
    double sum = 0.0;
    std::vector<double> w;
    for (int32_t i = 0; i < n; ++i) {
        if (std::find(zero.begin(), zero.end(), i) != zero.end()) continue;
        d.ids.push_back(i);
        w.push_back(0.2 + rng.uniform());  // no tiny bins: chi-square wants expected counts >= 5
        sum += w.back();
    }
    for (double x : w) d.probs.push_back(static_cast<float>(x / sum));
    return d;
}

std::vector<double> dense(const TokenDistribution& d, int n) {
    std::vector<double> v(static_cast<size_t>(n));
    for (size_t i = 0; i < d.size(); ++i) v[static_cast<size_t>(d.ids[i])] = d.probs[i];
    return v;
}

double overlap(const TokenDistribution& p, const TokenDistribution& q, int n) {
    const std::vector<double> a = dense(p, n), b = dense(q, n);
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += std::min(a[static_cast<size_t>(i)], b[static_cast<size_t>(i)]);
    return s;
}

struct Tally {
    std::vector<int64_t> counts;
    int64_t accepted = 0;
};

// Draft from q (or always `fixed_draft` for a greedy drafter), decide, count the outcome.
Tally run_rounds(const TokenDistribution& p, const TokenDistribution* q, int32_t fixed_draft, int n_vocab,
                 int rounds, uint64_t seed) {
    Rng rng(seed);
    Tally t;
    t.counts.assign(static_cast<size_t>(n_vocab), 0);
    for (int i = 0; i < rounds; ++i) {
        SpecDecision d;
        if (q) {
            const int32_t x = draw(*q, rng);
            d = speculative_accept(p, *q, x, rng);
            if (d.accepted) {
                EXPECT_EQ(d.token, x);
            }
        } else {
            d = speculative_accept(p, fixed_draft, rng);
            if (d.accepted) {
                EXPECT_EQ(d.token, fixed_draft);
            }
        }
        t.accepted += d.accepted;
        ++t.counts[static_cast<size_t>(d.token)];
    }
    return t;
}

constexpr int kRounds = 200000;

TEST(SpeculativeAccept, output_follows_the_target_distribution_for_a_sampled_drafter) {
    Rng rng(2024);
    const int n = 8;
    const TokenDistribution p = random_dist(rng, n);
    const TokenDistribution q = random_dist(rng, n);
    const Tally t = run_rounds(p, &q, -1, n, kRounds, 1);
    EXPECT_TRUE(fits(t.counts, dense(p, n)));
    // The acceptance rate of the rule is sum_x min(p(x), q(x)).
    EXPECT_NEAR(static_cast<double>(t.accepted) / kRounds, overlap(p, q, n), 0.01);
}

TEST(SpeculativeAccept, output_follows_the_target_when_the_supports_differ) {
    Rng rng(77);
    const int n = 10;
    // The drafter proposes tokens 0 and 1 the target never emits, and never proposes 8, 9.
    const TokenDistribution p = random_dist(rng, n, {0, 1});
    const TokenDistribution q = random_dist(rng, n, {8, 9});
    const Tally t = run_rounds(p, &q, -1, n, kRounds, 2);
    EXPECT_EQ(t.counts[0] + t.counts[1], 0);
    EXPECT_TRUE(fits(t.counts, dense(p, n)));
}

TEST(SpeculativeAccept, output_follows_the_target_for_a_greedy_drafter) {
    Rng rng(31337);
    const int n = 6;
    const TokenDistribution p = random_dist(rng, n);
    const Tally t = run_rounds(p, nullptr, /*fixed_draft=*/3, n, kRounds, 3);
    EXPECT_TRUE(fits(t.counts, dense(p, n)));
    EXPECT_NEAR(static_cast<double>(t.accepted) / kRounds, p.prob(3), 0.01);
}

TEST(SpeculativeAccept, identical_distributions_always_accept) {
    Rng rng(4);
    const TokenDistribution p = random_dist(rng, 5);
    for (int i = 0; i < 1000; ++i) {
        const int32_t x = draw(p, rng);
        const SpecDecision d = speculative_accept(p, p, x, rng);
        ASSERT_TRUE(d.accepted);
        ASSERT_EQ(d.token, x);
    }
}

TEST(SpeculativeAccept, a_greedy_target_keeps_exactly_its_argmax) {
    // Temperature 0 makes p a point mass: the rule reduces to "accept iff x is the argmax,
    // else emit the argmax", which is what invariant 1 requires of greedy decoding.
    const TokenDistribution p{{4}, {1.0f}};
    const TokenDistribution q{{2, 4, 6}, {0.5f, 0.3f, 0.2f}};
    Rng rng(9);
    for (int32_t x : {2, 4, 6}) {
        for (int i = 0; i < 100; ++i) {
            const SpecDecision d = speculative_accept(p, q, x, rng);
            ASSERT_EQ(d.accepted, x == 4);
            ASSERT_EQ(d.token, 4);
        }
    }
    for (int32_t x : {1, 4}) {
        const SpecDecision d = speculative_accept(p, x, rng);
        EXPECT_EQ(d.accepted, x == 4);
        EXPECT_EQ(d.token, 4);
    }
}

TEST(SpeculativeAccept, a_draft_the_target_rules_out_is_always_replaced) {
    const TokenDistribution p{{0, 2}, {0.25f, 0.75f}};
    const TokenDistribution q{{0, 1, 2}, {0.2f, 0.6f, 0.2f}};
    Rng rng(10);
    std::map<int32_t, int> seen;
    for (int i = 0; i < 1000; ++i) {
        const SpecDecision d = speculative_accept(p, q, 1, rng);
        ASSERT_FALSE(d.accepted);
        ++seen[d.token];
    }
    // Residual max(0, p - q) = {0: .05, 2: .55}: both appear, token 1 never.
    EXPECT_EQ(seen.count(1), 0u);
    EXPECT_GT(seen[0], 0);
    EXPECT_GT(seen[2], seen[0]);
}

TEST(SpeculativeAccept, works_on_the_distributions_the_sampler_reports) {
    // End to end with real chains: the target with llama.cpp's defaults, the drafter with
    // other settings on other logits; the emitted tokens follow the target's distribution.
    const std::vector<float> target_logits = {2.0f, 1.0f, 0.5f, 1.8f, -0.5f, 0.9f, 1.2f};
    const std::vector<float> draft_logits = {1.0f, 1.5f, 0.0f, 2.0f, 0.2f, 0.3f, 1.1f};
    SamplerParams tp;
    tp.seed = 1;
    tp.top_k = 5;
    tp.top_p = 1.0f;
    tp.min_p = 0.0f;
    SamplerParams dp;
    dp.seed = 2;
    dp.temperature = 1.2f;
    dp.top_p = 1.0f;
    dp.min_p = 0.0f;
    auto target = Sampler::create(tp);
    auto drafter = Sampler::create(dp);
    ASSERT_TRUE(target.ok() && drafter.ok());
    TokenDistribution p, q;
    target->distribution(target_logits.data(), 7, {}, &p);
    drafter->distribution(draft_logits.data(), 7, {}, &q);
    ASSERT_EQ(p.size(), 5u);
    const Tally t = run_rounds(p, &q, -1, 7, kRounds, 5);
    EXPECT_TRUE(fits(t.counts, dense(p, 7)));
}

}  // namespace
}  // namespace tdm::test
