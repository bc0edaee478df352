/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/map_k.h: ngram-map-k: a hash map from every key n-gram of the
// sequence to the statistics of its occurrences. A key drafts the m tokens that
// followed its most recent earlier occurrence, once it has occurred at least
// min_hits times; the accepted count of each draft is kept per key and sizes
// that key's next draft.
//
// Compared with llama.cpp (common/ngram-map.cpp, key_only mode): the map is
// updated incrementally as tokens arrive (O(n) per token) instead of scanning
// the history for the key on every call; hits are occurrences in the history
// (not calls that matched); after a partly accepted draft the key's next draft
// is one token longer than what was accepted (llama.cpp: exactly what was
// accepted, so a key whose draft was wholly rejected never drafts again), and a
// wholly accepted draft restores the full m. The continuation is an overlapping
// copy (token_log.h). Not here: several values per key (map_k4v.h).
#pragma once

#include "drafter.h"
#include "key_index.h"

namespace ngram {

struct MapKEntry {
    uint32_t hits = 0;      // earlier occurrences followed by at least one token
    uint32_t last = 0;      // start of the most recent of them
    uint32_t next_len = 0;  // length of this key's next draft; 0 = m
    uint32_t n_drafts = 0;  // drafts from this key that were verified
    uint64_t n_drafted = 0, n_accepted = 0;  // their tokens: proposed, accepted
};

class NgramMapK : public SeqDrafter {
public:
    explicit NgramMapK(const NgramParams& p) : p_(p), keys_(&log_, p.n) {}
    NgramMapK(const NgramMapK&) = delete;
    NgramMapK& operator=(const NgramMapK&) = delete;

    void begin(std::span<const int32_t> prompt) override;
    size_t propose(std::span<const int32_t> history, std::span<int32_t> out) override;
    void accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) override;

    // Inspection (tests, logs): the statistics of a key of n tokens, or null.
    const MapKEntry* lookup(std::span<const int32_t> key) const { return keys_.find(key); }
    size_t n_keys() const { return keys_.size(); }

private:
    void index(std::span<const int32_t> history);

    NgramParams p_;
    TokenLog log_;
    KeyIndex<MapKEntry> keys_;
    size_t indexed_ = 0;           // occurrences starting before this are counted
    MapKEntry* drafted_ = nullptr; // entry of the last proposal, until its accept
};

}  // namespace ngram
