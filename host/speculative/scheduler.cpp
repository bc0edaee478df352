// SPDX-License-Identifier: Apache-2.0
// host/speculative/scheduler.cpp: speculative generation of one request is the batching
// engine with one session (engine/solo.h); the round itself is engine/batch_session.cpp.
#include "speculative/scheduler.h"

#include "engine/solo.h"

namespace tdm {

Result<SpecResult> generate_speculative(Runner& target, const Tokenizer* tokenizer, int seq,
                                        std::span<const int32_t> prompt, const GenerateParams& params,
                                        std::span<Drafter* const> drafters, const SpecParams& spec,
                                        const std::function<void(const std::string&)>& on_text) {
    if (drafters.empty()) return Error("speculative decoding needs at least one drafter");
    return run_solo(target, tokenizer, seq, prompt, params, drafters, spec, on_text);
}

}  // namespace tdm
