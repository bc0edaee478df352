// SPDX-License-Identifier: Apache-2.0
// host/serve/best_of.cpp
#include "serve/best_of.h"

#include <algorithm>
#include <numeric>

namespace tdm::server {

std::vector<uint32_t> best_sequences(std::span<const Outcome> outcomes, uint32_t n) {
    std::vector<uint32_t> order(outcomes.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return outcomes[a].cumulative_logprob > outcomes[b].cumulative_logprob;
    });
    order.resize(std::min<size_t>(order.size(), n));
    return order;
}

}  // namespace tdm::server
