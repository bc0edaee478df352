/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/goodput_history.h: what the goodput controllers (goodput.h) of one engine
// learned, per drafter, so that a new sequence starts from it: a server's requests, a
// benchmark's prompts. Without it every sequence starts from the kind's fixed prior and
// measures the device's costs again: a first round at the kind's length and two plain steps
// to calibrate, a few percent of a short reply each time.
//
// Kept per drafter (by Drafter::history_name), not per kind: a server's MTP head and the
// draft model its requests may pick instead are both heads, and two n-gram drafters may run
// in one chain, with acceptances and costs of their own. Kept per kind, each started from
// the other's (a sequence of the draft model off from its first step because the MTP head's
// sequences had missed, or priced at the head's catch-up), and a chain of two n-gram
// drafters folded each of its sequences in twice. A drafter's first sequence starts from its
// kind's fixed prior, as a first sequence always has, and from the target's plain step if
// another drafter's sequence measured it (start_for).
//
// Kept per drafter: the drafts tried and accepted at each position, decayed by sequence
// that drafted (the newest sequences weigh most, and the counts are capped so that the
// server's text of a while ago does not outvote what it serves now), how far those
// sequences agree, the newest cost estimates (the plain step, the verify per width, the
// draft per token), which are the device's and the target's rather than the text's, the
// first trial's cost, and the widths whose graphs a round has built.
//
// Not thread-safe: the engine's thread folds its sequences in as they end (BatchEngine::finish).
// Not here: how a controller uses it (GoodputController's constructor).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "speculative/drafter.h"  // DrafterKind

namespace tdm {

// One drafter's history, or one sequence's contribution to it.
struct GoodputMemory {
    std::vector<double> tried, hit;   // drafts per position (index j - 1)
    double plain_ms = 0;              // a plain step, 0 = unmeasured
    std::vector<double> verify_ms;    // a verify of k + 1 rows (index k), 0 = unmeasured
    // A draft per token, in rounds right after one of the drafter's own, 0 = unmeasured; and
    // the draft of a round of one after plain steps (what a probe drafts), a head's catch-up
    // included (resume_measured), or until one is, after the prompt.
    double draft_ms_per_token = 0;
    double resume_draft_ms = 0;
    bool resume_measured = false;
    // The first round of one draft of a sequence that had no cost of it yet (a head's trial),
    // graph builds included, 0 = none: until a warm round at some width is measured, what a
    // probe is known to cost. Without it the sequences after a never-agreeing head's trial priced
    // their probes by the guess (a verify of 2 rows at 1.25 plain steps, a free draft): at 8
    // streams of Qwen3.5-0.8B on lavapipe, where a probe of every stream nearly doubles a pass
    // and the head catches up on the rows it skipped (2.3 passes in all), the whole batch
    // probed together after 13 passes, 3-4% of a 32-token reply.
    double trial_ms = 0;
    // Widths (index k) of which a round has run on this engine, so that their graphs are built
    // and a later sequence's first round there is timed like any other. Without it a sequence
    // whose one round is its first at that width (a head that never agrees: its trial) hands
    // on no cost, and every later sequence prices its probes by the guess.
    std::vector<bool> built;
    // The drafter's probing while its sequences are off, from the newest sequence that ended
    // off: the plain steps since its last probe or round (including those it started from),
    // and its back-off (plain steps between probes); 0 and 0 after one that ended drafting.
    // Without them every short sequence counted from 0 and a request shorter than the wait
    // never probed: a server of 32-token replies whose head's first trials missed never
    // drafted again. A batched pass's plan counts each sequence's own starved passes instead
    // (GoodputController::probe_when_starved): sequences admitted together would otherwise
    // all probe in the same pass.
    double off_steps = 0;
    int probe_after = 0;
    // How far the sequences that drafted agree on the first draft's acceptance: decayed sums
    // over them of 1, their rate, its square and 1 / their drafts (history only; a sequence's
    // own contribution leaves them 0).
    double seqs = 0, seq_rate = 0, seq_rate_sq = 0, seq_inv_drafts = 0;

    double tried_total() const;
    double hit_total() const;
    // What the history weighs as a new sequence's prior, in drafts: as much as its sequences
    // agree, between `least` and `most`, and never more than the first drafts it holds.
    double prior_weight(double least, double most) const;
};

class GoodputHistory {
public:
    // The history of the drafter of `kind` named `drafter` (Drafter::history_name), null
    // before any of its sequences ended.
    const GoodputMemory* find(DrafterKind kind, std::string_view drafter) const;
    // What a new sequence of that drafter starts from: its history; else, once any drafter's
    // sequence measured one, the target's plain step alone (a cost of the device and the
    // target, not of the drafter: the new drafter's sequence need not calibrate it, and makes
    // its kind's trial); else nothing.
    std::optional<GoodputMemory> start_for(DrafterKind kind, std::string_view drafter) const;
    // Folds in what one sequence of that drafter learned (GoodputController::learned()).
    void absorb(DrafterKind kind, std::string_view drafter, const GoodputMemory& seq);
    // Keeps the costs and drops the acceptance of every drafter: after a warm-up whose drafts
    // were forced (bench spec), whose acceptance says nothing of the drafter's.
    void forget_acceptance();
    // Sets the plain step of every drafter held, and of those met later: one measured over
    // many warm plain steps (a benchmark's warm-up decode) is a better baseline than the few
    // plain steps a speculative sequence's controller chose to take.
    void set_plain_ms(double ms);

private:
    // By kind as well as by name: names come from separate places (a head's spec type, a
    // plugin's descriptor, "draft"), and a drafter of another kind is no prior for this one.
    using Key = std::pair<DrafterKind, std::string>;
    std::map<Key, GoodputMemory> by_drafter_;
    double plain_ms_ = 0;  // the newest plain step any sequence measured
};

}  // namespace tdm
