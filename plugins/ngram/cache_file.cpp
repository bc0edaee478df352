// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/cache_file.cpp
#include "cache_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ngram {
namespace {

constexpr char kMagic[8] = {'T', 'D', 'M', 'N', 'G', 'R', 'A', 'M'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 32, kTrailerBytes = 8;

uint64_t fnv1a64(const char* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ uint8_t(p[i])) * 0x100000001b3ull;
    return h;
}

void put32(std::string& s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s += char((v >> (8 * i)) & 0xff);
}
void put64(std::string& s, uint64_t v) {
    for (int i = 0; i < 8; ++i) s += char((v >> (8 * i)) & 0xff);
}
uint32_t get32(const char* p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
    return v;
}
uint64_t get64(const char* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
    return v;
}

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
    return b;
}

}  // namespace

std::string encode_ngram_cache(const NgramCache& cache) {
    std::vector<std::pair<const CacheNgram*, const CachePart*>> items;
    items.reserve(cache.size());
    for (const auto& [g, part] : cache.entries()) items.emplace_back(&g, &part);
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
        if (a.first->n != b.first->n) return a.first->n < b.first->n;
        return std::lexicographical_compare(a.first->t.begin(), a.first->t.begin() + a.first->n, b.first->t.begin(),
                                            b.first->t.begin() + b.first->n);
    });
    std::string payload;
    CachePart sorted;
    for (const auto& [g, part] : items) {
        put32(payload, g->n);
        for (int i = 0; i < g->n; ++i) put32(payload, uint32_t(g->t[size_t(i)]));
        sorted = *part;
        std::sort(sorted.begin(), sorted.end());
        put32(payload, uint32_t(sorted.size()));
        for (const auto& [tok, c] : sorted) {
            put32(payload, uint32_t(tok));
            put32(payload, c);
        }
    }
    std::string out(kMagic, sizeof kMagic);
    put32(out, kVersion);
    put32(out, kCacheNgramMax);
    put64(out, items.size());
    put64(out, payload.size());
    out += payload;
    put64(out, fnv1a64(out.data(), out.size()));
    return out;
}

bool decode_ngram_cache(const std::string& bytes, const std::string& name, NgramCache* out, std::string* err) {
    auto fail = [&](const std::string& what) {
        *err = name + ": " + what;
        return false;
    };
    const size_t size = bytes.size();
    const char* b = bytes.data();
    if (size < sizeof kMagic || std::memcmp(b, kMagic, sizeof kMagic) != 0)
        return fail("not an n-gram cache file (it does not start with \"TDMNGRAM\")");
    if (size < kHeaderBytes)
        return fail("truncated header: " + std::to_string(size) + " bytes, a header has " +
                    std::to_string(kHeaderBytes));
    const uint32_t version = get32(b + 8), max_n = get32(b + 12);
    const uint64_t n_entries = get64(b + 16), payload = get64(b + 24);
    if (version != kVersion)
        return fail("unsupported version " + std::to_string(version) + " (this build reads version " +
                    std::to_string(kVersion) + ")");
    if (max_n < 1 || max_n > uint32_t(kCacheNgramMax))
        return fail("n-gram size " + std::to_string(max_n) + " in the header is outside 1.." +
                    std::to_string(kCacheNgramMax));
    if (payload > size || kHeaderBytes + payload + kTrailerBytes > size)
        return fail("truncated: the header announces " + std::to_string(payload) + " bytes of n-grams, the file " +
                    "has " + std::to_string(size) + " bytes in all (expected " +
                    std::to_string(kHeaderBytes + payload + kTrailerBytes) + ")");
    if (kHeaderBytes + payload + kTrailerBytes < size)
        return fail(std::to_string(size - (kHeaderBytes + payload + kTrailerBytes)) +
                    " unexpected bytes after the checksum");
    const size_t body = kHeaderBytes + size_t(payload);
    const uint64_t stored = get64(b + body), computed = fnv1a64(b, body);
    if (stored != computed)
        return fail("checksum mismatch (stored " + hex(stored) + ", computed " + hex(computed) +
                    "): the file is corrupt");

    // The checksum holds, so what follows only fails on a file written by
    // something else than save_ngram_cache; still, nothing is trusted.
    NgramCache cache;
    size_t pos = kHeaderBytes;
    auto read32 = [&](uint32_t* v) {
        if (body - pos < 4) return false;
        *v = get32(b + pos);
        pos += 4;
        return true;
    };
    for (uint64_t e = 0; e < n_entries; ++e) {
        const std::string where = "n-gram " + std::to_string(e) + " (byte " + std::to_string(pos) + ")";
        uint32_t n = 0, n_next = 0;
        if (!read32(&n)) return fail(where + ": the n-gram data ends early");
        if (n < 1 || n > max_n) return fail(where + ": size " + std::to_string(n) + " outside 1.." + std::to_string(max_n));
        std::array<int32_t, kCacheNgramMax> ids{};
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t v = 0;
            if (!read32(&v)) return fail(where + ": the n-gram data ends early");
            if (int32_t(v) < 0) return fail(where + ": negative token id " + std::to_string(int32_t(v)));
            ids[i] = int32_t(v);
        }
        const CacheNgram g = CacheNgram::of(std::span<const int32_t>(ids.data(), n));
        if (cache.find(g)) return fail(where + ": the same n-gram appears twice");
        if (!read32(&n_next)) return fail(where + ": the n-gram data ends early");
        if (n_next == 0) return fail(where + ": no following tokens");
        for (uint32_t i = 0; i < n_next; ++i) {
            uint32_t tok = 0, count = 0;
            if (!read32(&tok) || !read32(&count)) return fail(where + ": the n-gram data ends early");
            if (int32_t(tok) < 0) return fail(where + ": negative token id " + std::to_string(int32_t(tok)));
            if (count == 0) return fail(where + ": a following token with count 0");
            if (cache.count(g, int32_t(tok))) return fail(where + ": the same following token appears twice");
            cache.add(g, int32_t(tok), count);
        }
    }
    if (pos != body)
        return fail(std::to_string(body - pos) + " bytes of n-gram data left over after the " +
                    std::to_string(n_entries) + " n-grams the header announces");
    *out = std::move(cache);
    return true;
}

CacheLoad load_ngram_cache(const std::string& path, NgramCache* out, std::string* err) {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (st.type() == std::filesystem::file_type::not_found) return CacheLoad::missing;
    if (!ec && st.type() != std::filesystem::file_type::regular) {
        *err = path + ": not a regular file";
        return CacheLoad::error;
    }
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
        if (errno == ENOENT) return CacheLoad::missing;
        *err = path + ": cannot open: " + std::strerror(errno);
        return CacheLoad::error;
    }
    std::string bytes;
    char buf[1 << 16];
    size_t got = 0;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, got);
    const bool bad = std::ferror(f) != 0;
    const int e = errno;
    std::fclose(f);
    if (bad) {
        *err = path + ": read error: " + std::strerror(e);
        return CacheLoad::error;
    }
    return decode_ngram_cache(bytes, path, out, err) ? CacheLoad::ok : CacheLoad::error;
}

bool save_ngram_cache(const std::string& path, const NgramCache& cache, std::string* err) {
    const std::string bytes = encode_ngram_cache(cache);
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
        *err = path + ": cannot write (creating " + tmp + "): " + std::strerror(errno);
        return false;
    }
    const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    const int e = errno;
    if (std::fclose(f) != 0 || !wrote) {
        *err = path + ": cannot write " + tmp + ": " + std::strerror(wrote ? errno : e);
        std::remove(tmp.c_str());
        return false;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        *err = path + ": cannot replace it with " + tmp + ": " + std::strerror(errno);
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace ngram
