/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/scheduler.h: speculative decoding.
//
// Per round: drafters are asked in order until one proposes up to k tokens;
// the target verifies [last, d1..dk] in ONE batched pass (positions pos..pos+k);
// the longest prefix of drafts the target agrees with is accepted (greedy: its
// argmax; sampling: the rejection rule of Leviathan et al. 2023 with the
// sampler's exact distributions), plus the target's own next token; the target
// KV is truncated to the accepted length and every drafter rolls back too. No
// accepted token is ever recomputed: the verify pass's logits are the decode
// logits, bit for bit, because the kernels are batch-invariant (DESIGN
// invariant 1), so greedy output equals plain decoding's.
//
// Never slower: --draft-max/--draft-min bound k; a skip streak inserts a plain
// step after N rounds with nothing accepted; auto mode (auto_tune.h) picks k
// from measured acceptance and costs and stops drafting when it does not pay.
// Depth 2: the next round's first drafter is prepared (device work submitted)
// before the host streams text, updates statistics and writes the trace.
//
// The rounds are run by the batching engine (engine/batch_engine.h), here with one
// session: a request's tokens do not depend on whether it runs alone or in a server.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/generate.h"
#include "speculative/drafter.h"
#include "speculative/stats.h"

namespace tdm {

struct SpecParams {
    int draft_max = 16;     // most drafts per round
    int draft_min = 0;      // a shorter proposal is not verified (plain step instead)
    int skip_streak = 0;    // rounds with nothing accepted before one plain step; 0 = off
    bool auto_k = false;    // adapt k to measured acceptance and cost
    std::string trace_path; // NDJSON, one line per round
};

struct SpecResult {
    GenerateResult gen;
    SpecStats stats;
};

// Generates like generate() (engine/generate.h), speculatively. `drafters` are
// asked in order each round (a chain); each gets begin/accept for every round.
Result<SpecResult> generate_speculative(Runner& target, const Tokenizer* tokenizer, int seq,
                                        std::span<const int32_t> prompt, const GenerateParams& params,
                                        std::span<Drafter* const> drafters, const SpecParams& spec,
                                        const std::function<void(const std::string&)>& on_text);

}  // namespace tdm
