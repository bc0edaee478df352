// SPDX-License-Identifier: Apache-2.0
// tests/support/tree_drafter_check.cpp: see tree_drafter_check.h.
#include "support/tree_drafter_check.h"

#include <gtest/gtest.h>

#include <map>

namespace tdm::test {

Status TreeDrafterCheck::begin(std::span<const int32_t> prompt) {
    for (Drafter* d : {chain_.get(), narrow_.get(), wide_.get()}) TDM_TRY(d->begin(prompt));
    return {};
}

Status TreeDrafterCheck::observe(const TargetRows& rows) {
    for (Drafter* d : {chain_.get(), narrow_.get(), wide_.get()}) TDM_TRY(d->observe(rows));
    return {};
}

Result<DraftTree> TreeDrafterCheck::draft_tree(const DraftRequest& req) {
    DraftRequest c = req;
    c.tree = {};
    const std::vector<int32_t> chain = TDM_TRY(chain_->draft(c));
    DraftRequest n = req;
    n.tree = {req.max, 1, req.max + 1};
    const DraftTree narrow = TDM_TRY(narrow_->draft_tree(n));
    const DraftTree wide = TDM_TRY(wide_->draft_tree(req));
    ++rounds_;
    std::vector<int32_t> narrow_chain;
    for (uint32_t i = 1; i < narrow.size(); ++i) {
        EXPECT_EQ(narrow.parent(i), int32_t(i - 1)) << "a tree of one child per node is a chain";
        narrow_chain.push_back(narrow.token(i));
    }
    EXPECT_EQ(narrow_chain, chain) << "round " << rounds_ << " at position " << req.pos;
    pos_ = req.pos;
    chain_drafts_ = chain;
    narrow_drafts_ = narrow_chain;
    EXPECT_LE(wide.size(), req.tree.nodes);
    EXPECT_LE(wide.max_depth(), req.tree.steps);
    std::map<int32_t, uint32_t> children;
    for (uint32_t i = 1; i < wide.size(); ++i) ++children[wide.parent(i)];
    for (const auto& [parent, n_children] : children) EXPECT_LE(n_children, req.tree.topk) << "node " << parent;
    bool branches = false;
    for (const auto& [parent, n_children] : children) branches = branches || n_children > 1;
    branched_ += branches ? 1 : 0;
    // Along the chain's path in wide's tree, each node's best child (its first: nodes are
    // ordered by score within a depth) is the chain's next draft: the nodes were computed
    // as their path's decode would be, beside their siblings in one pass.
    uint32_t on = 0;
    for (size_t d = 0; d < chain.size(); ++d) {
        uint32_t first = 0;
        for (uint32_t i = on + 1; i < wide.size() && !first; ++i)
            if (wide.parent(i) == int32_t(on)) first = i;
        if (!first) break;
        EXPECT_EQ(wide.token(first), chain[d]) << "the best child at depth " << d + 1 << ", round " << rounds_;
        if (wide.token(first) != chain[d]) break;
        on = first;
    }
    return wide;
}

// chain and narrow hear what of their own chain the target took: the drafts that equal the
// history after the round's root (a draft model keeps the KV of those)
Status TreeDrafterCheck::accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) {
    const auto taken = [&](const std::vector<int32_t>& drafts) {
        uint32_t m = 0;
        while (m < drafts.size() && pos_ + 1 + m < history.size() && drafts[m] == history[pos_ + 1 + m]) ++m;
        return m;
    };
    const bool mine = n_drafted > 0;  // the round verified wide's tree
    TDM_TRY(chain_->accept(history, mine ? uint32_t(chain_drafts_.size()) : 0, mine ? taken(chain_drafts_) : 0));
    TDM_TRY(narrow_->accept(history, mine ? uint32_t(narrow_drafts_.size()) : 0, mine ? taken(narrow_drafts_) : 0));
    chain_drafts_.clear();
    narrow_drafts_.clear();
    return wide_->accept(history, n_drafted, n_accepted);
}

void TreeDrafterCheck::cancel() {
    for (Drafter* d : {chain_.get(), narrow_.get(), wide_.get()}) d->cancel();
}

}  // namespace tdm::test
