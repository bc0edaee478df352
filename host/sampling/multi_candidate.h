/* SPDX-License-Identifier: Apache-2.0 */
// host/sampling/multi_candidate.h: the rejection rule of speculative sampling over several
// candidates for one position (a draft tree's siblings): recursive rejection sampling, as
// SpecInfer (Miao et al. 2024) and Sequoia (Chen et al. 2024) verify trees.
// Not here: the chain's one-candidate rule (sampling/sampler.h, speculative_accept), walking a
// tree (speculative/tree_sampling.h), the sampler's chain of filters that makes p.
//
// The rule. The target's distribution p (Sampler::distribution, every filter applied) and
// candidates c_1..c_m, distinct, tried in order, c_i proposed as if drawn from q_i. Start
// with p_1 = p; accept c_i with probability min(1, p_i(c_i) / q_i(c_i)); on rejection
// p_{i+1} = max(0, p_i - q_i) renormalised (the residual) and the next candidate is tried;
// when all are rejected, the token is drawn from p_{m+1}.
//
// What q_i is, by how the candidates were chosen:
// - Deterministic candidates (a draft head's top-k, a table's continuations, a forced
//   drafter): q_i is the point mass on c_i. Accepting c_i then has probability p_i(c_i), and
//   the residual is p_i with c_i removed.
// - Candidates drawn at random from q, in order and without replacement (Sequoia): q_i is q
//   with c_1..c_{i-1} removed and renormalised, the distribution c_i was really drawn from.
//   Using q itself for every i (SpecInfer's rule, which assumes draws with replacement) would
//   bias the output.
//
// Why the token is distributed as p (by induction on the candidates left; docs/SPECULATIVE.md
// "Sampling on trees"): with no candidate left the token is drawn from p_i. With c_i ~ q_i, the
// step emits x by acceptance with probability q_i(x) min(1, p_i(x)/q_i(x)) = min(p_i(x),
// q_i(x)), and rejects with probability r = sum_x max(0, p_i(x) - q_i(x)); p_{i+1} =
// max(0, p_i - q_i) / r does not depend on which c_i was rejected, so whatever c_i was (and
// whatever q_{i+1} it leads to) the rest emits p_{i+1} by induction. In all: min(p_i, q_i) +
// max(0, p_i - q_i) = p_i. Deterministic candidates are the case q_i = point mass, where the
// candidates may be chosen in any way that does not look at the rule's random numbers.
//
// Random numbers: one rng.uniform() per candidate tried, then one draw() when all are rejected.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/sampler.h"

namespace tdm {

struct CandidateDecision {
    int accepted = -1;   // the index of the accepted candidate; -1: every one was rejected
    int32_t token = -1;  // the accepted candidate, or the token drawn from the last residual
};

// p: the target's distribution (not empty). candidates: distinct tokens, in the order they are
// tried (empty: the token is drawn from p). drawn_from: null for deterministic candidates; else
// the q they were drawn from without replacement (every candidate must have q > 0).
CandidateDecision accept_among(const TokenDistribution& p, std::span<const int32_t> candidates,
                               const TokenDistribution* drawn_from, Rng& rng);

}  // namespace tdm
