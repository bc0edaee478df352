// SPDX-License-Identifier: Apache-2.0
// host/engine/generate.cpp: the stop rule, and generate() and generate_speculative() as
// the engine with one session (engine/solo.h).
#include "engine/generate.h"

#include <algorithm>

#include "engine/solo.h"

namespace tdm {

std::optional<StopReason> StopRule::check(int32_t token) const {
    if (std::find(stop_tokens.begin(), stop_tokens.end(), token) != stop_tokens.end()) return StopReason::stop_token;
    if (!ignore_eog && tokenizer && tokenizer->is_eog(token)) return StopReason::eog;
    return std::nullopt;
}

Result<GenerateResult> generate(Runner& runner, const Tokenizer* tokenizer, int seq, std::span<const int32_t> prompt,
                                const GenerateParams& params, const std::function<void(const std::string&)>& on_text,
                                const LogitsSink& sink, bool logits_all) {
    SpecResult r = TDM_TRY(run_solo(runner, tokenizer, seq, prompt, params, {}, SpecParams{}, on_text, sink, logits_all));
    return std::move(r.gen);
}

Result<SpecResult> generate_speculative(Runner& target, const Tokenizer* tokenizer, int seq,
                                        std::span<const int32_t> prompt, const GenerateParams& params,
                                        std::span<Drafter* const> drafters, const SpecParams& spec,
                                        const std::function<void(const std::string&)>& on_text) {
    if (drafters.empty()) return Error("speculative decoding needs at least one drafter");
    return run_solo(target, tokenizer, seq, prompt, params, drafters, spec, on_text);
}

}  // namespace tdm
