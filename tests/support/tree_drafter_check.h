/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/tree_drafter_check.h: the checks of a drafter that grows trees by its draft
// probabilities (a draft head, a draft model; speculative/tree_growth.h, --draft-tree),
// shared by the tests of each: a drafter that runs three such drafters on the same sequence
// each round and checks what they propose against each other; the round verifies the
// widest one's tree.
// Not here: the target's exactness on trees (tree_check.h), the models (each test loads
// its own).
#pragma once

#include <memory>

#include "speculative/drafter.h"

namespace tdm::test {

// `chain` drafts chains (draft()), `narrow` grows trees of one child per node, `wide`
// grows trees of the round's shape, which the round verifies. Each round it expects
// (gtest): wide's tree within the shape (nodes, depth, children per node); narrow's tree
// the chain of chain's drafts (the chain inside a tree of a drafter whose top-1 is known);
// along chain's drafts in wide's tree, each node's best child the next draft: the nodes
// were computed honestly beside their siblings (each attends to its own ancestors), and
// the branches wide grew and the target rejected in earlier rounds left no trace in its
// KV, which chain's never held.
class TreeDrafterCheck final : public Drafter {
public:
    // Three drafters that draft alike (three of one head: DraftHeadDrafter::another()).
    TreeDrafterCheck(std::unique_ptr<Drafter> chain, std::unique_ptr<Drafter> narrow, std::unique_ptr<Drafter> wide)
        : chain_(std::move(chain)), narrow_(std::move(narrow)), wide_(std::move(wide)) {}
    const std::string& name() const override { return name_; }
    tdm_hidden_point hidden_point() const override { return wide_->hidden_point(); }
    Status begin(std::span<const int32_t> prompt) override;
    Status observe(const TargetRows& rows) override;
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override { return chain_->draft(req); }
    bool grows_trees() const override { return true; }
    Result<DraftTree> draft_tree(const DraftRequest& req) override;
    Status accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) override;
    void cancel() override;

    uint32_t rounds() const { return rounds_; }      // trees checked
    uint32_t branched() const { return branched_; }  // of them with a node of two children or more

private:
    std::string name_ = "head-tree-check";
    std::unique_ptr<Drafter> chain_, narrow_, wide_;
    uint32_t rounds_ = 0, branched_ = 0;
    uint32_t pos_ = 0;  // the last round's
    std::vector<int32_t> chain_drafts_, narrow_drafts_;
};

}  // namespace tdm::test
