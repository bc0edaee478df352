// SPDX-License-Identifier: Apache-2.0
// tests/speculative/tree_sampling_test.cpp: sampling (T > 0) on draft trees
// (speculative/tree_sampling.h) keeps the target's distribution: the round's committed
// tokens are distributed as plain sampling's. The target is a table (logits as a fixed
// function of the path drafted since the round's root, no model, no device) run through the
// sampler's own chain (temperature, top-k, top-p, min-p, repetition, presence and frequency
// penalties, which see the path's drafts); the round goes through verify() as the engine
// calls it. For trees of several shapes (two siblings at the root, deeper trees, a chain
// shaped tree, children drawn at random without replacement), the first token's and the
// first two tokens' joint distribution pass chi-square at fixed seeds (so deterministically).
// One-candidate rules: tests/sampling.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "sampling/multi_candidate.h"
#include "speculative/round.h"
#include "speculative/tree_sampling.h"
#include "support/sampling_stats.h"

namespace tdm {
namespace {

constexpr int kTableVocab = 8;
// Enough to fail a biased rule by far: with 20000 trials, SpecInfer's rule (q for every
// child) on children drawn without replacement gives chi2 about 150 against a bound of 37,
// and a residual that keeps a rejected child about 3000.
constexpr int kTrials = 20000;

// The table: logits after the path `drafts` (root excluded), a fixed function of it (and of
// `salt`: the draft model's table is another one).
std::vector<float> table_logits_after(std::span<const int32_t> drafts, uint64_t salt = 0) {
    uint64_t h = 1469598103934665603ull ^ salt;
    for (int32_t t : drafts) h = (h ^ uint64_t(t + 1)) * 1099511628211ull;
    Rng r(h);
    std::vector<float> l(kTableVocab);
    for (float& x : l) x = float(3.0 * r.uniform());
    return l;
}

SamplerParams target_params() {
    SamplerParams p;
    p.temperature = 0.9f;
    p.top_k = 6;  // two tokens of eight ruled out at every node
    p.top_p = 0.97f;
    p.min_p = 0.03f;
    p.repeat_penalty = 1.3f;
    p.repeat_last_n = 8;
    p.presence_penalty = 0.2f;
    p.frequency_penalty = 0.4f;
    p.seed = 1;
    return p;
}

const std::vector<int32_t> kHistory = {5, 1, 2};  // prompt {5}; the round's root is 2

Sampler make_sampler(SamplerParams p) {
    Sampler s = *Sampler::create(p);
    s.set_prompt_length(1);
    return s;
}

std::vector<int32_t> with(std::vector<int32_t> h, std::span<const int32_t> more) {
    h.insert(h.end(), more.begin(), more.end());
    return h;
}

// The proposal of a tree, as round.cpp's propose hands it to verify.
Proposal proposal_of(const DraftTree& t) {
    Proposal p;
    for (uint32_t i = 1; i < t.size(); ++i) {
        p.drafts.push_back(t.token(i));
        p.parents.push_back(t.parent(i));
    }
    for (uint32_t i = 0; i < t.size(); ++i)
        if (const TokenDistribution* q = t.children_drawn_from(i)) {
            p.drawn_from.resize(t.size());
            p.drawn_from[i] = *q;
        }
    p.winner = 0;
    return p;
}

// The drafts on node i's path, root excluded.
std::vector<int32_t> drafts_to(const DraftTree& t, uint32_t i) {
    std::vector<int32_t> d;
    for (uint32_t n : t.path(i))
        if (n != 0) d.push_back(t.token(n));
    return d;
}

struct Counts {
    std::vector<int64_t> first = std::vector<int64_t>(kTableVocab, 0);
    std::vector<int64_t> pair = std::vector<int64_t>(kTableVocab * kTableVocab, 0);
    int64_t accepted = 0;  // drafts, over every trial
};

// Runs kTrials rounds on trees from `grow` (called once per trial) and counts the first two
// committed tokens; when a round commits one token, the second is a plain step's (as the
// engine's next round would be, were it a plain step).
Counts run_rounds(const std::function<DraftTree()>& grow) {
    Sampler sampler = make_sampler(target_params());
    Counts c;
    std::vector<float> rows;
    for (int trial = 0; trial < kTrials; ++trial) {
        const DraftTree tree = grow();
        rows.clear();
        for (uint32_t i = 0; i < tree.size(); ++i) {
            const std::vector<float> l = table_logits_after(drafts_to(tree, i));
            rows.insert(rows.end(), l.begin(), l.end());
        }
        const Proposal prop = proposal_of(tree);
        const RoundResult r = verify(prop, VerifyRows{rows.data(), nullptr, kTableVocab}, sampler, false, kHistory);
        EXPECT_EQ(r.path.size(), r.accepted + 1);
        std::vector<int32_t> committed;
        for (uint32_t i = 0; i < r.accepted; ++i) committed.push_back(accepted_draft(prop, r, i));
        committed.push_back(r.next);
        if (committed.size() == 1) {
            const std::vector<int32_t> h = with(kHistory, committed);
            committed.push_back(sampler.sample(table_logits_after(committed).data(), kTableVocab, h));
        }
        c.accepted += r.accepted;
        ++c.first[size_t(committed[0])];
        ++c.pair[size_t(committed[0]) * kTableVocab + size_t(committed[1])];
    }
    return c;
}

// What plain sampling gives: p(a) for the first token and p(a) p(b | a) for the first two.
struct Expected {
    std::vector<double> first = std::vector<double>(kTableVocab, 0.0);
    std::vector<double> pair = std::vector<double>(kTableVocab * kTableVocab, 0.0);
};
Expected plain_sampling() {
    Sampler s = make_sampler(target_params());
    Expected e;
    TokenDistribution p1, p2;
    s.distribution(table_logits_after({}).data(), kTableVocab, kHistory, &p1);
    for (size_t i = 0; i < p1.size(); ++i) {
        const int32_t a = p1.ids[i];
        e.first[size_t(a)] = p1.probs[i];
        const int32_t drafts[] = {a};
        s.distribution(table_logits_after(drafts).data(), kTableVocab, with(kHistory, drafts), &p2);
        for (size_t j = 0; j < p2.size(); ++j) e.pair[size_t(a) * kTableVocab + size_t(p2.ids[j])] = double(p1.probs[i]) * p2.probs[j];
    }
    return e;
}

void expect_plain_sampling(const Counts& c) {
    const Expected e = plain_sampling();
    EXPECT_TRUE(test::fits(c.first, e.first)) << "first token";
    EXPECT_TRUE(test::fits(c.pair, e.pair)) << "first two tokens";
    EXPECT_GT(c.accepted, kTrials / 10) << "drafts were accepted";
}

DraftTree tree_of_parents(std::initializer_list<std::pair<uint32_t, int32_t>> nodes) {
    DraftTree t(kHistory.back());
    for (const auto& [parent, token] : nodes) EXPECT_TRUE(t.add(parent, token).ok());
    return t;
}

TEST(TreeSampling, two_siblings_at_the_root_keep_the_target_distribution) {
    const DraftTree t = tree_of_parents({{0, 3}, {0, 6}});
    expect_plain_sampling(run_rounds([&] { return t; }));
}

TEST(TreeSampling, a_deeper_tree_keeps_the_target_distribution_of_two_tokens) {
    // root -> 3 -> {0, 5 -> 2}, root -> 6 -> 1, root -> 4 (three siblings at the root, two
    // under the first, a branch of depth three)
    const DraftTree t = tree_of_parents({{0, 3}, {0, 6}, {0, 4}, {1, 0}, {1, 5}, {2, 1}, {5, 2}});
    ASSERT_EQ(t.max_depth(), 3u);
    expect_plain_sampling(run_rounds([&] { return t; }));
}

TEST(TreeSampling, a_chain_shaped_tree_keeps_the_target_distribution) {
    const DraftTree t = tree_of_parents({{0, 3}, {1, 4}, {2, 5}});
    expect_plain_sampling(run_rounds([&] { return t; }));
}

TEST(TreeSampling, children_drawn_without_replacement_keep_the_target_distribution) {
    // A draft model's table (another one) through a sampler of its own; three children of the
    // root and two under each of them, drawn from its q with its own generator.
    SamplerParams dp;
    dp.temperature = 1.3f;
    dp.top_k = 0;
    dp.top_p = 1.0f;
    dp.min_p = 0.0f;
    dp.seed = 2;
    Sampler draft = make_sampler(dp);
    Rng drafter_rng(3);
    auto children = [&](DraftTree& t, uint32_t node, int m) {
        const std::vector<int32_t> d = drafts_to(t, node);
        TokenDistribution q;
        draft.distribution(table_logits_after(d, 77).data(), kTableVocab, with(kHistory, d), &q);
        TokenDistribution left = q;
        for (int i = 0; i < m; ++i) {
            const int32_t tok = draw(left, drafter_rng);
            ASSERT_TRUE(t.add(node, tok).ok());
            const auto at = std::lower_bound(left.ids.begin(), left.ids.end(), tok) - left.ids.begin();
            left.ids.erase(left.ids.begin() + at);
            left.probs.erase(left.probs.begin() + at);
        }
        t.set_children_drawn_from(node, q);
    };
    const Counts c = run_rounds([&] {
        DraftTree t(kHistory.back());
        children(t, 0, 3);
        for (uint32_t n : {1u, 2u, 3u}) children(t, n, 2);
        return t;
    });
    expect_plain_sampling(c);
}

TEST(TreeSampling, a_fixed_seed_gives_the_same_rounds) {
    const DraftTree t = tree_of_parents({{0, 3}, {0, 6}, {1, 0}, {1, 5}});
    std::vector<float> rows;
    for (uint32_t i = 0; i < t.size(); ++i) {
        const std::vector<float> l = table_logits_after(drafts_to(t, i));
        rows.insert(rows.end(), l.begin(), l.end());
    }
    Sampler a = make_sampler(target_params()), b = make_sampler(target_params());
    const VerifyRows vr{rows.data(), nullptr, kTableVocab};
    for (int i = 0; i < 200; ++i) {
        const TreeVerdict x = accept_sampled(t, vr, a, kHistory), y = accept_sampled(t, vr, b, kHistory);
        ASSERT_EQ(x.path, y.path);
        ASSERT_EQ(x.next, y.next);
    }
}

}  // namespace
}  // namespace tdm
