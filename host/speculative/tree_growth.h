/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/tree_growth.h: how a drafter that scores tokens (a draft head, a draft
// model) grows a draft tree of a TreeShape, as SGLang's EAGLE does: level by level it
// expands the frontier, takes the `topk` most probable children of each expanded node (the
// drafter's softmax), scores every node by its cumulative draft probability (the product
// along its path), expands only the `topk` best nodes of the new level next, and keeps the
// nodes - 1 best-scored nodes in the end (a child never scores above its parent, so they
// form a tree).
// Not here: the drafter's own computation of a level (draft_head_tree.cpp,
// draft_model_tree.cpp), the target's verify of the tree (draft_tree.h).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "speculative/draft_tree.h"

namespace tdm {

// A node grown so far. Node 0 is the root (the round's last emitted token); `expanded` is
// the node's place among the nodes chosen for expansion (root 0, then 1, 2, ... in the
// order of the frontiers; -1: never expanded): a drafter with a KV of its own stores the
// entry of the row that expands the node at slot base + expanded (graph/graph.h,
// KvTreeRow), and ancestor_slots() is that row's mask.
struct GrownNode {
    int32_t token = 0;
    int32_t parent = -1;
    uint32_t depth = 0;
    double score = 1.0;  // the product of the draft probabilities along the path
    int32_t expanded = -1;
};

class TreeGrowth {
public:
    TreeGrowth(int32_t root, const TreeShape& shape);

    const std::vector<GrownNode>& nodes() const { return nodes_; }
    // The nodes the next level expands (indices into nodes()); empty: the tree is grown.
    const std::vector<uint32_t>& frontier() const { return frontier_; }
    // Bit e set for the expansion slot e of each node on node i's path, i included (every
    // node on a frontier node's path has one).
    uint64_t ancestor_slots(uint32_t i) const;
    // The frontier's logits (one row of `width` per frontier node, in frontier() order):
    // the topk children of each, and the next frontier.
    void expand(std::span<const float> logits, uint32_t width);
    // The grown tree: the best nodes - 1 non-root nodes, parents before children.
    DraftTree tree() const;

private:
    TreeShape shape_;
    std::vector<GrownNode> nodes_;
    std::vector<uint32_t> frontier_;
    uint32_t level_ = 0;
    int32_t n_expanded_ = 1;  // the root's slot is 0
};

// The k most probable ids of one logits row and their probabilities (softmax over the
// row); ties go to the lower id, as argmax's.
std::vector<std::pair<int32_t, double>> top_probabilities(std::span<const float> logits, uint32_t k);

}  // namespace tdm
