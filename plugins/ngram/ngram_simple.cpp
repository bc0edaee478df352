// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/ngram_simple.cpp
#include "ngram_simple.h"

#include <algorithm>

#include "token_log.h"

namespace ngram {

std::optional<size_t> ngram_simple_find(std::span<const int32_t> h, uint32_t n) {
    if (n == 0 || h.size() <= n) return std::nullopt;
    const int32_t* key = h.data() + (h.size() - n);
    // j = h.size() - n is the key itself; the latest earlier start is one before
    for (size_t j = h.size() - n; j-- > 0;)
        if (std::equal(key, key + n, h.data() + j)) return j;
    return std::nullopt;
}

size_t ngram_simple_draft(const NgramParams& p, std::span<const int32_t> h, std::span<int32_t> out) {
    const std::optional<size_t> j = ngram_simple_find(h, p.n);
    if (!j) return 0;
    return copy_continuation(h, *j + p.n, out.first(std::min<size_t>(p.m, out.size())), p.n_vocab);
}

size_t ngram_simple_branches(const NgramParams& p, std::span<const int32_t> h, size_t max_len,
                             std::span<int32_t> tokens, std::span<uint32_t> lens) {
    const uint32_t n = p.n;
    const size_t len = std::min<size_t>(p.m, max_len);
    if (n == 0 || h.size() <= n || len == 0 || tokens.size() < lens.size() * max_len) return 0;
    const int32_t* key = h.data() + (h.size() - n);
    size_t count = 0;
    for (size_t j = h.size() - n; j-- > 0 && count < lens.size();) {
        if (!std::equal(key, key + n, h.data() + j)) continue;
        const std::span<int32_t> out = tokens.subspan(count * max_len, len);
        const size_t k = copy_continuation(h, j + n, out, p.n_vocab);
        // an earlier (more recent) branch that starts with this one already covers it
        bool covered = k == 0;
        for (size_t b = 0; b < count && !covered; ++b)
            covered = lens[b] >= k && std::equal(out.begin(), out.begin() + ptrdiff_t(k), tokens.begin() + ptrdiff_t(b * max_len));
        if (covered) continue;
        lens[count++] = uint32_t(k);
    }
    return count;
}

}  // namespace ngram
