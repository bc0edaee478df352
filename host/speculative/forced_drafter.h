/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/forced_drafter.h: a benchmark-only drafter (`tandem bench spec
// --force-acceptance A`). It proposes the target's own future tokens, taken from
// a plain run of the same prompt, and keeps each draft position correct with
// probability A (given that the earlier ones are); a wrong position gets another
// token. So the machinery's speedup(A) curve can be measured on synthetic
// weights that have no real draft agreement. Costs nothing to run.
//
// Given an inner drafter (an MTP head, a draft model), it forces that
// drafter's acceptance instead: the inner drafter does all its work (begin,
// observe, prepare, draft, accept: its cost is real and its state follows the
// rounds) and the forced drafter replaces the tokens of its proposal, keeping
// the proposal's length.
//
// Whether a chain's draft of the token at output position p is right is one draw per
// position (of the seed and p), not the next number of a stream: the same positions are
// easy or hard whatever the draft lengths, as a real text's are, so that two policies (the
// goodput controller's default against a fixed length) are compared on nearly the same luck
// (the target's own token after a round that accepted every draft skips that position's
// draw, so they visit different but equally unbiased subsets of the positions). Drawn
// from one stream, the rounds each policy happened to run decided which draws it met: at
// A = 0.7 over 128 tokens the realised acceptance of fixed k = 1 and of the default differed
// by 0.03-0.08 (0.73 against 0.65-0.70), 2-5% of speed, more than the difference measured.
//
// Alone, it also grows trees (draft_tree.h) for `--draft-tree`: under the node on the
// target's path, topk children per level, each the target's token with probability A
// (the first such child holds it); a level without it ends what can be accepted, and
// the tree grows on under its first child, so that it uses its node budget as a chain
// of wrong drafts uses its length.
#pragma once

#include <random>

#include "speculative/drafter.h"

namespace tdm {

// The draw in [0, 1) that decides whether a chain's draft of output position `position` is
// right (below A): one per position and seed, whatever the draft lengths. Simulations of
// `bench spec` draw from it too.
double forced_draw(uint64_t seed, size_t position);

class ForcedDrafter : public Drafter {
public:
    // reference: the tokens plain decoding generated after `prompt_len` prompt tokens.
    ForcedDrafter(std::vector<int32_t> reference, size_t prompt_len, double acceptance, uint32_t n_vocab,
                  uint64_t seed, Drafter* inner = nullptr);
    const std::string& name() const override { return name_; }
    DrafterKind kind() const override { return inner_ ? inner_->kind() : DrafterKind::head; }
    const std::string& history_name() const override { return inner_ ? inner_->history_name() : name_; }
    Status begin(std::span<const int32_t> prompt) override;
    bool can_resume(uint32_t n) const override { return inner_ ? inner_->can_resume(n) : true; }
    Status resume(std::span<const int32_t> prompt, uint32_t n) override {
        if (prompt.size() != prompt_len_) return Error("forced drafter: a different prompt than the reference run's");
        return inner_ ? inner_->resume(prompt, n) : Status{};
    }
    bool needs_saved_state() const override { return inner_ && inner_->needs_saved_state(); }
    Result<std::string> save_state(uint32_t n) override { return inner_ ? inner_->save_state(n) : std::string(); }
    Status load_state(std::span<const int32_t> tokens, std::string_view bytes) override {
        return inner_ ? inner_->load_state(tokens, bytes) : Status{};
    }
    tdm_hidden_point hidden_point() const override { return inner_ ? inner_->hidden_point() : TDM_HIDDEN_NONE; }
    Status observe(const TargetRows& rows) override { return inner_ ? inner_->observe(rows) : Status{}; }
    Status prepare(const DraftRequest& req) override { return inner_ ? inner_->prepare(req) : Status{}; }
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override;
    bool grows_trees() const override { return inner_ == nullptr; }
    Result<DraftTree> draft_tree(const DraftRequest& req) override;
    Status accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) override {
        return inner_ ? inner_->accept(history, n_drafted, n_accepted) : Status{};
    }
    void cancel() override {
        if (inner_) inner_->cancel();
    }
    void forget() override {
        if (inner_) inner_->forget();
    }
    Status finish() override { return inner_ ? inner_->finish() : Status{}; }

private:
    bool right() { return double(rng_() >> 11) * 0x1.0p-53 < a_; }  // a tree's children
    bool right_at(size_t position) const;                              // a chain's drafts
    int32_t other_than(int32_t t) { return int32_t((uint32_t(t) + 1 + uint32_t(rng_() % (n_vocab_ - 1))) % n_vocab_); }

    std::string name_ = "forced";
    std::vector<int32_t> ref_;
    size_t prompt_len_;
    double a_;
    uint32_t n_vocab_;
    uint64_t seed_;
    std::mt19937_64 rng_;
    Drafter* inner_ = nullptr;
};

}  // namespace tdm
