/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/solo.h: one request on one sequence, through the batching engine
// (engine/batch_engine.h) with a single slot: what generate() and generate_speculative()
// are, so that `tandem run`, `chat`, `bench` and the demo run the server's code path.
//
// The sequence's KV holds prompt[0, params.n_cached) and every drafter follows it (see
// resumable_prefix() in engine/continuation.h); the rest is prefilled in chunks of
// params.n_batch. On return the KV holds the first `gen.n_kv` tokens of prompt + tokens.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "engine/generate.h"
#include "speculative/drafter.h"

namespace tdm {

// Drafters empty: plain decoding (`stats` stays empty). spec.trace_path, if set, gets one
// JSON line per round.
Result<SpecResult> run_solo(Runner& runner, const Tokenizer* tokenizer, int seq, std::span<const int32_t> prompt,
                            const GenerateParams& params, std::span<Drafter* const> drafters, const SpecParams& spec,
                            const std::function<void(const std::string&)>& on_text, const LogitsSink& sink = {},
                            bool logits_all = false);

}  // namespace tdm
