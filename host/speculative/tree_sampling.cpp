// SPDX-License-Identifier: Apache-2.0
// host/speculative/tree_sampling.cpp: sampling's walk down a draft tree (see tree_sampling.h).
#include "speculative/tree_sampling.h"

#include <vector>

#include "sampling/multi_candidate.h"

namespace tdm {

TreeVerdict accept_sampled(const DraftTree& tree, const TargetDistributionAt& target, Rng& rng) {
    TreeVerdict v;
    v.path.push_back(0);
    std::vector<int32_t> drafts, candidates;
    TokenDistribution p;
    for (uint32_t cur = 0;;) {
        target(cur, drafts, &p);
        const std::vector<uint32_t> children = tree.children(cur);
        candidates.clear();
        for (uint32_t c : children) candidates.push_back(tree.token(c));
        const CandidateDecision d = accept_among(p, candidates, tree.children_drawn_from(cur), rng);
        if (d.accepted < 0) {
            v.next = d.token;
            return v;
        }
        cur = children[size_t(d.accepted)];
        v.path.push_back(cur);
        drafts.push_back(d.token);
    }
}

TreeVerdict accept_sampled(const DraftTree& tree, const VerifyRows& rows, Sampler& sampler,
                           std::span<const int32_t> history) {
    std::vector<int32_t> h;  // the penalty window sees the path's drafts
    const TargetDistributionAt target = [&](uint32_t node, std::span<const int32_t> drafts, TokenDistribution* out) {
        h.assign(history.begin(), history.end());
        h.insert(h.end(), drafts.begin(), drafts.end());
        sampler.distribution(rows.logits + size_t(node) * rows.n_vocab, int(rows.n_vocab), h, out);
    };
    return accept_sampled(tree, target, sampler.rng());
}

}  // namespace tdm
