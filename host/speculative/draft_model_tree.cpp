// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_model_tree.cpp: a draft model grows a draft tree (tree_growth.h).
//
// The catch-up pass ends with the root (history.back() at position pos) and its logits
// give the root's children. Each later level is one pass of the expanded nodes: the node
// at depth d is a row at position pos + d that stores its K/V at slot pos + (its expansion
// slot) and attends to the committed KV and its own ancestors' slots (graph/graph.h,
// KvTreeRow with base pos: the root's entry is at its own position), never its siblings'.
// After the round the KV keeps the committed history up to the root (accept()); the
// accepted drafts are run again by the next catch-up, so nothing of the tree remains.
// Not here: chains (draft_model.cpp).
#include <algorithm>

#include "speculative/draft_model.h"
#include "speculative/tree_growth.h"

namespace tdm {

bool DraftModelDrafter::grows_trees() const { return kv_->n_states() == 0; }

Result<DraftTree> DraftModelDrafter::draft_tree(const DraftRequest& req) {
    if (pending_) cancel();  // a chain's catch-up prepared for this round: the tree's replaces it
    const uint32_t slots =
        std::min(kKvTreeMaxNodes, 1 + (std::max(req.tree.steps, 1u) - 1) * std::max(req.tree.topk, 1u));
    if (!grows_trees() || max_rows(slots) < slots) {
        // a pass of the tree's rows would not fit the sliding-window rings: a chain within its bounds
        DraftRequest c = req;
        c.max = std::min({req.max, std::max(req.tree.steps, 1u), std::max(req.tree.nodes, 2u) - 1});
        return DraftTree::chain(req.history.back(), TDM_TRY(draft(c)));
    }
    TDM_TRY(submit_catch_up(req, true));
    ForwardOutput out = TDM_TRY(runner_->wait());
    last_pos_ = req.pos;
    n_past_ = req.pos + 1;  // the root's row is committed history
    drafted_ = 1;           // accept() keeps up to the root, whatever was accepted
    const uint32_t n_vocab = model_->info().n_vocab;
    TreeGrowth growth(req.history.back(), req.tree);
    growth.expand(std::span<const float>(out.logits, n_vocab), n_vocab);
    std::vector<int32_t> tokens, positions, rows;
    std::vector<KvTreeRow> tree;
    while (!growth.frontier().empty()) {
        tokens.clear();
        positions.clear();
        rows.clear();
        tree.clear();
        for (uint32_t n : growth.frontier()) {
            const GrownNode& node = growth.nodes()[n];
            rows.push_back(int32_t(tokens.size()));
            tokens.push_back(node.token);
            positions.push_back(int32_t(req.pos + node.depth));
            tree.push_back({int32_t(req.pos), growth.ancestor_slots(n)});
        }
        ForwardInput in{tokens, positions, seq_, rows};
        in.tree = tree;
        out = TDM_TRY(runner_->forward(in));
        growth.expand(std::span<const float>(out.logits, size_t(rows.size()) * n_vocab), n_vocab);
    }
    return growth.tree();
}

}  // namespace tdm
