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
        std::vector<int32_t> ids(n_vocab);
        for (uint32_t i = 0; i < n_vocab; ++i) ids[i] = int32_t(i);
        const auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
        std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(), better);
        for (uint32_t i = 0; i < n_top; ++i) lp.top.emplace_back(ids[i], float(double(logits[ids[i]]) - log_z));
    }
    return lp;
}

}  // namespace tdm
