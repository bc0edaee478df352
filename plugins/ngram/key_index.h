/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/key_index.h: a hash map whose keys are n-grams of a TokenLog,
// stored as the start position of one occurrence (4 bytes instead of a copy of
// n tokens), hashed and compared through the log. Lookups also take the n-gram
// as a span (transparent lookup), so a key need not be in the log to be asked
// for. Used by ngram-map-k and ngram-map-k4v. Not here: what an entry holds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_map>

#include "token_log.h"

namespace ngram {

// Longest history a positional table indexes (positions are uint32_t); past it
// the map drafters stop drafting instead of wrapping around.
constexpr size_t kMaxIndexedTokens = size_t(1) << 31;

struct NgramKeyHash {
    using is_transparent = void;
    const TokenLog* log = nullptr;
    uint32_t n = 0;
    size_t operator()(std::span<const int32_t> key) const {
        // FNV-1a over the ids, then a 64-bit finaliser (MurmurHash3 fmix64):
        // std::unordered_map uses the low bits, which FNV alone mixes poorly.
        uint64_t h = 0xcbf29ce484222325ull;
        for (int32_t t : key) h = (h ^ uint32_t(t)) * 0x100000001b3ull;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        return size_t(h);
    }
    size_t operator()(uint32_t pos) const { return (*this)(at(pos)); }
    std::span<const int32_t> at(uint32_t pos) const { return log->span().subspan(pos, n); }
};

struct NgramKeyEq {
    using is_transparent = void;
    const NgramKeyHash* keys = nullptr;  // the hasher of the same map: the log and n
    bool operator()(uint32_t a, uint32_t b) const { return a == b || same(keys->at(a), keys->at(b)); }
    bool operator()(std::span<const int32_t> a, uint32_t b) const { return same(a, keys->at(b)); }
    bool operator()(uint32_t a, std::span<const int32_t> b) const { return same(keys->at(a), b); }
    static bool same(std::span<const int32_t> a, std::span<const int32_t> b) {
        return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
    }
};

// The map itself. Entries keep their addresses across rehashing (node-based),
// which the drafters rely on to remember the entry of their last draft.
template <class Entry>
class KeyIndex {
public:
    KeyIndex(const TokenLog* log, uint32_t n)
        : hash_{log, n}, map_(16, NgramKeyHash{log, n}, NgramKeyEq{&hash_}) {}
    KeyIndex(const KeyIndex&) = delete;  // the equality functor points at hash_
    KeyIndex& operator=(const KeyIndex&) = delete;

    // The entry of the n-gram starting at log position pos (created if new).
    Entry& at_position(uint32_t pos) { return map_.try_emplace(pos).first->second; }
    Entry* find(std::span<const int32_t> key) {
        auto it = map_.find(key);
        return it == map_.end() ? nullptr : &it->second;
    }
    const Entry* find(std::span<const int32_t> key) const {
        auto it = map_.find(key);
        return it == map_.end() ? nullptr : &it->second;
    }
    size_t size() const { return map_.size(); }
    void clear() { map_.clear(); }

private:
    NgramKeyHash hash_;
    std::unordered_map<uint32_t, Entry, NgramKeyHash, NgramKeyEq> map_;
};

}  // namespace ngram
