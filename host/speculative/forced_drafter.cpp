// SPDX-License-Identifier: Apache-2.0
// host/speculative/forced_drafter.cpp
#include "speculative/forced_drafter.h"

#include <algorithm>

namespace tdm {

ForcedDrafter::ForcedDrafter(std::vector<int32_t> reference, size_t prompt_len, double acceptance, uint32_t n_vocab,
                             uint64_t seed, Drafter* inner)
    : ref_(std::move(reference)), prompt_len_(prompt_len), a_(acceptance), n_vocab_(n_vocab), seed_(seed),
      rng_(seed), inner_(inner) {
    if (inner_) name_ = "forced " + inner_->name();
}

Status ForcedDrafter::begin(std::span<const int32_t> prompt) {
    if (prompt.size() != prompt_len_) return Error("forced drafter: a different prompt than the reference run's");
    return inner_ ? inner_->begin(prompt) : Status{};
}

double forced_draw(uint64_t seed, size_t position) {
    // splitmix64 of the seed and the position: a fixed draw per position of the output
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t(position) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return double(z >> 11) * 0x1.0p-53;
}

bool ForcedDrafter::right_at(size_t position) const { return forced_draw(seed_, position) < a_; }

Result<std::vector<int32_t>> ForcedDrafter::draft(const DraftRequest& req) {
    // history = prompt + g emitted tokens; the target's next token is ref[g]
    const size_t g = req.history.size() - prompt_len_;
    uint32_t n = req.max;
    if (inner_) n = uint32_t(TDM_TRY(inner_->draft(req)).size());
    std::vector<int32_t> out;
    bool right = true;
    for (uint32_t i = 0; i < n && g + i < ref_.size(); ++i) {
        right = right && right_at(g + i);
        const int32_t t = ref_[g + i];
        out.push_back(right ? t : other_than(t));
    }
    return out;
}

Result<DraftTree> ForcedDrafter::draft_tree(const DraftRequest& req) {
    const size_t g = req.history.size() - prompt_len_;
    const uint32_t width = std::max(1u, req.tree.topk);
    const uint32_t steps = req.tree.steps ? req.tree.steps : kKvTreeMaxNodes;
    DraftTree t(req.history.back());
    uint32_t on = 0;  // the node the next level grows under
    bool on_path = true;
    for (uint32_t level = 0; level < steps && g + level < ref_.size() && t.size() < req.tree.nodes; ++level) {
        const int32_t tok = ref_[g + level];
        uint32_t hit = 0, first = 0;
        for (uint32_t c = 0; c < width && t.size() < req.tree.nodes; ++c) {
            const bool here = on_path && !hit && right();
            const uint32_t node = TDM_TRY(t.add(on, here ? tok : other_than(tok)));
            if (here) hit = node;
            if (!first) first = node;
        }
        on_path = hit != 0;
        on = hit ? hit : first;
    }
    return t;
}

}  // namespace tdm
