// SPDX-License-Identifier: Apache-2.0
// host/serve/drafter_chain.cpp
#include "serve/drafter_chain.h"

namespace tdm {

std::vector<Drafter*> shared_drafters(std::span<Drafter* const> order, std::span<const DrafterFactory> fresh) {
    std::vector<Drafter*> out;
    for (size_t i = 0; i < order.size(); ++i)
        if (i >= fresh.size() || !fresh[i]) out.push_back(order[i]);
    return out;
}

Result<std::vector<DrafterSlot>> request_drafters(std::span<Drafter* const> order,
                                                  std::span<const DrafterFactory> fresh,
                                                  std::span<const size_t> picks) {
    std::vector<DrafterSlot> out;
    for (size_t n = 0; n < (picks.empty() ? order.size() : picks.size()); ++n) {
        const size_t i = picks.empty() ? n : picks[n];
        DrafterSlot ds;
        if (i < fresh.size() && fresh[i])
            ds.owned = TDM_TRY(fresh[i]());
        else
            ds.shared = order[i];
        out.push_back(std::move(ds));
    }
    return out;
}

tdm_hidden_point chain_hidden_point(std::span<Drafter* const> order) {
    for (Drafter* d : order)
        if (d->hidden_point() != TDM_HIDDEN_NONE) return d->hidden_point();
    return TDM_HIDDEN_NONE;
}

}  // namespace tdm
