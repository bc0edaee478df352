// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/params.cpp
#include "params.h"

namespace ngram {
namespace {

// Reads one integer option into *out; an absent key leaves *out unchanged.
bool read_int(const tdm_host_api* host, const tdm_options* o, const char* key, int64_t lo, int64_t hi,
              const char* flag, int64_t* out, std::string* err) {
    if (!o) return true;
    int64_t v = 0;
    const tdm_status st = host->option_get_int(o, key, &v);
    if (st == TDM_ERR_NOT_FOUND) return true;
    if (st != TDM_OK) {
        const char* why = host->last_error ? host->last_error() : "";
        *err = std::string("option ") + key + " (" + flag + "): " + (why && *why ? why : "not an integer");
        return false;
    }
    if (v < lo || v > hi) {
        *err = std::string(key) + " (" + flag + ") must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
               "], got " + std::to_string(v);
        return false;
    }
    *out = v;
    return true;
}

}  // namespace

bool validate_params(const NgramParams& p, std::string* err) {
    auto check = [&](const char* key, const char* flag, uint32_t v, uint32_t hi) {
        if (v >= 1 && v <= hi) return true;
        *err = std::string(key) + " (" + flag + ") must be in [1, " + std::to_string(hi) + "], got " +
               std::to_string(v);
        return false;
    };
    return check("ngram_size_n", "--spec-ngram-size-n", p.n, kMaxNgramSize) &&
           check("ngram_size_m", "--spec-ngram-size-m", p.m, kMaxNgramSize) &&
           check("ngram_min_hits", "--spec-ngram-min-hits", p.min_hits, kMaxMinHits);
}

bool read_params(const tdm_host_api* host, const tdm_options* o, NgramParams* out, std::string* err) {
    NgramParams p = *out;
    int64_t n = p.n, m = p.m, hits = p.min_hits, vocab = p.n_vocab;
    // Ranges are checked with signed values first so that -1 is reported as -1.
    if (!read_int(host, o, "ngram_size_n", 1, kMaxNgramSize, "--spec-ngram-size-n", &n, err) ||
        !read_int(host, o, "ngram_size_m", 1, kMaxNgramSize, "--spec-ngram-size-m", &m, err) ||
        !read_int(host, o, "ngram_min_hits", 1, kMaxMinHits, "--spec-ngram-min-hits", &hits, err) ||
        !read_int(host, o, "n_vocab", 0, INT32_MAX, "the target's vocabulary size", &vocab, err))
        return false;
    p.n = uint32_t(n);
    p.m = uint32_t(m);
    p.min_hits = uint32_t(hits);
    p.n_vocab = uint32_t(vocab);
    if (o) {
        const char* path = nullptr;
        if (host->option_get_string(o, "ngram_cache", &path) == TDM_OK && path) p.cache_path = path;
    }
    if (!validate_params(p, err)) return false;
    *out = std::move(p);
    return true;
}

}  // namespace ngram
