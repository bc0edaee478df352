// SPDX-License-Identifier: Apache-2.0
// tests/sampling/multi_candidate_test.cpp: recursive rejection sampling over several
// candidates for one position (sampling/multi_candidate.h): whatever the candidates, the
// token is distributed as the target's p. Checked with chi-square at fixed seeds (so
// deterministically) for deterministic candidates (point masses), for candidates drawn from q
// without replacement (Sequoia's correction), and for candidates the target rules out.
// Tree walks on top of this rule: tests/speculative/tree_sampling_test.cpp.
#include "sampling/multi_candidate.h"

#include "support/sampling_stats.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tdm::test {
namespace {

// A random distribution over ids [0, n) without the ids in `zero`.
TokenDistribution random_target(Rng& rng, int n, std::vector<int32_t> zero = {}) {
    TokenDistribution d;
    std::vector<double> w;
    double sum = 0.0;
    for (int32_t i = 0; i < n; ++i) {
        if (std::find(zero.begin(), zero.end(), i) != zero.end()) continue;
        d.ids.push_back(i);
        w.push_back(0.2 + rng.uniform());  // no tiny bins: chi-square wants expected counts >= 5
        sum += w.back();
    }
    for (double x : w) d.probs.push_back(float(x / sum));
    return d;
}

std::vector<double> dense_probs(const TokenDistribution& d, int n) {
    std::vector<double> v(size_t(n), 0.0);
    for (size_t i = 0; i < d.size(); ++i) v[size_t(d.ids[i])] = d.probs[i];
    return v;
}

// m distinct tokens drawn from q without replacement.
std::vector<int32_t> draw_without_replacement(const TokenDistribution& q, int m, Rng& rng) {
    std::vector<int32_t> out;
    TokenDistribution left = q;
    for (int i = 0; i < m; ++i) {
        const int32_t t = draw(left, rng);
        out.push_back(t);
        const size_t at = size_t(std::lower_bound(left.ids.begin(), left.ids.end(), t) - left.ids.begin());
        left.ids.erase(left.ids.begin() + std::ptrdiff_t(at));
        left.probs.erase(left.probs.begin() + std::ptrdiff_t(at));
    }
    return out;
}

constexpr int kDecisions = 100000;

TEST(MultiCandidate, deterministic_candidates_give_the_target_distribution) {
    Rng rng(11);
    const int n = 8;
    // Token 7 is one the target rules out: it is tried, never accepted.
    const TokenDistribution p = random_target(rng, n, {7});
    const std::vector<int32_t> candidates = {3, 7, 0};
    std::vector<int64_t> counts(size_t(n), 0);
    int64_t accepted = 0;
    Rng r(5);
    for (int i = 0; i < kDecisions; ++i) {
        const CandidateDecision d = accept_among(p, candidates, nullptr, r);
        if (d.accepted >= 0) {
            ASSERT_EQ(d.token, candidates[size_t(d.accepted)]);
            ++accepted;
        }
        ++counts[size_t(d.token)];
    }
    EXPECT_EQ(counts[7], 0);
    EXPECT_TRUE(fits(counts, dense_probs(p, n)));
    // Point masses: a candidate stands whenever the target's own draw would have been it.
    EXPECT_NEAR(double(accepted) / kDecisions, double(p.prob(3)) + p.prob(0), 0.01);
}

TEST(MultiCandidate, candidates_drawn_without_replacement_give_the_target_distribution) {
    Rng rng(12);
    const int n = 9;
    const TokenDistribution p = random_target(rng, n, {1});
    const TokenDistribution q = random_target(rng, n, {8});  // proposes 1, never 8
    for (int m : {1, 2, 4}) {
        std::vector<int64_t> counts(size_t(n), 0);
        Rng r(100 + uint64_t(m));
        for (int i = 0; i < kDecisions; ++i) {
            const std::vector<int32_t> c = draw_without_replacement(q, m, r);
            const CandidateDecision d = accept_among(p, c, &q, r);
            if (d.accepted >= 0) {
                ASSERT_EQ(d.token, c[size_t(d.accepted)]);
            }
            ++counts[size_t(d.token)];
        }
        EXPECT_TRUE(fits(counts, dense_probs(p, n))) << m << " candidates";
    }
}

TEST(MultiCandidate, no_candidates_draw_from_the_target) {
    Rng rng(13);
    const int n = 6;
    const TokenDistribution p = random_target(rng, n);
    std::vector<int64_t> counts(size_t(n), 0);
    for (int i = 0; i < kDecisions / 4; ++i) {
        const CandidateDecision d = accept_among(p, {}, nullptr, rng);
        ASSERT_EQ(d.accepted, -1);
        ++counts[size_t(d.token)];
    }
    EXPECT_TRUE(fits(counts, dense_probs(p, n)));
}

TEST(MultiCandidate, a_greedy_target_keeps_exactly_its_argmax) {
    // Temperature 0 makes p a point mass: the argmax is accepted where it is a candidate,
    // and is the token where it is not, whatever q says.
    const TokenDistribution p{{4}, {1.0f}};
    const TokenDistribution q{{2, 4, 6}, {0.5f, 0.3f, 0.2f}};
    Rng rng(9);
    for (int i = 0; i < 200; ++i) {
        const std::vector<int32_t> with = {2, 6, 4}, without = {2, 6};
        const CandidateDecision a = accept_among(p, with, i % 2 ? &q : nullptr, rng);
        ASSERT_EQ(a.accepted, 2);
        ASSERT_EQ(a.token, 4);
        const CandidateDecision b = accept_among(p, without, i % 2 ? &q : nullptr, rng);
        ASSERT_EQ(b.accepted, -1);
        ASSERT_EQ(b.token, 4);
    }
}

TEST(MultiCandidate, the_same_seed_gives_the_same_decisions) {
    Rng rng(14);
    const TokenDistribution p = random_target(rng, 7), q = random_target(rng, 7);
    Rng a(3), b(3);
    for (int i = 0; i < 1000; ++i) {
        const std::vector<int32_t> c = {int32_t(i % 7), int32_t((i + 3) % 7)};
        const CandidateDecision x = accept_among(p, c, &q, a), y = accept_among(p, c, &q, b);
        ASSERT_EQ(x.accepted, y.accepted);
        ASSERT_EQ(x.token, y.token);
    }
}

}  // namespace
}  // namespace tdm::test
