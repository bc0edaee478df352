/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/token_log.h: a drafter's own copy of its sequence's tokens, and
// the overlapping copy that turns a match into a draft. Tables index positions
// of this copy, so they never hold pointers into host memory and stay valid
// whatever the host passes next. Not here: any table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "params.h"

namespace ngram {

class TokenLog {
public:
    struct Sync {
        size_t first_new = 0;  // index of the first token the tables have not seen
        bool rebuilt = false;  // the log was not a prefix of `history`: tables must start over
    };

    // Makes the log equal to `history`. The host's history only ever grows
    // (prompt + accepted tokens); if it is not an extension of the log (a
    // sequence restarted without begin, a broken host), the log is rebuilt
    // rather than trusted, so tables never index stale tokens. O(size) per call:
    // a memcmp of the log, microseconds even at long contexts.
    Sync sync(std::span<const int32_t> history) {
        Sync s;
        const size_t n = tokens_.size();
        if (history.size() < n || (n && std::memcmp(history.data(), tokens_.data(), n * sizeof(int32_t)) != 0)) {
            tokens_.assign(history.begin(), history.end());
            s.rebuilt = true;
            return s;
        }
        s.first_new = n;
        tokens_.insert(tokens_.end(), history.begin() + ptrdiff_t(n), history.end());
        return s;
    }
    void clear() { tokens_.clear(); }
    size_t size() const { return tokens_.size(); }
    const int32_t* data() const { return tokens_.data(); }
    int32_t operator[](size_t i) const { return tokens_[i]; }
    std::span<const int32_t> span() const { return tokens_; }

private:
    std::vector<int32_t> tokens_;
};

// Copies the continuation that starts at `src` (< h.size()) into `out`: token i
// is h[src + i], read from the sequence h extended by the copy itself (an
// overlapping copy, as in LZ77). A match one period back in a cycle of period P
// thus drafts whole periods instead of at most P tokens. Stops at the first id
// outside the vocabulary. Returns how many tokens were written.
inline size_t copy_continuation(std::span<const int32_t> h, size_t src, std::span<int32_t> out, uint32_t n_vocab) {
    size_t i = 0;
    for (; i < out.size(); ++i) {
        const size_t p = src + i;
        const int32_t t = p < h.size() ? h[p] : out[p - h.size()];
        if (!token_ok(t, n_vocab)) break;
        out[i] = t;
    }
    return i;
}

}  // namespace ngram
