/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/params.h: the options every n-gram drafter reads (the TOML
// [speculative] keys the host passes as drafter options) and their checks.
// Not here: the tables themselves (one pair of files per drafter).
#pragma once

#include <tandem/tandem.h>

#include <cstdint>
#include <functional>
#include <string>

namespace ngram {

// llama.cpp's defaults (common/common.h: ngram_size_n 12, ngram_size_m 48,
// ngram_min_hits 1), used when the host passes no value.
struct NgramParams {
    uint32_t n = 12;         // ngram_size_n: length of the lookup key
    uint32_t m = 48;         // ngram_size_m: most tokens drafted from one match
    uint32_t min_hits = 1;   // ngram_min_hits: earlier occurrences of a key before it drafts
    uint32_t n_vocab = 0;    // the target's vocabulary; 0 = unknown (only negative ids are refused)
    std::string cache_path;  // ngram_cache: ngram-cache's statistics file ("" = none)
    // Optional sink for the few messages a drafter has (pool resets, cache saves).
    std::function<void(tdm_log_level, const std::string&)> log;
};

// Upper bounds that keep a mistyped option from asking for absurd memory or
// per-call work; far above anything useful (llama.cpp suggests n <= 24, m <= 64).
constexpr uint32_t kMaxNgramSize = 1024;
constexpr uint32_t kMaxMinHits = 1u << 20;

// Reads the options (absent keys keep the defaults) and validates them. On
// failure returns false with a message naming the option, its CLI flag, the
// allowed range and the value found.
bool read_params(const tdm_host_api* host, const tdm_options* options, NgramParams* out, std::string* err);
bool validate_params(const NgramParams& p, std::string* err);

// A draft may only contain ids of the target's vocabulary: the host rejects a
// proposal with any other id as an error, and a history (or the process-wide
// ngram-mod pool, shared by models of different vocabularies) may hold them.
inline bool token_ok(int32_t t, uint32_t n_vocab) { return t >= 0 && (n_vocab == 0 || uint32_t(t) < n_vocab); }

}  // namespace ngram
