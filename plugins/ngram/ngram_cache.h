/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/ngram_cache.h: ngram-cache, after llama.cpp's lookup decoding
// (common/ngram-cache.cpp; PRs #5479, #6828, #6848): statistics of which token
// follows each 1..4-gram, in two tables:
//   - the dynamic cache: this sequence's prompt and accepted text, rebuilt per
//     sequence (llama.cpp's "context" cache);
//   - the static cache: statistics gathered over earlier runs, loaded from the
//     --spec-ngram-cache file at create (cache_file.h) and merged back in save().
// Each draft token is chosen, as in llama.cpp, by the longest n-gram (4 down to
// 1) whose dynamic statistics pass lax thresholds (each candidate's count
// weighted by its static 2-gram count), else by the static statistics under
// strict thresholds (llama.cpp's dynamic-file tier: statistics from other texts
// need more evidence); drafting stops at the first position neither decides.
//
// Save/merge policy: save() re-reads the file as it is now (another sequence or
// process may have saved since create), adds the counts this drafter gathered
// since its previous save (counts add; a count saturates at 2^32-1), writes the
// result to a temporary file and renames it over the original (a reader never
// sees half a file), and makes the result its static cache. A file that has
// become unreadable is left alone and save() fails. Two processes saving at the
// same instant can lose one's additions (last rename wins); the file never
// holds a partial write. The file grows with every new n-gram and is never
// pruned. Not here: the file format (cache_file.h).
#pragma once

#include <array>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "drafter.h"
#include "params.h"
#include "token_log.h"

namespace ngram {

constexpr int kCacheNgramMax = 4;     // llama.cpp's LLAMA_NGRAM_MAX
constexpr int kCacheNgramStatic = 2;  // llama.cpp's LLAMA_NGRAM_STATIC: the weighting n-gram

struct CacheNgram {
    uint8_t n = 0;  // 1..kCacheNgramMax; part of the key: a 2-gram never equals a 3-gram
    std::array<int32_t, kCacheNgramMax> t{};
    static CacheNgram of(std::span<const int32_t> tokens);  // tokens.size() in 1..kCacheNgramMax
    bool operator==(const CacheNgram&) const = default;
};

struct CacheNgramHash {
    size_t operator()(const CacheNgram& g) const;
};

// The tokens seen after one n-gram with their counts; few per n-gram, so a
// small vector searched linearly beats a map.
using CachePart = std::vector<std::pair<int32_t, uint32_t>>;

class NgramCache {
public:
    // count occurrences of `next` after `g` (saturating)
    void add(const CacheNgram& g, int32_t next, uint32_t count = 1);
    // Counts, for every position i in [from, tokens.size()), the n-grams of
    // sizes 1..kCacheNgramMax that end just before i, followed by tokens[i];
    // n-grams with an id outside the vocabulary are skipped (never saved).
    void update(std::span<const int32_t> tokens, size_t from, uint32_t n_vocab);
    void merge(const NgramCache& other);
    const CachePart* find(const CacheNgram& g) const;
    uint32_t count(const CacheNgram& g, int32_t next) const;

    size_t size() const { return map_.size(); }
    bool empty() const { return map_.empty(); }
    void clear() { map_.clear(); }
    const std::unordered_map<CacheNgram, CachePart, CacheNgramHash>& entries() const { return map_; }
    bool operator==(const NgramCache& o) const;  // same n-grams, same counts (order-free)

private:
    std::unordered_map<CacheNgram, CachePart, CacheNgramHash> map_;
};

// Thresholds per n-gram size (index n-1): a candidate needs at least
// min_samples observations of its n-gram and min_percent of them.
struct CacheThresholds {
    std::array<int, kCacheNgramMax> min_samples, min_percent;
};
constexpr CacheThresholds kCacheLax{{2, 2, 1, 1}, {66, 50, 50, 50}};     // llama.cpp's _lax
constexpr CacheThresholds kCacheStrict{{4, 3, 2, 2}, {75, 66, 66, 66}};  // llama.cpp's _strict

// Drafts up to out.size() tokens after `history` from the two caches, using
// n-grams of at most max_n (1..kCacheNgramMax) tokens.
size_t ngram_cache_draft(std::span<const int32_t> history, const NgramCache& dynamic, const NgramCache& stat,
                         int max_n, uint32_t n_vocab, std::span<int32_t> out);

class NgramCacheDrafter : public SeqDrafter {
public:
    // Loads p.cache_path if it exists; false with *err naming the file and the
    // problem if it exists but cannot be read or is not a valid cache.
    static std::unique_ptr<NgramCacheDrafter> create(const NgramParams& p, std::string* err);

    void begin(std::span<const int32_t> prompt) override;
    size_t propose(std::span<const int32_t> history, std::span<int32_t> out) override;
    void accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) override;
    bool save(std::string* err) override;

    const NgramCache& dynamic_cache() const { return dynamic_; }
    const NgramCache& static_cache() const { return static_; }

private:
    explicit NgramCacheDrafter(const NgramParams& p) : p_(p) {}
    void learn(std::span<const int32_t> history);

    NgramParams p_;
    int max_n_;             // min(n, kCacheNgramMax)
    NgramCache dynamic_;    // this sequence
    NgramCache static_;     // the file's statistics (as of the last load or save)
    NgramCache unsaved_;    // what this drafter learnt since its last save
    TokenLog log_;          // the tokens dynamic_ was built from
};

}  // namespace ngram
