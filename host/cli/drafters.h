/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/drafters.h: building the drafter chain from --spec-type / -md and
// the [speculative] settings, for `tandem run` and `tandem bench spec`.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "engine/batch_engine.h"
#include "speculative/drafter.h"
#include "speculative/round.h"

namespace tdm::cli {

// Makes another drafter like one of a chain, for another sequence.
using DrafterFactory = std::function<Result<std::unique_ptr<Drafter>>()>;

struct DrafterChain {
    std::vector<std::unique_ptr<Drafter>> owned;
    std::vector<Drafter*> order;  // as asked each round
    // Per drafter of `order`: how to make another one like it for another sequence (the
    // plugins' n-gram drafters, which rebuild from tokens; draft heads, on the same head), or
    // null (one sequence each: draft models). `tandem serve` gives each request its own.
    std::vector<DrafterFactory> fresh;
    bool empty() const { return order.empty(); }
};

// The speculative types asked for ("draft" is implied by -md alone); empty
// means plain decoding.
std::vector<std::string> spec_types(const Config& config);

// Whether speculation was turned off explicitly (--spec-type none).
bool speculation_off(const Config& config);

// Whether a loaded plugin has a draft head for the target's architecture (the
// file may still lack its layers).
Result<bool> draft_head_available(App& app, const Model& target);

// Creates the drafters for `target` in the configured order. Errors: an
// unknown type (the message lists what the plugins provide), `draft` without
// a draft model, an incompatible draft vocabulary, a draft head the file does
// not carry. `target_kv` is the pool draft heads may read. With no type given,
// the head the model carries (MTP/NextN) drafts if --spec-auto asks for it, or
// by default when `carried_head_by_default` (tandem chat) and speculation is
// not off; a head that cannot be built then means plain decoding.
// `sequences`: how many sequences may draft at once (a draft head's KV holds one each).
Result<DrafterChain> make_drafters(App& app, const Model& target, const KvPool& target_kv,
                                   bool carried_head_by_default = false, uint32_t sequences = 1);

// For the batching engine (engine/batch_engine.h), given a chain's `order` and `fresh`: the
// drafters it shares between requests (those without a factory), and one request's chain
// (its own drafter where there is a factory, else the shared one); a non-empty `only`
// keeps the drafter of that name alone.
std::vector<Drafter*> shared_drafters(std::span<Drafter* const> order, std::span<const DrafterFactory> fresh);
Result<std::vector<DrafterSlot>> request_drafters(std::span<Drafter* const> order,
                                                  std::span<const DrafterFactory> fresh, std::string_view only = {});

// The target hidden state the chain's drafters read (TDM_HIDDEN_NONE: none; they agree,
// or BatchEngine::create refuses them).
tdm_hidden_point chain_hidden_point(std::span<Drafter* const> order);

SpecParams spec_params(const Config& config);
SamplerParams sampler_params(const Config& config);

}  // namespace tdm::cli
