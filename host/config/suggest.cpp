// SPDX-License-Identifier: Apache-2.0
// host/config/suggest.cpp: edit distance and the closest-name rule for suggestions.
#include "config/suggest.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace tdm {

size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rolling rows of the dynamic-programming table: the swap case looks two back.
    const size_t n = b.size();
    std::vector<size_t> prev2(n + 1), prev(n + 1), cur(n + 1);
    for (size_t j = 0; j <= n; ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= n; ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cur[j] = std::min(cur[j], prev2[j - 2] + 1);
        }
        std::swap(prev2, prev);
        std::swap(prev, cur);
    }
    return prev[n];
}

namespace {

std::string normalise(std::string_view s) {
    while (!s.empty() && s.front() == '-') s.remove_prefix(1);
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

std::optional<std::string> closest_name(std::string_view name, std::span<const std::string> candidates) {
    const std::string n = normalise(name);
    if (n.empty()) return std::nullopt;
    const size_t limit = std::max<size_t>(2, n.size() / 3);
    std::optional<std::string> best;
    size_t best_d = limit + 1;
    for (const std::string& cand : candidates) {
        const std::string c = normalise(cand);
        if (c == n && cand == name) continue;  // the name itself is no suggestion
        size_t d = edit_distance(n, c);
        const size_t shorter = std::min(n.size(), c.size());
        // A prefix match is worth suggesting even when long: "--temperature" for "--temp".
        if (d > limit && shorter >= 4 && (c.starts_with(n) || n.starts_with(c))) d = limit;
        if (d < best_d) {
            best_d = d;
            best = cand;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view name, std::span<const std::string> candidates) {
    auto c = closest_name(name, candidates);
    return c ? " (did you mean '" + *c + "'?)" : std::string();
}

}  // namespace tdm
