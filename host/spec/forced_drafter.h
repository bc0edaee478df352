// host/spec/forced_drafter.h: a benchmark-only drafter (`tandem bench spec
// --force-acceptance A`). It proposes the target's own future tokens, taken from
// a plain run of the same prompt, and keeps each draft position correct with
// probability A (given that the earlier ones are); a wrong position gets another
// token. So the machinery's speedup(A) curve can be measured on synthetic
// weights that have no real draft agreement. Costs nothing to run.
#pragma once

#include <random>

#include "spec/drafter.h"

namespace tdm {

class ForcedDrafter : public Drafter {
public:
    // reference: the tokens plain decoding generated after `prompt_len` prompt tokens.
    ForcedDrafter(std::vector<int32_t> reference, size_t prompt_len, double acceptance, uint32_t n_vocab,
                  uint64_t seed);
    const std::string& name() const override { return name_; }
    Status begin(std::span<const int32_t> prompt) override;
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override;
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }

private:
    std::string name_ = "forced";
    std::vector<int32_t> ref_;
    size_t prompt_len_;
    double a_;
    uint32_t n_vocab_;
    std::mt19937_64 rng_;
};

}  // namespace tdm
