// SPDX-License-Identifier: Apache-2.0
// host/engine/token_logprobs.cpp
#include "engine/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tdm {

TokenLogprobs token_logprobs(const float* logits, uint32_t n_vocab, int32_t token, uint32_t n_top) {
    float mx = -std::numeric_limits<float>::infinity();
    for (uint32_t i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (uint32_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - double(mx));
    const double log_z = double(mx) + std::log(sum);
    TokenLogprobs lp;
    lp.logprob = float(double(logits[token]) - log_z);
    n_top = std::min(n_top, n_vocab);
    if (n_top) {
        // One pass keeping the n_top best so far, best first (n_top is small: OpenAI allows
        // 20), instead of sorting an index of the whole vocabulary per row. The order is
        // total (ties by lower id), so these are the n_top a full sort would give.
        const auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
        std::vector<int32_t> best;
        best.reserve(n_top);
        for (uint32_t i = 0; i < n_vocab; ++i) {
            const auto id = int32_t(i);
            if (best.size() == n_top && !better(id, best.back())) continue;
            if (best.size() == n_top) best.pop_back();
            best.insert(std::upper_bound(best.begin(), best.end(), id, better), id);
        }
        for (int32_t id : best) lp.top.emplace_back(id, float(double(logits[id]) - log_z));
    }
    return lp;
}

}  // namespace tdm
