// SPDX-License-Identifier: Apache-2.0
// host/engine/continuation.cpp
#include "engine/continuation.h"

#include <algorithm>

namespace tdm {

uint32_t shared_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return uint32_t(i);
}

uint32_t resumable_prefix(const KvPool& kv, int seq, std::span<const int32_t> kv_tokens,
                          std::span<const int32_t> prompt, std::span<Drafter* const> drafters) {
    if (prompt.empty()) return 0;
    const uint32_t n = std::min<uint32_t>(shared_prefix(kv_tokens, prompt), uint32_t(prompt.size() - 1));
    if (n == 0 || !kv.can_truncate(seq, n)) return 0;
    for (Drafter* d : drafters)
        if (!d->can_resume(n)) return 0;
    return n;
}

}  // namespace tdm
