// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/map_k4v.cpp
#include "map_k4v.h"

#include <algorithm>

namespace ngram {

void NgramMapK4v::begin(std::span<const int32_t> prompt) {
    log_.clear();
    keys_.clear();
    keys_indexed_ = values_indexed_ = 0;
    drafted_ = nullptr;
    index(prompt);
}

void NgramMapK4v::add_value(K4vEntry& e, uint32_t pos) {
    const std::span<const int32_t> v = log_.span().subspan(pos, p_.m);
    int free_slot = -1, weakest = 0;
    for (int s = 0; s < kK4vValues; ++s) {
        K4vValue& x = e.values[size_t(s)];
        if (x.count == 0) {
            if (free_slot < 0) free_slot = s;
            continue;
        }
        if (std::equal(v.begin(), v.end(), log_.data() + x.pos)) {
            x.count = x.count == UINT32_MAX ? x.count : x.count + 1;
            x.pos = pos;  // the most recent occurrence: its tokens are the freshest copy
            return;
        }
        const K4vValue& w = e.values[size_t(weakest)];
        if (w.count == 0 || x.count < w.count || (x.count == w.count && x.pos < w.pos)) weakest = s;
    }
    if (free_slot < 0) {
        free_slot = weakest;
        e.evictions++;
    }
    e.values[size_t(free_slot)] = K4vValue{pos, 1, 0};
}

void NgramMapK4v::index(std::span<const int32_t> history) {
    if (history.size() >= kMaxIndexedTokens) return;
    if (log_.sync(history).rebuilt) {
        keys_.clear();
        keys_indexed_ = values_indexed_ = 0;
        drafted_ = nullptr;
    }
    const size_t len = log_.size(), n = p_.n, m = p_.m;
    if (len <= n) return;
    for (size_t i = keys_indexed_; i + n < len; ++i) {
        K4vEntry& e = keys_.at_position(uint32_t(i));
        e.hits = e.hits == UINT32_MAX ? e.hits : e.hits + 1;
    }
    keys_indexed_ = std::max(keys_indexed_, len - n);
    // a value counts once all its m tokens exist; its key was counted above
    for (size_t i = values_indexed_; i + n + m <= len; ++i) add_value(keys_.at_position(uint32_t(i)), uint32_t(i + n));
    if (len >= n + m) values_indexed_ = std::max(values_indexed_, len - n - m + 1);
}

size_t NgramMapK4v::propose(std::span<const int32_t> history, std::span<int32_t> out) {
    drafted_ = nullptr;
    index(history);
    if (log_.size() != history.size() || log_.size() <= p_.n || out.empty()) return 0;
    K4vEntry* e = keys_.find(log_.span().last(p_.n));
    if (!e || e->hits < p_.min_hits) return 0;
    int best = -1;
    for (int s = 0; s < kK4vValues; ++s) {
        const K4vValue& x = e->values[size_t(s)];
        if (x.count == 0) continue;
        if (best < 0 || x.count > e->values[size_t(best)].count ||
            (x.count == e->values[size_t(best)].count && x.pos > e->values[size_t(best)].pos))
            best = s;
    }
    if (best < 0) return 0;
    const K4vValue& v = e->values[size_t(best)];
    uint64_t others = 0;
    for (int s = 0; s < kK4vValues; ++s)
        if (s != best) others += e->values[size_t(s)].count;
    if (others > 0 && uint64_t(v.count) < 3 * others) return 0;  // no value dominates
    const size_t len = std::min<size_t>({p_.m, out.size(), v.next_len ? v.next_len : p_.m});
    const size_t k = copy_continuation(log_.span(), v.pos, out.first(len), p_.n_vocab);
    if (k) {
        drafted_ = e;
        drafted_slot_ = best;
    }
    return k;
}

size_t NgramMapK4v::propose_branches(std::span<const int32_t> history, size_t max_len, std::span<int32_t> tokens,
                                     std::span<uint32_t> lens) {
    drafted_ = nullptr;
    index(history);
    if (log_.size() != history.size() || log_.size() <= p_.n || max_len == 0 || tokens.size() < lens.size() * max_len)
        return 0;
    const K4vEntry* e = keys_.find(log_.span().last(p_.n));
    if (!e || e->hits < p_.min_hits) return 0;
    // the occupied slots, most frequent first (ties: the most recent); an insertion sort of
    // at most four (std::sort's unrolled prologue trips -Warray-bounds on so small an array)
    std::array<int, kK4vValues> order{};
    int n_values = 0;
    const auto before = [e](int a, int b) {
        const K4vValue &x = e->values[size_t(a)], &y = e->values[size_t(b)];
        return x.count != y.count ? x.count > y.count : x.pos > y.pos;
    };
    for (int s = 0; s < kK4vValues; ++s) {
        if (e->values[size_t(s)].count == 0) continue;
        int at = n_values++;
        for (; at > 0 && before(s, order[size_t(at - 1)]); --at) order[size_t(at)] = order[size_t(at - 1)];
        order[size_t(at)] = s;
    }
    const size_t len = std::min<size_t>(p_.m, max_len);
    size_t count = 0;
    for (int i = 0; i < n_values && count < lens.size(); ++i) {
        const K4vValue& v = e->values[size_t(order[size_t(i)])];
        const size_t k = copy_continuation(log_.span(), v.pos, tokens.subspan(count * max_len, len), p_.n_vocab);
        if (k) lens[count++] = uint32_t(k);
    }
    return count;
}

void NgramMapK4v::accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) {
    if (drafted_ && n_drafted > 0) {
        drafted_->n_drafted += n_drafted;
        drafted_->n_accepted += std::min(n_accepted, n_drafted);
        K4vValue& v = drafted_->values[size_t(drafted_slot_)];
        v.next_len = n_accepted >= n_drafted ? 0 : uint32_t(std::min<size_t>(n_accepted + 1, p_.m));
    }
    drafted_ = nullptr;
    index(history);
}

}  // namespace ngram
