/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/generate.h: generation of one request, plain (chunked prefill, then one
// token per forward pass, sampling, stop conditions, streaming text) or speculative (the
// rounds of speculative/round.h): both run the batching engine with one session
// (engine/solo.h). The speculative entry point lives here, not in speculative/, because it
// runs the engine and speculative/ sits below engine/ (engine -> speculative -> model).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/prompt_images.h"
#include "engine/stop_reason.h"
#include "model/runner.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "speculative/drafter.h"
#include "speculative/round.h"
#include "speculative/stats.h"

namespace tdm {

// Receives raw logit rows (--dump-logits).
using LogitsSink = std::function<void(const float* row, uint32_t n_vocab)>;
// Prefill progress: `done` of the `total` tokens this prefill runs (cached
// tokens are not counted) are in the KV, after `ms` milliseconds.
using ProgressHook = std::function<void(uint32_t done, uint32_t total, double ms)>;

struct GenerateParams {
    int32_t max_tokens = 128;       // tokens to generate; < 0: until end of generation or context
    SamplerParams sampling;
    uint32_t n_batch = 256;         // prefill chunk (tokens per forward pass)
    bool ignore_eog = false;        // keep going past end-of-generation tokens
    std::vector<int32_t> stop_tokens;  // extra stop ids
    // Continuation (chat turns, a restored prompt cache): prompt[0, n_cached)
    // is already in the sequence's KV, and in every drafter's state (see
    // resumable_prefix() in engine/continuation.h); prefill starts there.
    // Batch invariance makes the result identical to a prefill from 0.
    uint32_t n_cached = 0;
    // Set from another thread or a signal handler: generation stops at the
    // next chunk or step with StopReason::cancelled (not an error).
    const std::atomic<bool>* cancel = nullptr;
    ProgressHook on_progress;
    // If set, prefill pauses once the KV holds prompt[0, size-1) (everything
    // but the last token: the state from which any prompt starting with this
    // one can be resumed) and calls it; the prompt cache saves there.
    std::function<Status(uint32_t n_kv)> on_prefix;
    // The prompt's images (tdm.encoder; engine/prompt_images.h), or null.
    std::shared_ptr<const PromptImages> images;
    // What the output must be (a grammar, a JSON schema), in its state before the first
    // token; null: anything. Each generation works on a clone of it (its own state): every
    // token is chosen from the logits it masks, and generation stops once it is complete
    // (StopReason::constraint).
    std::shared_ptr<const TokenConstraint> constraint;
};

struct GenerateStats {
    uint32_t n_prompt = 0, n_generated = 0;
    uint32_t n_cached = 0;  // prompt tokens resumed from the KV, not prefilled
    // Prompt tokens the prefill ran: n_prompt - n_cached, fewer when it was cancelled midway.
    uint32_t n_prefilled = 0;
    double prefill_ms = 0, decode_ms = 0;
    bool prefill_interrupted() const { return n_cached + n_prefilled < n_prompt; }
    double prefill_tps() const { return prefill_ms > 0 ? n_prefilled / (prefill_ms / 1e3) : 0; }
    double decode_tps() const { return decode_ms > 0 ? n_generated / (decode_ms / 1e3) : 0; }
};

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated (prompt excluded)
    std::string text;             // detokenized (empty without a tokenizer)
    StopReason stop_reason = StopReason::length;  // never error: generate() returns the error
    GenerateStats stats;
    // The KV of the sequence holds exactly the first n_kv tokens of prompt +
    // tokens on return (normally all but the last generated token, which no
    // pass has seen yet); a continuation may resume from any prefix of them.
    uint32_t n_kv = 0;
};

// When a generated token ends generation (the batching engine applies it).
struct StopRule {
    const Tokenizer* tokenizer = nullptr;
    bool ignore_eog = false;
    std::vector<int32_t> stop_tokens;
    // the reason to stop after emitting `token`, if any (stop_token or eog)
    std::optional<StopReason> check(int32_t token) const;
};

// Greedy or sampled generation. `on_text` receives streamed text pieces (never
// half a UTF-8 character); `sink` receives logits: the last prompt row, then one
// row per generated token (llama.cpp's --dump-logits convention).
Result<GenerateResult> generate(Runner& runner, const Tokenizer* tokenizer, int seq, std::span<const int32_t> prompt,
                                const GenerateParams& params, const std::function<void(const std::string&)>& on_text,
                                const LogitsSink& sink = {}, bool logits_all = false);

struct SpecResult {
    GenerateResult gen;
    SpecStats stats;
};

// Generates like generate(), speculatively. `drafters` are a chain: asked in order each round
// with fixed k, in the goodput controller's order under it (speculative/chain_goodput.h);
// each gets begin/accept for every round.
Result<SpecResult> generate_speculative(Runner& target, const Tokenizer* tokenizer, int seq,
                                        std::span<const int32_t> prompt, const GenerateParams& params,
                                        std::span<Drafter* const> drafters, const SpecParams& spec,
                                        const std::function<void(const std::string&)>& on_text);

}  // namespace tdm
