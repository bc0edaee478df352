/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/drafter_chain.h: a built chain of drafters and how it is handed out: the drafters
// the batching engine (engine/batch_engine.h) shares between requests, and one request's own
// chain. Not how the chain is built from the settings (serve/make_drafters.h).
//
// In the serving module, not in cli/, because the serving backend (serve/serve_backend.h)
// hands each request its chain and must not depend on the CLI; the CLI's run, chat and
// bench use it from here. Not in the runtime (libtandem) either: it is a front end's policy
// for drafters, and make_drafters beside it reads the config file's settings.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/batch_engine.h"
#include "speculative/drafter.h"
#include "speculative/round.h"

namespace tdm {

// Makes another drafter like one of a chain, for another sequence.
using DrafterFactory = std::function<Result<std::unique_ptr<Drafter>>()>;

struct DrafterChain {
    std::vector<std::unique_ptr<Drafter>> owned;
    std::vector<Drafter*> order;  // as asked each round
    // Per drafter of `order`: how to make another one like it for another sequence (the
    // plugins' n-gram drafters, which rebuild from tokens; draft heads, on the same head), or
    // null (one sequence each: draft models). `tandem serve` gives each request its own.
    std::vector<DrafterFactory> fresh;
    // Per drafter of `order`: the names a server's request may pick it by besides its own
    // (serve/drafter_choice.h): a head's every spec type, "draft" for what -md loaded.
    std::vector<std::vector<std::string>> types;
    bool empty() const { return order.empty(); }
};

// For the batching engine (engine/batch_engine.h), given a chain's `order` and `fresh`: the
// drafters it shares between requests (those without a factory), and one request's chain
// (its own drafter where there is a factory, else the shared one); a non-empty `picks`
// keeps those drafters of `order` alone, in that order (serve/drafter_choice.h).
std::vector<Drafter*> shared_drafters(std::span<Drafter* const> order, std::span<const DrafterFactory> fresh);
Result<std::vector<DrafterSlot>> request_drafters(std::span<Drafter* const> order,
                                                  std::span<const DrafterFactory> fresh,
                                                  std::span<const size_t> picks = {});

// The target hidden state the chain's drafters read (TDM_HIDDEN_NONE: none; they agree,
// or BatchEngine::create refuses them).
tdm_hidden_point chain_hidden_point(std::span<Drafter* const> order);

}  // namespace tdm
