/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/warmup.h: the warm-up at load of `tandem run`, `chat`, `serve` and `ocr` (on by
// default; --no-warmup or [model] warmup = false turn it off), as llama.cpp warms up every
// model it loads (a decode at load, then its KV cleared; --no-warmup there too).
//
// Why: a process compiles what it runs the first time it runs it. lavapipe compiles (JITs)
// each pipeline at its first use, and the matmul kernels have a variant per 1, 2, 4 and 8
// tokens per pass (ops/matmul.cpp), so the first verify of 2 rows cost 464-657 ms against
// 305 ms once warm (Qwen3.5-0.8B shape, docs/BENCHMARKS.md, issue 40), and the head's first
// draft graph is built then too. Without a warm-up the first speculative round of a
// reply, and the first decode step of a plain one, pay for it inside the timed decode.
//
// What it runs, untimed, on a scratch sequence of the target's KV, for a prompt of one
// synthetic id (its prefill is the decode step's one-row graph; a prompt's own prefill
// compiles its variant in its own time, as without the warm-up):
//  - no drafter: that prefill, the decode step's graph;
//  - drafters that run on the device (kind head: draft heads, draft models): a speculative
//    generation of 3 tokens with them, under the run's SpecParams: their first graphs
//    (the prompt's catch-up, a draft) and the first round's verify (the controller's first
//    length for a head is 1, so 2 rows; fixed k: draft_max + 1), then plain steps under
//    their hidden state (the decode step as a speculative run records it);
//  - an n-gram drafter in the chain: one verify pass (every row's logits) of 2, 4 and 8 rows
//    (at most draft_max + 1): its first round's width is its match's length, anything up to
//    draft_max + 1, so no matmul variant is left to compile for any width; a width in
//    between then builds only its graph, from compiled pipelines, the first time. Not for
//    heads alone: their first round is the one above, and they reach longer drafts only
//    after drafts were accepted, when the drafts pay for a first use; each extra pass of
//    the 0.8B shape costs 0.3-0.5 s of load on lavapipe.
// N-gram drafters (kind ngram) do not run: they look tokens up on the host (nothing to
// compile), and some keep what they saw beyond a sequence (ngram-mod's pool, shared by the
// process; ngram-cache's file, saved at finish()), which a warm-up must not feed.
//
// Nothing of it stays but compiled pipelines and graphs: the scratch sequence is freed (its
// KV blocks and recurrent states), each drafter that ran forgets its sequence
// (Drafter::forget), the goodput controller learns into a history of the warm-up's own
// (SpecParams::history), and no trace is written. Greedy output is thus the same with and
// without it (tests/cli/warmup_cli_test.cpp, tests/engine/warmup_test.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/runner.h"
#include "sampling/sampler.h"
#include "speculative/drafter.h"
#include "speculative/round.h"

namespace tdm {

struct WarmupReport {
    double ms = 0;               // wall time of the whole warm-up
    uint32_t prompt_tokens = 0;  // of the scratch prompt
    uint32_t drafters = 0;       // drafters that ran (kind head)
    std::vector<uint32_t> verify_widths;  // rows of the explicit verify passes
    std::string failed;  // why it stopped early (the command goes on without it); empty: it ran whole
};

// The verify widths the warm-up runs for drafts of at most `draft_max` tokens: 2, 4 and 8,
// each capped at draft_max + 1, once each (empty for draft_max < 1).
std::vector<uint32_t> warmup_verify_widths(int draft_max);

// Runs the warm-up on `runner` (its KV pool needs a free sequence, which it gives back) with
// the chain `drafters` (empty: plain decoding) and the settings of the run it prepares:
// `spec` (draft_max, fixed k, tree shape; its history and trace are not used) and `sampling`
// (greedy or not; its logit bias is not applied). `n_batch`: the prefill chunk.
Result<WarmupReport> warm_up(Runner& runner, std::span<Drafter* const> drafters, const SpecParams& spec,
                             const SamplerParams& sampling, uint32_t n_batch);

}  // namespace tdm
