// SPDX-License-Identifier: Apache-2.0
// host/speculative/forced_drafter.cpp
#include "speculative/forced_drafter.h"

namespace tdm {

ForcedDrafter::ForcedDrafter(std::vector<int32_t> reference, size_t prompt_len, double acceptance, uint32_t n_vocab,
                             uint64_t seed, Drafter* inner)
    : ref_(std::move(reference)), prompt_len_(prompt_len), a_(acceptance), n_vocab_(n_vocab), rng_(seed),
      inner_(inner) {
    if (inner_) name_ = "forced " + inner_->name();
}

Status ForcedDrafter::begin(std::span<const int32_t> prompt) {
    if (prompt.size() != prompt_len_) return Error("forced drafter: a different prompt than the reference run's");
    return inner_ ? inner_->begin(prompt) : Status{};
}

Result<std::vector<int32_t>> ForcedDrafter::draft(const DraftRequest& req) {
    // history = prompt + g emitted tokens; the target's next token is ref[g]
    const size_t g = req.history.size() - prompt_len_;
    uint32_t n = req.max;
    if (inner_) n = uint32_t(TDM_TRY(inner_->draft(req)).size());
    std::vector<int32_t> out;
    bool right = true;
    for (uint32_t i = 0; i < n && g + i < ref_.size(); ++i) {
        right = right && (double(rng_() >> 11) * 0x1.0p-53 < a_);
        const int32_t t = ref_[g + i];
        out.push_back(right ? t : int32_t((uint32_t(t) + 1 + uint32_t(rng_() % (n_vocab_ - 1))) % n_vocab_));
    }
    return out;
}

}  // namespace tdm
