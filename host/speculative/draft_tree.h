/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/draft_tree.h: a round's proposal as a token tree, verified in one pass.
//
// Node 0 is the root: the last emitted token, which the target has not run yet, at
// position `base`. Every other node is a draft with a parent of lower index; a node at
// depth d (the root's children have depth 1) sits at position base + d, and its path is
// the root, its ancestors and itself. A chain d1..dk is the tree whose node i has parent
// i - 1. At most kKvTreeMaxNodes nodes, root included.
//
// Exactness (DESIGN invariant 1). The target runs every node in one pass (kv_rows(): node
// i stores its K/V at position base + i, graph/graph.h, KvTreeRow) and each node's
// attention reads the committed prefix, then its ancestors in depth order, as the keys of
// positions base.. base + d: the keys, order and chunks of a plain decode of its path. So
// node i's logits equal, bit for bit, those of decoding its path token by token.
// Greedy acceptance walks from the root to the child whose token is the target's argmax
// while there is one (accept_greedy()); commit_path() then copies the accepted nodes' K/V
// to consecutive positions base + j and truncates the rest away: what remains is what
// plain decoding of the path would have written (invariant 3), and a chain moves nothing.
// With sampling (T > 0) the path is chosen by recursive rejection sampling over each node's
// children (tree_sampling.h), which reads how the children were chosen:
// children_drawn_from().
// Not here: who grows trees (drafters), the chain round (round.h), sampling's rule.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.h"
#include "kv/kv_pool.h"
#include "sampling/sampler.h"

namespace tdm {

// How a drafter that grows trees may grow one (SGLang's knobs): at most `steps` levels
// below the root, `topk` children per node it expands, `nodes` nodes in all, root
// included. nodes <= 1: no tree (a chain).
struct TreeShape {
    uint32_t steps = 0, topk = 0, nodes = 0;
};

class DraftTree {
public:
    explicit DraftTree(int32_t root) { nodes_.push_back({root, -1, 0}); }
    // The chain root, drafts[0], drafts[1], ... (drafts cut at the node budget).
    static DraftTree chain(int32_t root, std::span<const int32_t> drafts);

    // Adds `token` under node `parent` and returns its index; a sibling that already
    // holds the token is returned instead (one branch per token). Error when the tree
    // is full or `parent` is not a node.
    Result<uint32_t> add(uint32_t parent, int32_t token);

    uint32_t size() const { return uint32_t(nodes_.size()); }
    int32_t token(uint32_t i) const { return nodes_[i].token; }
    int32_t parent(uint32_t i) const { return nodes_[i].parent; }
    uint32_t depth(uint32_t i) const { return nodes_[i].depth; }
    uint32_t max_depth() const;
    // Bit j set for each node j on node i's path (the root and i included).
    uint64_t ancestors(uint32_t i) const;
    // The nodes of node i's path, root first.
    std::vector<uint32_t> path(uint32_t i) const;
    // Node i's children, in index order.
    std::vector<uint32_t> children(uint32_t i) const;

    // How node i's children were chosen, for sampling's rejection rule
    // (sampling/multi_candidate.h). By default they are the drafter's deterministic choices
    // (top-k of its distribution, a table's continuations): point masses to the rule, which
    // is exact for any children chosen without looking at the target's random numbers. A
    // drafter that drew them at random from q, in index order and without replacement,
    // says so here, and the rule uses q (more of them are accepted). Null: deterministic.
    void set_children_drawn_from(uint32_t i, TokenDistribution q);
    const TokenDistribution* children_drawn_from(uint32_t i) const;

    // The verify pass's rows with the root at position `base`: every node's token, its
    // position (base + depth) and its KvTreeRow.
    std::vector<int32_t> tokens() const;
    std::vector<int32_t> positions(int32_t base) const;
    std::vector<KvTreeRow> kv_rows(int32_t base) const;

private:
    struct Node {
        int32_t token = 0;
        int32_t parent = -1;
        uint32_t depth = 0;
    };
    std::vector<Node> nodes_;
    std::vector<TokenDistribution> drawn_from_;  // by node; empty entries: deterministic children
};

// The target's greedy decision on a tree: the accepted path (node indices from the root;
// path.size() - 1 drafts accepted) and the target's own token after its last node.
struct TreeVerdict {
    std::vector<uint32_t> path;
    int32_t next = -1;
};
// argmax[i]: the target's choice after node i (the verify pass's row i).
TreeVerdict accept_greedy(const DraftTree& tree, std::span<const int32_t> argmax);

// Keeps the accepted path in `seq`'s KV: node path[j]'s K/V moves from base + path[j] to
// base + j, and the sequence is truncated to base + path.size() (the rejected nodes leave
// no trace).
Status commit_path(KvPool& kv, int seq, int32_t base, std::span<const uint32_t> path);

}  // namespace tdm
