// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/map_k.cpp
#include "map_k.h"

#include <algorithm>

namespace ngram {

void NgramMapK::begin(std::span<const int32_t> prompt) {
    log_.clear();
    keys_.clear();
    indexed_ = 0;
    drafted_ = nullptr;
    index(prompt);
}

void NgramMapK::index(std::span<const int32_t> history) {
    if (history.size() >= kMaxIndexedTokens) return;  // positions are uint32_t: stop learning
    if (log_.sync(history).rebuilt) {
        keys_.clear();
        indexed_ = 0;
        drafted_ = nullptr;
    }
    const size_t len = log_.size();
    if (len <= p_.n) return;
    // an occurrence counts once a token follows it: starts i with i + n < len
    for (size_t i = indexed_; i + p_.n < len; ++i) {
        MapKEntry& e = keys_.at_position(uint32_t(i));
        e.hits = e.hits == UINT32_MAX ? e.hits : e.hits + 1;
        e.last = uint32_t(i);
    }
    indexed_ = std::max(indexed_, len - p_.n);
}

size_t NgramMapK::propose(std::span<const int32_t> history, std::span<int32_t> out) {
    drafted_ = nullptr;
    index(history);
    if (log_.size() != history.size() || log_.size() <= p_.n || out.empty()) return 0;
    const std::span<const int32_t> key = log_.span().last(p_.n);
    MapKEntry* e = keys_.find(key);
    if (!e || e->hits < p_.min_hits) return 0;
    const size_t len = std::min<size_t>({p_.m, out.size(), e->next_len ? e->next_len : p_.m});
    const size_t k = copy_continuation(log_.span(), size_t(e->last) + p_.n, out.first(len), p_.n_vocab);
    if (k) drafted_ = e;
    return k;
}

void NgramMapK::accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) {
    if (drafted_ && n_drafted > 0) {
        MapKEntry& e = *drafted_;
        e.n_drafts++;
        e.n_drafted += n_drafted;
        e.n_accepted += std::min(n_accepted, n_drafted);
        // a full accept earns the full length back; otherwise probe one token
        // past what the target agreed with, so the key is never dead
        e.next_len = n_accepted >= n_drafted ? 0 : uint32_t(std::min<size_t>(n_accepted + 1, p_.m));
    }
    drafted_ = nullptr;
    index(history);
}

}  // namespace ngram
