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

}  // namespace ngram
