// SPDX-License-Identifier: Apache-2.0
// host/engine/generate.cpp
#include "engine/generate.h"

#include <algorithm>

#include "engine/solo.h"

namespace tdm {

std::string StopRule::check(int32_t token) const {
    if (std::find(stop_tokens.begin(), stop_tokens.end(), token) != stop_tokens.end()) return "stop_token";
    if (!ignore_eog && tokenizer && tokenizer->is_eog(token)) return "eog";
    return {};
}

Result<GenerateResult> generate(Runner& runner, const Tokenizer* tokenizer, int seq, std::span<const int32_t> prompt,
                                const GenerateParams& params, const std::function<void(const std::string&)>& on_text,
                                const LogitsSink& sink, bool logits_all) {
    SpecResult r = TDM_TRY(run_solo(runner, tokenizer, seq, prompt, params, {}, SpecParams{}, on_text, sink, logits_all));
    return std::move(r.gen);
}

}  // namespace tdm
