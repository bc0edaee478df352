// SPDX-License-Identifier: Apache-2.0
// host/speculative/draft_vocab.cpp: choosing a draft head's reduced vocabulary from the
// ids of the sequence's own tokens (why it is safe: draft_vocab.h).
#include "speculative/draft_vocab.h"

#include <algorithm>

namespace tdm {

std::vector<uint32_t> draft_vocab_ladder(uint32_t n_vocab, uint32_t smallest) {
    // half-octave steps: a prefix at most about 1.5x larger than it needs to be, and
    // few distinct sizes, as each is a draft graph of its own
    std::vector<uint32_t> ladder;
    for (uint64_t base = std::max<uint32_t>(smallest, 2); base < n_vocab; base *= 2) {
        ladder.push_back(uint32_t(base));
        if (base * 3 / 2 < n_vocab) ladder.push_back(uint32_t(base * 3 / 2));
    }
    return ladder;
}

uint32_t choose_draft_vocab(std::span<const int32_t> history, uint32_t n_vocab, const DraftVocabPolicy& policy) {
    const size_t n = std::min<size_t>(history.size(), policy.window);
    if (n == 0 || n < policy.min_tokens) return 0;
    const std::span<const int32_t> recent = history.last(n);
    const auto allowed = uint64_t(policy.max_miss * double(n));
    for (uint32_t prefix : draft_vocab_ladder(n_vocab, policy.smallest)) {
        uint64_t misses = 0;
        for (int32_t id : recent) misses += id < 0 || uint32_t(id) >= prefix;
        if (misses <= allowed) return prefix;
    }
    return 0;
}

}  // namespace tdm
