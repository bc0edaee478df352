/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/token_logprobs.h: a token's log-probability under one row of raw logits,
// and the most likely tokens there: what a generated token's logprobs and a prompt token's
// (completions' "echo" with "logprobs") report. Not the sampler's distribution (temperature,
// penalties and filters do not apply: sampling/sampler.h), nor the API's shapes of them
// (serve/openai_response.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tdm {

// A token's log-probability under the model's raw distribution (log-softmax of its logits,
// before any sampling filter, as vLLM and OpenAI report it) and the most likely tokens there.
struct TokenLogprobs {
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // best first; ties by lower id
};

// `token`'s logprob under the row `logits` [n_vocab] and the n_top most likely tokens.
// The row holds no NaN (the runner refuses non-finite logits); -inf entries are fine.
TokenLogprobs token_logprobs(const float* logits, uint32_t n_vocab, int32_t token, uint32_t n_top);

}  // namespace tdm
