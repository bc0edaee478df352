/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/tree_sampling.h: the target's decision on a draft tree when it samples
// (T > 0): from the root, the children of the current node are the candidates of recursive
// rejection sampling (sampling/multi_candidate.h) against the target's distribution at that
// node; an accepted child becomes the current node, and the token drawn when every child is
// rejected (or at a node without children) is the round's own. Each step emits a token
// distributed as the target's p given the path so far, so the path and the round's token are
// distributed as plain sampling of as many tokens (docs/SPECULATIVE.md, "Sampling on trees").
//
// p at a node is the sampler's own distribution (Sampler::distribution: bias, penalties,
// top-k, top-p, min-p, temperature) of that node's verify row, with the path's drafts
// appended to the history the penalties read, as a chain's verify does.
//
// Random numbers come from the request's sampler (Sampler::rng(), seeded by its seed), in
// this order: at each node of the accepted path, one uniform per child tried (index order),
// then one draw for the round's own token. So a fixed seed and the same drafts give the same
// tokens. A drafter's own random choices use the drafter's generator, never this one.
// Not here: greedy acceptance (draft_tree.h, accept_greedy), the chain's rule (round.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "sampling/sampler.h"
#include "speculative/draft_tree.h"
#include "speculative/round.h"

namespace tdm {

// The target's distribution after `node`, whose path holds the drafts `drafts` (root
// excluded, root side first).
using TargetDistributionAt =
    std::function<void(uint32_t node, std::span<const int32_t> drafts, TokenDistribution* out)>;

TreeVerdict accept_sampled(const DraftTree& tree, const TargetDistributionAt& target, Rng& rng);

// On a verify pass's rows (row i: node i), with `history` ending with the root's token.
TreeVerdict accept_sampled(const DraftTree& tree, const VerifyRows& rows, Sampler& sampler,
                           std::span<const int32_t> history);

}  // namespace tdm
