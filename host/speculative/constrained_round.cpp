// SPDX-License-Identifier: Apache-2.0
// host/speculative/constrained_round.cpp: a round's drafts and rows under a token
// constraint (see constrained_round.h).
#include "speculative/constrained_round.h"

#include <algorithm>
#include <cstring>

namespace tdm {

uint32_t cut_drafts(TokenConstraint& constraint, Proposal& proposal, DraftStates& after) {
    after.clear();
    std::vector<int32_t>& drafts = proposal.drafts;
    size_t kept = 0;
    for (; kept < drafts.size(); ++kept) {
        TokenConstraint& state = kept == 0 ? constraint : *after.back();
        if (!state.allows(drafts[kept])) break;
        std::unique_ptr<TokenConstraint> next = state.clone();
        if (!next->advance(drafts[kept]).ok()) break;
        after.push_back(std::move(next));
    }
    const uint32_t cut = uint32_t(drafts.size() - kept);
    drafts.resize(kept);
    if (drafts.empty()) proposal.winner = -1;
    return cut;
}

int32_t first_argmax(const float* row, uint32_t n) {
    return int32_t(std::max_element(row, row + n) - row);
}

VerifyRows MaskedRows::mask(const VerifyRows& raw, uint32_t n_rows, TokenConstraint& constraint,
                            const DraftStates& after) {
    const uint32_t n_vocab = raw.n_vocab;
    logits_.resize(size_t(n_rows) * n_vocab);
    argmax_.resize(n_rows);
    for (uint32_t i = 0; i < n_rows; ++i) {
        float* row = logits_.data() + size_t(i) * n_vocab;
        std::memcpy(row, raw.logits + size_t(i) * n_vocab, size_t(n_vocab) * sizeof(float));
        TokenConstraint& state = i == 0 ? constraint : *after[i - 1];
        state.mask(row, int(n_vocab));
        argmax_[i] = first_argmax(row, n_vocab);
    }
    return VerifyRows{logits_.data(), argmax_.data(), n_vocab};
}

}  // namespace tdm
