// SPDX-License-Identifier: Apache-2.0
// tests/support/tree_check.cpp
#include "support/tree_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace tdm::test {
namespace {

// One row of `seq` at `pos`: its logits (n_vocab floats).
std::vector<float> decode(Runner& runner, int seq, int32_t token, int32_t pos) {
    const int32_t row = 0;
    auto o = runner.forward({std::span<const int32_t>(&token, 1), std::span<const int32_t>(&pos, 1), seq,
                             std::span<const int32_t>(&row, 1)});
    EXPECT_TRUE(o.ok()) << o.error().message();
    if (!o.ok()) return {};
    return std::vector<float>(o->logits, o->logits + runner.model().info().n_vocab);
}

bool same_bits(const float* a, const float* b, uint32_t n) { return std::memcmp(a, b, size_t(n) * 4) == 0; }

// Nodes in depth-first preorder: when a node comes, the nodes last decoded at the
// depths above it are its ancestors.
std::vector<uint32_t> preorder(const DraftTree& tree) {
    std::vector<uint32_t> order, stack = {0};
    while (!stack.empty()) {
        const uint32_t i = stack.back();
        stack.pop_back();
        order.push_back(i);
        for (uint32_t c = tree.size(); c-- > i + 1;)
            if (tree.parent(c) == int32_t(i)) stack.push_back(c);
    }
    return order;
}

// The tree's pass at `base` (after `beside`'s row): every row's logits and argmax.
struct TreePass {
    std::vector<float> logits;
    std::vector<int32_t> argmax;
};
TreePass run_tree(Runner& runner, int seq, int32_t base, const DraftTree& tree, std::optional<BesideRow> beside) {
    std::vector<int32_t> tokens, pos, seqs;
    std::vector<KvTreeRow> rows;
    if (beside) {
        tokens.push_back(beside->token);
        pos.push_back(beside->pos);
        seqs.push_back(beside->seq);
        rows.push_back({});
    }
    const std::vector<int32_t> tt = tree.tokens(), tp = tree.positions(base);
    const std::vector<KvTreeRow> tr = tree.kv_rows(base);
    tokens.insert(tokens.end(), tt.begin(), tt.end());
    pos.insert(pos.end(), tp.begin(), tp.end());
    seqs.insert(seqs.end(), tree.size(), seq);
    rows.insert(rows.end(), tr.begin(), tr.end());
    std::vector<int32_t> out(tokens.size());
    std::iota(out.begin(), out.end(), 0);
    ForwardInput in{tokens, pos, seq, out};
    in.seqs = seqs;
    in.tree = rows;
    auto o = runner.forward(in);
    EXPECT_TRUE(o.ok()) << o.error().message();
    if (!o.ok()) return {};
    const size_t n_vocab = runner.model().info().n_vocab;
    return {std::vector<float>(o->logits, o->logits + out.size() * n_vocab),
            std::vector<int32_t>(o->argmax, o->argmax + out.size())};
}

}  // namespace

DraftTree random_tree(uint64_t seed, int32_t root, uint32_t n, int32_t lo, int32_t hi) {
    std::mt19937_64 rng(seed);
    DraftTree t(root);
    for (uint32_t i = 1; i < n; ++i) {
        const uint32_t parent = (rng() % 2) ? t.size() - 1 : uint32_t(rng() % t.size());
        EXPECT_TRUE(t.add(parent, lo + int32_t(rng() % uint64_t(hi - lo))).ok());
    }
    return t;
}

void expect_tree_rows_equal_path_decoding(Runner& runner, int seq, int32_t base, const DraftTree& tree,
                                          std::optional<BesideRow> beside) {
    const uint32_t n_vocab = runner.model().info().n_vocab;
    const TreePass pass = run_tree(runner, seq, base, tree, beside);
    ASSERT_FALSE(pass.logits.empty());
    const size_t first = beside ? 1 : 0;
    if (beside) {
        ASSERT_TRUE(runner.kv().truncate(beside->seq, uint32_t(beside->pos)).ok());
        const std::vector<float> alone = decode(runner, beside->seq, beside->token, beside->pos);
        ASSERT_FALSE(alone.empty());
        EXPECT_TRUE(same_bits(alone.data(), pass.logits.data(), n_vocab))
            << "the other sequence's row differs from its decode alone";
    }
    for (uint32_t i : preorder(tree)) {
        ASSERT_TRUE(runner.kv().truncate(seq, uint32_t(base) + tree.depth(i)).ok());
        const std::vector<float> plain = decode(runner, seq, tree.token(i), base + int32_t(tree.depth(i)));
        ASSERT_FALSE(plain.empty());
        EXPECT_TRUE(same_bits(plain.data(), pass.logits.data() + (first + i) * n_vocab, n_vocab))
            << "node " << i << " (depth " << tree.depth(i) << ", parent " << tree.parent(i) << ") of "
            << tree.size() << " differs from decoding its path";
    }
}

void expect_committed_path_leaves_no_trace(Runner& runner, int seq, int32_t base, const DraftTree& tree,
                                           uint32_t node, uint32_t steps) {
    const uint32_t n_vocab = runner.model().info().n_vocab;
    ASSERT_TRUE(runner.kv().truncate(seq, uint32_t(base)).ok());
    const TreePass pass = run_tree(runner, seq, base, tree, std::nullopt);
    ASSERT_FALSE(pass.argmax.empty());
    const std::vector<uint32_t> path = tree.path(node);
    ASSERT_TRUE(commit_path(runner.kv(), seq, base, path).ok());
    // after the tree: greedy steps from the target's token after `node`
    std::vector<std::vector<float>> after;
    int32_t token = pass.argmax[node], pos = base + int32_t(path.size());
    for (uint32_t s = 0; s < steps; ++s, ++pos) {
        after.push_back(decode(runner, seq, token, pos));
        ASSERT_FALSE(after.back().empty());
        token = int32_t(std::max_element(after.back().begin(), after.back().end()) - after.back().begin());
    }
    // a run that never saw the tree: the path's tokens one by one, then the same steps
    ASSERT_TRUE(runner.kv().truncate(seq, uint32_t(base)).ok());
    std::vector<float> last;
    for (size_t j = 0; j < path.size(); ++j) last = decode(runner, seq, tree.token(path[j]), base + int32_t(j));
    ASSERT_FALSE(last.empty());
    EXPECT_TRUE(same_bits(last.data(), pass.logits.data() + size_t(node) * n_vocab, n_vocab));
    token = pass.argmax[node];
    pos = base + int32_t(path.size());
    for (uint32_t s = 0; s < steps; ++s, ++pos) {
        const std::vector<float> plain = decode(runner, seq, token, pos);
        ASSERT_FALSE(plain.empty());
        EXPECT_TRUE(same_bits(plain.data(), after[s].data(), n_vocab))
            << "step " << s << " after the committed path of " << path.size() << " nodes (to node " << node
            << ") differs from a run that never saw the tree";
        token = int32_t(std::max_element(plain.begin(), plain.end()) - plain.begin());
    }
}

}  // namespace tdm::test
