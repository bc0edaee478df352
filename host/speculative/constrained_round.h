/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/constrained_round.h: the speculative round's steps under a token
// constraint (sampling/token_constraint.h: a grammar, a JSON schema). Before the pass the
// proposal is cut at its first draft the constraint forbids (cut_drafts), and after it every
// verify row is masked with the constraint's state after the drafts before it (MaskedRows),
// so that verify() (round.h) sees exactly the rows a plain step would: greedy output with a
// constraint is the same with and without drafts, and sampling's rejection rule works on
// the constrained distribution.
// Not here: the constraint itself, advancing the session's constraint over the emitted
// tokens and stopping when it is complete (engine/batch_session.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sampling/token_constraint.h"
#include "speculative/round.h"

namespace tdm {

// The constraint's state after each draft of a proposal: after[i] follows drafts 0..i.
using DraftStates = std::vector<std::unique_ptr<TokenConstraint>>;

// Cuts `proposal` before its first draft `constraint` (in its state before the round)
// forbids, or cannot move past: neither that draft nor those after it are verified. An
// emptied proposal becomes a plain step (winner -1), as a drafter proposing nothing would.
// Fills `after` for the drafts kept; returns how many were cut.
uint32_t cut_drafts(TokenConstraint& constraint, Proposal& proposal, DraftStates& after);

// A round's rows masked by the constraint: row 0 in its state before the round, row i in
// after[i - 1], each with the argmax of what is left (ties to the lowest id, as greedy
// decoding's argmax: the same function in a plain step and in a verify row). The raw rows
// stay as they are (logprobs and logits dumps report the model's own distribution).
class MaskedRows {
public:
    VerifyRows mask(const VerifyRows& raw, uint32_t n_rows, TokenConstraint& constraint, const DraftStates& after);

private:
    std::vector<float> logits_;
    std::vector<int32_t> argmax_;
};

// The index of the largest of n values (the first among equal ones).
int32_t first_argmax(const float* row, uint32_t n);

}  // namespace tdm
