/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/map_k4v.h: ngram-map-k4v: per key n-gram, up to four value
// m-grams (the m tokens that followed an occurrence of the key) with how often
// each occurred. A key drafts its most frequent value only when that value
// clearly dominates (count >= 3 x the others' sum, llama.cpp's rule) and the key
// occurred at least min_hits times. For long repetitions with some variation:
// llama.cpp suggests n = m = 8, min_hits 2.
//
// Compared with llama.cpp (common/ngram-map.cpp, values mode): incremental
// indexing (a value is counted once its m tokens exist), the draft is the
// dominant value's own tokens (llama.cpp copies what followed the latest key
// match, which may be another value), a fifth distinct value evicts the least
// frequent one (ties: the oldest) instead of being ignored, so a key can move
// on when the text changes, and draft sizing per value as in map_k.h.
// Branches (draft trees): every value of the key is a branch, the most frequent first
// (ties: the most recent), without the dominance rule: the tree verifies them all at
// once, so a key whose values disagree drafts them side by side. Branch rounds leave the
// values' draft sizing alone (which value the target followed is not one draft's verdict).
// Not here: single-value maps (map_k.h).
#pragma once

#include <array>

#include "drafter.h"
#include "key_index.h"

namespace ngram {

constexpr int kK4vValues = 4;

struct K4vValue {
    uint32_t pos = 0;       // start of the most recent occurrence of this m-gram
    uint32_t count = 0;     // occurrences after the key; 0 = free slot
    uint32_t next_len = 0;  // length of the next draft from this value; 0 = m
};

struct K4vEntry {
    uint32_t hits = 0;  // earlier occurrences of the key followed by at least one token
    std::array<K4vValue, kK4vValues> values{};
    uint64_t n_drafted = 0, n_accepted = 0;  // tokens drafted from this key / accepted
    uint32_t evictions = 0;                  // values replaced by a newer one
};

class NgramMapK4v : public SeqDrafter {
public:
    explicit NgramMapK4v(const NgramParams& p) : p_(p), keys_(&log_, p.n) {}
    NgramMapK4v(const NgramMapK4v&) = delete;
    NgramMapK4v& operator=(const NgramMapK4v&) = delete;

    void begin(std::span<const int32_t> prompt) override;
    size_t propose(std::span<const int32_t> history, std::span<int32_t> out) override;
    size_t propose_branches(std::span<const int32_t> history, size_t max_len, std::span<int32_t> tokens,
                            std::span<uint32_t> lens) override;
    void accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) override;

    const K4vEntry* lookup(std::span<const int32_t> key) const { return keys_.find(key); }
    size_t n_keys() const { return keys_.size(); }
    // The m tokens of a value of an entry returned by lookup().
    std::span<const int32_t> value_tokens(const K4vValue& v) const { return log_.span().subspan(v.pos, p_.m); }

private:
    void index(std::span<const int32_t> history);
    void add_value(K4vEntry& e, uint32_t pos);

    NgramParams p_;
    TokenLog log_;
    KeyIndex<K4vEntry> keys_;
    size_t keys_indexed_ = 0;    // key occurrences starting before this are counted
    size_t values_indexed_ = 0;  // value m-grams of occurrences starting before this are counted
    K4vEntry* drafted_ = nullptr;
    int drafted_slot_ = -1;
};

}  // namespace ngram
