// SPDX-License-Identifier: Apache-2.0
// tests/models/ngram/ngram_branches_test.cpp: n-gram branches for draft trees
// (SeqDrafter::propose_branches; tandem/ext/drafter_branches.h): ngram-simple's
// distinct continuations of earlier key occurrences, most recent first; ngram-map-k4v's
// values, most frequent first and without the dominance rule; the chain drafters' one
// branch; and the host's merge of ranked branches into a tree within its shape
// (speculative/branch_tree.h).
#include <gtest/gtest.h>

#include "map_k.h"
#include "map_k4v.h"
#include "ngram_simple.h"
#include "speculative/branch_tree.h"

namespace ngram {
namespace {

using BranchTokens = std::vector<int32_t>;

NgramParams branch_params(uint32_t n, uint32_t m, uint32_t min_hits = 1) {
    NgramParams p;
    p.n = n;
    p.m = m;
    p.min_hits = min_hits;
    p.n_vocab = 1000;
    return p;
}

std::vector<BranchTokens> branches_of(SeqDrafter& d, const BranchTokens& h, size_t max_branches, size_t max_len) {
    BranchTokens tokens(max_branches * max_len, -7);
    std::vector<uint32_t> lens(max_branches, 0);
    const size_t n = d.propose_branches(h, max_len, tokens, lens);
    std::vector<BranchTokens> out;
    for (size_t b = 0; b < n; ++b)
        out.emplace_back(tokens.begin() + ptrdiff_t(b * max_len), tokens.begin() + ptrdiff_t(b * max_len + lens[b]));
    return out;
}

TEST(NgramBranches, simple_lists_distinct_continuations_most_recent_first_the_first_being_its_chain) {
    NgramSimple d(branch_params(2, 3));
    // key (1 2) occurs three times before the end, followed by 7 8 9, 5 6 6 and 7 8 9 again
    const BranchTokens h = {1, 2, 7, 8, 9, 0, 1, 2, 5, 6, 6, 0, 1, 2, 7, 8, 9, 0, 1, 2};
    const auto b = branches_of(d, h, 4, 3);
    ASSERT_EQ(b.size(), 2u) << "the repeated continuation is one branch";
    EXPECT_EQ(b[0], (BranchTokens{7, 8, 9}));
    EXPECT_EQ(b[1], (BranchTokens{5, 6, 6}));
    BranchTokens chain(3);
    chain.resize(d.propose(h, chain));
    EXPECT_EQ(chain, b[0]);
    EXPECT_EQ(branches_of(d, h, 1, 2), (std::vector<BranchTokens>{{7, 8}})) << "cut to the room given";
    EXPECT_TRUE(branches_of(d, {1, 2}, 4, 3).empty());
    EXPECT_TRUE(branches_of(d, {}, 4, 3).empty());
}

TEST(NgramBranches, map_k4v_lists_every_value_most_frequent_first_even_when_none_dominates) {
    NgramMapK4v d(branch_params(1, 2));
    // after 5: 1 2 (twice), 3 4 (once): no 3:1 dominance, so no chain, but two branches
    const BranchTokens h = {5, 1, 2, 5, 3, 4, 5, 1, 2, 9, 5};
    d.begin(h);
    BranchTokens chain(2);
    EXPECT_EQ(d.propose(h, chain), 0u);
    const auto b = branches_of(d, h, 4, 2);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0], (BranchTokens{1, 2}));
    EXPECT_EQ(b[1], (BranchTokens{3, 4}));
}

TEST(NgramBranches, chain_drafters_give_their_chain_as_the_one_branch) {
    NgramMapK d(branch_params(2, 3));
    const BranchTokens h = {1, 2, 7, 8, 9, 0, 1, 2, 5, 6, 6, 0, 1, 2};
    d.begin(h);
    const auto b = branches_of(d, h, 4, 3);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0], (BranchTokens{5, 6, 6}));
}

TEST(BranchTree, branches_share_prefixes_and_the_shape_cuts_them) {
    // three branches after root 100: 1 2 3, 1 4 5, 6 7 8
    const BranchTokens tokens = {1, 2, 3, 1, 4, 5, 6, 7, 8};
    const std::vector<uint32_t> lens = {3, 3, 3};
    const tdm::DraftTree t = tdm::tree_of_branches(100, tokens, 3, lens, {3, 2, 16});
    ASSERT_EQ(t.size(), 1u + 3 + 2 + 3);
    EXPECT_EQ(t.token(1), 1);
    EXPECT_EQ(t.parent(4), 1) << "the second branch grows under the shared first token";
    EXPECT_EQ(t.token(4), 4);
    EXPECT_EQ(t.parent(6), 0);
    EXPECT_EQ(t.max_depth(), 3u);
    // the first branch alone is its chain
    const tdm::DraftTree chain = tdm::tree_of_branches(100, tokens, 3, std::span(lens).first(1), {3, 2, 16});
    EXPECT_EQ(chain.size(), 4u);
    EXPECT_EQ(chain.max_depth(), 3u);
    // one child per node: only the first branch; two levels: depth 2; five nodes: cut
    EXPECT_EQ(tdm::tree_of_branches(100, tokens, 3, lens, {3, 1, 16}).size(), 4u);
    EXPECT_EQ(tdm::tree_of_branches(100, tokens, 3, lens, {2, 2, 16}).max_depth(), 2u);
    const tdm::DraftTree small = tdm::tree_of_branches(100, tokens, 3, lens, {3, 2, 5});
    EXPECT_EQ(small.size(), 5u);
    EXPECT_EQ(small.token(4), 4) << "the budget goes to the better branches first";
}

}  // namespace
}  // namespace ngram
