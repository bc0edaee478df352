// SPDX-License-Identifier: Apache-2.0
// host/sampling/multi_candidate.cpp: recursive rejection sampling over several candidates
// (see multi_candidate.h).
#include "sampling/multi_candidate.h"

#include <algorithm>

namespace tdm {
namespace {

// q with the tokens already drawn (`drawn`) removed and renormalised: the distribution the
// next draw without replacement came from.
TokenDistribution without(const TokenDistribution& q, std::span<const int32_t> drawn) {
    TokenDistribution out;
    double left = 0.0;
    for (size_t i = 0; i < q.size(); ++i) {
        if (std::find(drawn.begin(), drawn.end(), q.ids[i]) != drawn.end()) continue;
        out.ids.push_back(q.ids[i]);
        out.probs.push_back(q.probs[i]);
        left += q.probs[i];
    }
    TDM_ASSERT_MSG(left > 0.0, "the draft distribution has no mass left for another candidate");
    for (float& x : out.probs) x = float(double(x) / left);
    return out;
}

}  // namespace

CandidateDecision accept_among(const TokenDistribution& p, std::span<const int32_t> candidates,
                               const TokenDistribution* drawn_from, Rng& rng) {
    TDM_ASSERT(!p.ids.empty());
    const TokenDistribution* cur = &p;  // p_i: p, then one of the two residual buffers
    TokenDistribution rest[2];
    for (size_t i = 0; i < candidates.size(); ++i) {
        const int32_t c = candidates[i];
        TDM_ASSERT_MSG(std::find(candidates.begin(), candidates.begin() + i, c) == candidates.begin() + i,
                       "candidates must be distinct");
        const TokenDistribution q_i = drawn_from ? without(*drawn_from, candidates.first(i))
                                                 : TokenDistribution{{c}, {1.0f}};
        const double q = q_i.prob(c);
        TDM_ASSERT_MSG(q > 0.0, "a candidate must have been drawn from its draft distribution");
        // u < p_i(c) / q_i(c), written without the division; p_i >= q_i always accepts
        if (rng.uniform() * q < cur->prob(c)) return {int(i), c};
        // An empty residual means p_i == q_i up to rounding, where a rejection has (nearly)
        // zero probability; p_i itself is then the right fallback (as speculative_accept's).
        TokenDistribution& next = cur == &rest[0] ? rest[1] : rest[0];
        const double sum = residual(*cur, q_i, &next);
        if (!(sum > 0.0)) continue;
        for (float& x : next.probs) x = float(double(x) / sum);
        cur = &next;
    }
    return {-1, draw(*cur, rng)};
}

}  // namespace tdm
