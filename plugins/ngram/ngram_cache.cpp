// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/ngram_cache.cpp
#include "ngram_cache.h"

#include <algorithm>

#include "cache_file.h"

namespace ngram {

// ---------------------------------------------------------------- table

CacheNgram CacheNgram::of(std::span<const int32_t> tokens) {
    CacheNgram g;
    g.n = uint8_t(tokens.size());
    std::copy(tokens.begin(), tokens.end(), g.t.begin());
    return g;
}

size_t CacheNgramHash::operator()(const CacheNgram& g) const {
    uint64_t h = 0xcbf29ce484222325ull ^ g.n;
    for (int i = 0; i < g.n; ++i) h = (h ^ uint32_t(g.t[size_t(i)])) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return size_t(h);
}

void NgramCache::add(const CacheNgram& g, int32_t next, uint32_t count) {
    CachePart& part = map_[g];
    for (auto& [tok, c] : part)
        if (tok == next) {
            c = c > UINT32_MAX - count ? UINT32_MAX : c + count;
            return;
        }
    part.emplace_back(next, count);
}

void NgramCache::update(std::span<const int32_t> tokens, size_t from, uint32_t n_vocab) {
    for (size_t i = std::max<size_t>(from, 1); i < tokens.size(); ++i) {
        if (!token_ok(tokens[i], n_vocab)) continue;
        // sizes grow while the ids before i stay valid
        for (size_t s = 1; s <= size_t(kCacheNgramMax) && s <= i; ++s) {
            if (!token_ok(tokens[i - s], n_vocab)) break;
            add(CacheNgram::of(tokens.subspan(i - s, s)), tokens[i]);
        }
    }
}

void NgramCache::merge(const NgramCache& other) {
    for (const auto& [g, part] : other.map_)
        for (const auto& [tok, c] : part) add(g, tok, c);
}

const CachePart* NgramCache::find(const CacheNgram& g) const {
    auto it = map_.find(g);
    return it == map_.end() ? nullptr : &it->second;
}

uint32_t NgramCache::count(const CacheNgram& g, int32_t next) const {
    if (const CachePart* p = find(g))
        for (const auto& [tok, c] : *p)
            if (tok == next) return c;
    return 0;
}

bool NgramCache::operator==(const NgramCache& o) const {
    if (map_.size() != o.map_.size()) return false;
    for (const auto& [g, part] : map_) {
        const CachePart* q = o.find(g);
        if (!q || q->size() != part.size()) return false;
        for (const auto& [tok, c] : part)
            if (o.count(g, tok) != c) return false;
    }
    return true;
}

// ---------------------------------------------------------------- drafting

namespace {

// The candidate of one part that passes the thresholds for n-grams of size n,
// or -1. `weights` (the static 2-gram part, may be null) multiplies each
// candidate's count by 100 x its static count, or 1 when it has none there:
// llama.cpp's way of letting long-run statistics break ties in this text.
int32_t pick(const CachePart& part, const CachePart* weights, const CacheThresholds& th, size_t n) {
    // scores in double: count x 100 x static count overflows 64 bits for counts
    // near the 2^32 saturation a long-lived file can reach
    double best_score = 0;
    int64_t best_c = 0, sum = 0;
    int32_t best = -1;
    for (const auto& [tok, c] : part) {
        double w = 1;
        if (weights)
            for (const auto& [wt, wc] : *weights)
                if (wt == tok) w = 100.0 * double(wc);
        if (double(c) * w > best_score) {
            best = tok;
            best_c = c;
            best_score = double(c) * w;
        }
        sum += c;
    }
    if (best < 0 || sum < th.min_samples[n - 1] || 100 * best_c < th.min_percent[n - 1] * sum) return -1;
    return best;
}

}  // namespace

size_t ngram_cache_draft(std::span<const int32_t> history, const NgramCache& dynamic, const NgramCache& stat,
                         int max_n, uint32_t n_vocab, std::span<int32_t> out) {
    const size_t hs = history.size();
    std::array<int32_t, kCacheNgramMax> win{};
    for (size_t k = 0; k < out.size(); ++k) {
        const size_t len = hs + k;  // history + the draft so far
        const size_t top = std::min<size_t>(size_t(max_n), len);
        if (top == 0) return 0;
        // the last `top` tokens of history + draft, oldest first
        for (size_t j = 0; j < top; ++j) {
            const size_t p = len - top + j;
            win[j] = p < hs ? history[p] : out[p - hs];
        }
        auto last = [&](size_t s) { return CacheNgram::of(std::span<const int32_t>(win.data() + top - s, s)); };
        const CachePart* weights = top >= size_t(kCacheNgramStatic) ? stat.find(last(kCacheNgramStatic)) : nullptr;
        int32_t tok = -1;
        for (size_t s = top; s >= 1 && tok < 0; --s)
            if (const CachePart* part = dynamic.find(last(s))) tok = pick(*part, weights, kCacheLax, s);
        for (size_t s = top; s >= 1 && tok < 0; --s)
            if (const CachePart* part = stat.find(last(s))) tok = pick(*part, nullptr, kCacheStrict, s);
        if (tok < 0 || !token_ok(tok, n_vocab)) return k;
        out[k] = tok;
    }
    return out.size();
}

// ---------------------------------------------------------------- drafter

std::unique_ptr<NgramCacheDrafter> NgramCacheDrafter::create(const NgramParams& p, std::string* err) {
    std::unique_ptr<NgramCacheDrafter> d(new NgramCacheDrafter(p));
    d->max_n_ = int(std::min<uint32_t>(p.n, kCacheNgramMax));
    if (!p.cache_path.empty() && load_ngram_cache(p.cache_path, &d->static_, err) == CacheLoad::error) return nullptr;
    return d;
}

void NgramCacheDrafter::learn(std::span<const int32_t> history) {
    const TokenLog::Sync s = log_.sync(history);
    if (s.rebuilt) dynamic_.clear();
    dynamic_.update(log_.span(), s.first_new, p_.n_vocab);
    if (!p_.cache_path.empty()) unsaved_.update(log_.span(), s.first_new, p_.n_vocab);
}

void NgramCacheDrafter::begin(std::span<const int32_t> prompt) {
    log_.clear();
    dynamic_.clear();
    learn(prompt);
}

size_t NgramCacheDrafter::propose(std::span<const int32_t> history, std::span<int32_t> out) {
    learn(history);
    return ngram_cache_draft(log_.span(), dynamic_, static_, max_n_, p_.n_vocab, out);
}

void NgramCacheDrafter::accept(std::span<const int32_t> history, size_t, size_t) { learn(history); }

bool NgramCacheDrafter::save(std::string* err) {
    if (p_.cache_path.empty()) return true;
    NgramCache merged;
    const CacheLoad now = load_ngram_cache(p_.cache_path, &merged, err);
    if (now == CacheLoad::error) {
        *err += " (not overwritten)";
        return false;
    }
    if (now == CacheLoad::ok && unsaved_.empty()) {
        static_ = std::move(merged);  // nothing to add: just pick up others' saves
        return true;
    }
    if (now == CacheLoad::missing) merged = static_;  // deleted since create: keep what we had
    merged.merge(unsaved_);
    if (!save_ngram_cache(p_.cache_path, merged, err)) return false;
    if (p_.log)
        p_.log(TDM_LOG_DEBUG, "ngram_cache: saved " + std::to_string(merged.size()) + " n-grams to " + p_.cache_path);
    static_ = std::move(merged);
    unsaved_.clear();
    return true;
}

}  // namespace ngram
