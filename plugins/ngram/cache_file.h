/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/cache_file.h: ngram-cache's statistics file (--spec-ngram-cache,
// -lcs). Untrusted input: every field is checked and a bad file is rejected
// with a message naming the file, what is wrong and where, never a crash.
//
// Layout (little-endian):
//   header   8  magic "TDMNGRAM"
//            4  u32 version (1)
//            4  u32 largest n-gram size (1..4)
//            8  u64 number of n-grams
//            8  u64 payload bytes (everything between header and checksum)
//   payload  per n-gram, sorted (by size, then ids): u32 n, n x i32 ids,
//            u32 number of followers, then per follower (sorted by id):
//            i32 id, u32 count (>= 1)
//   trailer  8  u64 FNV-1a 64 of every byte before it
// Sorted output makes a save deterministic (equal caches, equal files).
// This is not llama.cpp's lookup file format (that one has no header or
// checksum, so a truncated or foreign file cannot be told from a valid one).
// Not here: the statistics (ngram_cache.h).
#pragma once

#include <string>

#include "ngram_cache.h"

namespace ngram {

enum class CacheLoad { ok, missing, error };

// Reads `path` into *out. `missing` (nothing read, no error) when the file does
// not exist; `error` with *err ("<path>: <problem>") for anything else wrong.
CacheLoad load_ngram_cache(const std::string& path, NgramCache* out, std::string* err);

// The file's bytes for a cache (exposed for tests that corrupt them).
std::string encode_ngram_cache(const NgramCache& cache);
// Parses bytes as load_ngram_cache does; `name` prefixes error messages.
bool decode_ngram_cache(const std::string& bytes, const std::string& name, NgramCache* out, std::string* err);

// Writes the cache to `path` through a temporary file in the same directory
// and a rename, so the file is always either the old or the new version.
bool save_ngram_cache(const std::string& path, const NgramCache& cache, std::string* err);

}  // namespace ngram
