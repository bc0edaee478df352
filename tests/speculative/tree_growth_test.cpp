// SPDX-License-Identifier: Apache-2.0
// tests/speculative/tree_growth_test.cpp: growing a draft tree by cumulative draft
// probability (speculative/tree_growth.h), with logits made up from each node's path (no
// device): the tree keeps the shape's bounds, one child per node grows the argmax chain,
// each node's score is the product along its path, the kept nodes are the best scored, and
// an expanded node's slot mask holds its path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "speculative/tree_growth.h"

namespace tdm {
namespace {

constexpr uint32_t kVocab = 40;

// The logits after a path: reproducible from the path's tokens.
std::vector<float> logits_after(const TreeGrowth& g, uint32_t node) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t j = int32_t(node); j >= 0; j = g.nodes()[size_t(j)].parent)
        h = (h ^ uint64_t(g.nodes()[size_t(j)].token)) * 1099511628211ull;
    std::mt19937_64 rng(h);
    std::vector<float> l(kVocab);
    for (float& x : l) x = float(double(rng() >> 11) * 0x1.0p-53 * 6.0);
    return l;
}

TreeGrowth grow(const TreeShape& shape) {
    TreeGrowth g(7, shape);
    while (!g.frontier().empty()) {
        std::vector<float> rows;
        for (uint32_t n : g.frontier()) {
            const std::vector<float> l = logits_after(g, n);
            rows.insert(rows.end(), l.begin(), l.end());
        }
        g.expand(rows, kVocab);
    }
    return g;
}

TEST(TreeGrowth, trees_keep_the_shape_and_the_best_scored_nodes) {
    for (const TreeShape shape : {TreeShape{1, 4, 4}, TreeShape{3, 2, 6}, TreeShape{4, 3, 12}, TreeShape{6, 4, 64},
                                  TreeShape{8, 8, 64}, TreeShape{5, 1, 3}}) {
        const TreeGrowth g = grow(shape);
        const DraftTree t = g.tree();
        EXPECT_LE(t.size(), shape.nodes);
        EXPECT_LE(t.max_depth(), shape.steps);
        std::map<int32_t, uint32_t> children;
        for (uint32_t i = 1; i < t.size(); ++i) {
            EXPECT_LT(t.parent(i), int32_t(i)) << "parents first";
            ++children[t.parent(i)];
        }
        for (const auto& [p, n] : children) EXPECT_LE(n, shape.topk);
        // every grown node's score is the product of its softmax probabilities
        for (uint32_t i = 1; i < g.nodes().size(); ++i) {
            const GrownNode& n = g.nodes()[i];
            const std::vector<float> l = logits_after(g, uint32_t(n.parent));
            double sum = 0, top = *std::max_element(l.begin(), l.end());
            for (float x : l) sum += std::exp(double(x) - top);
            const double p = std::exp(double(l[size_t(n.token)]) - top) / sum;
            EXPECT_NEAR(n.score, g.nodes()[size_t(n.parent)].score * p, 1e-12);
        }
        // a full tree keeps the best scored of what was grown: none left out beats one kept
        double worst_kept = 1.0;
        std::vector<bool> kept(g.nodes().size());
        for (uint32_t i = 1; i < t.size(); ++i)
            for (uint32_t n = 1; n < g.nodes().size(); ++n)
                if (!kept[n] && g.nodes()[n].token == t.token(i) && g.nodes()[n].depth == t.depth(i)) {
                    std::vector<uint32_t> a = t.path(i), b;
                    for (int32_t j = int32_t(n); j >= 0; j = g.nodes()[size_t(j)].parent) b.insert(b.begin(), uint32_t(j));
                    bool same = a.size() == b.size();
                    for (size_t d = 0; same && d < a.size(); ++d) same = t.token(a[d]) == g.nodes()[b[d]].token;
                    if (!same) continue;
                    kept[n] = true;
                    worst_kept = std::min(worst_kept, g.nodes()[n].score);
                    break;
                }
        if (t.size() == shape.nodes) {
            for (uint32_t n = 1; n < g.nodes().size(); ++n) {
                if (!kept[n]) {
                    EXPECT_LE(g.nodes()[n].score, worst_kept) << "node " << n;
                }
            }
        }
    }
}

TEST(TreeGrowth, one_child_per_node_grows_the_argmax_chain) {
    const DraftTree t = grow({5, 1, 6}).tree();
    ASSERT_EQ(t.size(), 6u);
    TreeGrowth replay(7, {5, 1, 6});
    for (uint32_t i = 1; i < t.size(); ++i) {
        EXPECT_EQ(t.parent(i), int32_t(i - 1));
        const std::vector<float> l = logits_after(replay, replay.frontier()[0]);
        const int32_t argmax = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
        EXPECT_EQ(t.token(i), argmax) << "depth " << i;
        replay.expand(l, kVocab);
    }
}

TEST(TreeGrowth, an_expanded_nodes_slot_mask_holds_its_path) {
    TreeGrowth g(7, {5, 3, 20});
    while (!g.frontier().empty()) {
        for (uint32_t n : g.frontier()) {
            const uint64_t m = g.ancestor_slots(n);
            EXPECT_EQ(uint32_t(__builtin_popcountll(m)), g.nodes()[n].depth + 1) << "one slot per path node";
            EXPECT_EQ(63 - __builtin_clzll(m), g.nodes()[n].expanded) << "its own slot is the highest";
        }
        std::vector<float> rows;
        for (uint32_t n : g.frontier()) {
            const std::vector<float> l = logits_after(g, n);
            rows.insert(rows.end(), l.begin(), l.end());
        }
        g.expand(rows, kVocab);
    }
}

TEST(TreeGrowth, top_probabilities_rank_ties_by_id_and_sum_below_one) {
    const std::vector<float> l = {1.0f, 3.0f, 3.0f, -2.0f, NAN};
    const auto top = top_probabilities(l, 3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].first, 1);
    EXPECT_EQ(top[1].first, 2);
    EXPECT_EQ(top[2].first, 0);
    EXPECT_DOUBLE_EQ(top[0].second, top[1].second);
    EXPECT_LT(top[0].second + top[1].second + top[2].second, 1.0);
}

}  // namespace
}  // namespace tdm
