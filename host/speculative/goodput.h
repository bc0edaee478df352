/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/goodput.h: the goodput controller: per sequence and per round, how many
// tokens to draft (0 = a plain step), chosen to maximise the expected accepted tokens per
// millisecond, so that speculation never makes decoding slower.
//
// Drafts 1..k of a round are all verified in one pass; draft j counts only if drafts 1..j-1
// were accepted. With p_j the acceptance of draft j given that the drafts before it were
// accepted, a round yields E(k) = 1 + sum_{j<=k} p_1 * ... * p_j tokens (DESIGN §4) for
// the cost of drafting k tokens and verifying k+1 rows. The controller keeps, for its
// sequence: p_j per position (decayed counts, shrunk toward the sequence's pooled rate,
// which starts at a prior from the drafter's kind that decays with the data), the plain
// step time, the verify time per width and the draft time per token, and picks the k with
// the best E(k) * T_plain / (T_draft(k) + T_verify(k)), if that beats a plain step by
// min_gain(). When none does, drafting is switched off (unless one would with each p_j raised
// by the benefit of the doubt, the drafter has agreed before (a draft accepted in this
// sequence or in its history) and the last rounds did not all miss their first draft:
// then k = 1, since at a moderate acceptance a few rejections in a row are chance) and probed
// again with k = 1 after `probe_interval` plain steps, or after as many as keep what the
// probes are expected to lose to 2% of the time, if that is more (a probe's extra cost, a
// draft and a verify row over a plain step, less its acceptance where the drafter agreed
// before: an accepted probe wins a token); a probe whose draft is rejected doubles the interval (up to
// 32x), so a drafter that never agrees costs about a percent of the steps, while one whose
// draft is accepted brings the next back to the first interval, so that text that becomes
// predictable (code, quotes, JSON) gets drafts back after a run of accepted probes.
//
// The acceptance counts decay (about a 10-round window, per round and per plain step) so
// that a change of regime is followed, but the sequence's own evidence never below 4 drafts
// (each position's rate kept): one accepted probe after a pause moves the estimate a fifth of
// the way to 1 instead of to nearly 1, which at a moderate acceptance bought rounds that lose.
//
// The benefit of the doubt is an exploration bonus, paid for in rejected drafts: one
// standard error of p_j (optimism()), wherever an accepted draft can pay for its round (a
// round of one draft costs 1 + m plain steps, m the miss cost: accepted, it gains 1 - m).
// A short run of rejections at a rate near break-even then does not end drafting that pays,
// and the rounds it bets where the rate is below break-even buy the evidence that stops them
// (with the streak of first misses). It was scaled by 1 - m for a while (a third of a
// standard error on lavapipe), when decayed evidence could fall to a draft or two and the
// doubt kept 215 rounds in 3600 steps at an acceptance of 0.5; under the evidence floor a
// whole standard error keeps about 50 there, and a simulation of `bench spec` (4 prompts of
// 32 tokens, lavapipe's costs, timing noise) puts the default at 96% of fixed k = 1 at 0.7
// instead of 95%, 0.2-0.6% slower at 0.3-0.65 (docs/perf-notes/goodput-controller.md).
//
// Before any measurement the drafter's kind gives the first length: a draft head (MTP,
// NextN, an assistant, a draft model) starts at 1 (a trial that costs little where the
// head never agrees), an n-gram drafter at the cap (its matched length decides; it drafts
// nothing it did not match). Then two plain steps calibrate the baseline (the first only
// builds graphs) and measurements decide. The first round of each k and the first plain
// step count only for acceptance: their time usually includes building graphs. Only a plain
// step measures the plain step, and one too high makes every length look better than it is
// and keeps drafting on, so after 16 rounds without a plain step one re-measures it (a time
// more than 10% under the estimate replaces it, one within 10% is averaged in, as a verify's
// time is); one that finds the estimate right doubles that wait, up to 256 rounds.
//
// A server's sequences (a benchmark's prompts) start from what the engine's earlier
// sequences of the same drafter learned (goodput_history.h): each position's acceptance
// as a prior (weighing 4 to 16 drafts, as much as those sequences agree with each other, and
// decaying with the sequence's own data, as the kind's fixed prior does), and
// the measured costs, so that neither the kind's first length nor the calibrating plain
// steps are paid again; a drafter whose history says drafting does not pay starts off, probing.
// One rejected draft is no such verdict: a history of fewer than 1.5 drafts, none accepted,
// leaves the sequence to make its own trial. A width an earlier sequence ran has its graphs
// built, so the first round there is timed (a never-agreeing head's trial or probe hands
// its cost on instead of leaving every later sequence to price its probes by the guess);
// until one is, the first trial's time prices the probes.
// A history of costs alone (GoodputHistory::forget_acceptance) spares the calibration only.
//
// Many sequences in one pass: the engine plans the pass as a whole with allocate_drafts
// (batch_budget.h), which weighs each sequence's drafts by reach() and the pass cost at
// the current width, with the same min_gain(): one mechanism, seen from the whole step.
// A chain of drafters has one controller per drafter (chain_goodput.h), which ranks them by
// what each offers (offer()) and tells those not asked that a round went by without them
// (observe_elsewhere()).
// Not here: the pass cost table (batch_budget.h), which drafter of a chain is asked
// (chain_goodput.h).
#pragma once

#include <cstdint>
#include <vector>

#include "speculative/drafter.h"  // DrafterKind
#include "speculative/goodput_history.h"
#include "speculative/stats.h"    // ControllerStats

namespace tdm {

// What a plain step must lose to drafts before they are worth running: a predicted gain
// smaller than this is timing noise. One sequence alone: 2%. Several in one pass: 5%, since
// a draft row also costs what the pass cost table does not see (its logits row read back
// and sampled, the drafter's bookkeeping), and where a row costs about what its token is
// worth (a compute-bound CPU device with many sequences) smaller promises measured slower
// (docs/perf-notes/serve-batching.md).
double min_gain(uint32_t sequences_in_pass);

// Plain steps after drafting was switched off before the first probe.
constexpr int kGoodputProbeInterval = 8;

// What a controller would choose now (GoodputController::offer), and why.
struct GoodputOffer {
    enum class Why {
        nothing,      // nothing may be drafted (k_cap 0)
        first,        // no measurement yet: the kind's first length
        calibrating,  // the plain step's time is not known yet, or is due to be re-measured: a plain step
        off,          // drafting is off and no probe is due: a plain step
        probe,        // drafting is off and a probe is due: k = 1
        measured,     // the length with the best expected speedup (0: none pays)
    };
    int k = 0;
    double speedup = 1.0;  // predicted for k (1 for a plain step, and before any measurement)
    Why why = Why::nothing;
};

class GoodputController {
public:
    // `history`: what earlier sequences of this drafter (of `kind`) learned (null: none).
    explicit GoodputController(int k_max, int probe_interval = kGoodputProbeInterval,
                               DrafterKind kind = DrafterKind::head, const GoodputMemory* history = nullptr);

    // The draft length to try this round (0 = plain step); k_cap bounds it.
    int choose(int k_cap);
    // What choose(k_cap) would answer now, without choosing (a chain ranks its drafters by it).
    GoodputOffer offer(int k_cap) const;
    // A plain step of this sequence. `alone`: the pass ran this sequence only, so its time is
    // a plain step's (in a batch it is the batch's pass, which other sequences' rows make
    // dearer or cheaper): only such a step re-measures the baseline.
    void observe_plain(double ms, bool alone = true);
    // A round of this sequence verified another drafter's drafts (a chain: chain_goodput.h):
    // the target's cost of a verify of k + 1 rows is this drafter's too, and the sequence
    // moved on without its drafts, as after a plain step (its evidence decays, a probe
    // comes nearer); its acceptance is neither credited nor blamed.
    void observe_elsewhere(int k, double verify_ms);
    // A verified round of k drafts, `accepted` of them accepted.
    void observe_round(int k, int accepted, double draft_ms, double verify_ms);
    // A verified tree round: `depth` levels, `rows` verify rows (nodes), `accepted` levels
    // accepted. Its acceptance counts for this sequence as a chain of `depth` drafts would,
    // its verify time at its own width (rows - 1 drafts); the draft time per token and what
    // learned() hands to the history are a chain's alone, since a tree's deeper acceptance
    // and dearer drafting are no prior for a chain.
    void observe_tree_round(int depth, int rows, int accepted, double verify_ms);
    // The output's constraint refused the draft at `position` (0-based) before verification,
    // all drafts before it having been accepted (or there being none): the draft was
    // rejected there as surely as by the target, so it counts as tried and missed. Without
    // this, a drafter whose every draft the grammar refuses would keep drafting for ever,
    // its rounds looking like plain steps. Call before that round's observe_round or
    // observe_plain.
    void observe_cut(int position);
    // Records a draft length chosen for this sequence by the batch's plan (allocate_drafts).
    void planned(int k);
    // In a batched pass of `sequences` decoding sequences whose plan gave this one and
    // `probers` - 1 others no drafts: whether it should probe now (the wait as alone, its
    // timings the batch's passes, and what the probes cost weighed by `probers`: every
    // sequence waits for each of them). Call once per such pass.
    bool probe_when_starved(uint32_t probers, uint32_t sequences);
    // The plan did not run the probe probe_when_starved() asked for (it could not pay even if
    // accepted): no probe was made, and none failed.
    void probe_dropped();

    double acceptance() const;            // the pooled per-draft acceptance
    double acceptance_at(int j) const;    // p_j, j >= 1
    double reach(int j) const;            // p_1 * ... * p_j: the chance draft j is accepted
    double expected_tokens(int k) const;  // E(k)
    double predicted_speedup(int k) const;
    // What a round of one rejected draft costs over a plain step, in plain steps (its draft
    // and its verify of 2 rows, less the plain step): m above. 0 before the plain step is known.
    double miss_cost() const;
    // What drafting costs per token while drafting is on (0: not measured yet).
    double draft_ms_per_token() const { return draft_ms_per_token_; }
    // What the next round's drafting costs beyond its tokens: nothing after a round of this
    // drafter; after plain steps or the prompt, a draft head first catches up on the rows it
    // skipped (a probe's draft, less a drafted token at draft_ms_per_token(), or the whole
    // probe's draft while that is unmeasured). 0 while unmeasured, and for n-grams.
    double catch_up_ms() const;
    // Whether the next round's draft first catches up on skipped rows (a draft head after
    // plain steps or its prompt), and what a probe's draft was measured to cost: the catch-up
    // and one drafted token (0: unmeasured, or an n-gram drafter). A sequence that has not
    // measured one yet is priced by its engine's other sequences of the same drafter
    // (price_drafting, BatchEngine::plan_drafts).
    bool catches_up() const { return previous_ != Previous::round && kind_ != DrafterKind::ngram; }
    double probe_draft_ms() const { return kind_ == DrafterKind::ngram ? 0.0 : resume_ms_; }
    // The benefit of the doubt, in standard errors of each p_j: 1, or 0 where m >= 1.
    double optimism() const;
    bool off() const { return off_; }
    const ControllerStats& report() const { return report_; }
    DrafterKind kind() const { return kind_; }
    // What this sequence learned, for the engine's history: its drafts per position (not
    // decayed) and its cost estimates.
    GoodputMemory learned() const;

private:
    // The acceptance bookkeeping of a verified round of k positions; for_history: also
    // what learned() reports.
    void count_acceptance(int k, int accepted, bool for_history);
    double verify_estimate(int k) const;
    double acceptance_bound(int j, double optimism) const;
    double expected_tokens(int k, double optimism) const;
    double speedup(int k, double optimism) const;
    bool any_k_pays() const;
    void probe_failed();
    int wait_for_probe() const;  // probe_wait() as latched (latch_wait)
    // Prices the wait for `probers` starved sequences of `sequences` unless it is priced for
    // as many already; probers 0: keeps any price, else prices it alone.
    void latch_wait(uint32_t probers, uint32_t sequences);
    void restart_probe_count();  // a probe or a round: the count and the wait start again
    // plain steps before a probe: the back-off, at least the expected loss's (of `probers`
    // sequences probing in passes of `sequences`)
    int probe_wait(uint32_t probers = 1, uint32_t sequences = 1) const;
    void start_from(const GoodputMemory& history);
    void decay();
    int k_max_, probe_interval_, probe_after_;
    DrafterKind kind_;
    double plain_ms_ = 0;                 // EMA of a single-token target pass
    std::vector<double> verify_ms_;       // EMA per width k (index k), 0 = unmeasured
    std::vector<int> rounds_at_;          // rounds seen per k: the first is a warm-up (graph builds)
    int plain_seen_ = 0;
    // A draft head catches up on the rows it has not seen before it drafts: after a round of
    // its own, that round's one or two; after plain steps, all of them. So only a round right
    // after one of its own measures what a draft costs while drafting is on; one after plain
    // steps (a probe) measures what turning it back on costs. On lavapipe a Qwen3.5-0.8B MTP
    // draft took 41 ms after a round and 80-150 ms after 8-35 plain steps: folded into one
    // estimate, those made a round of one draft look 1.9 plain steps dear instead of 1.6, which
    // at a forced acceptance of 0.7 (k = 1 breaking even at 0.63) switched drafting off.
    // Until a round follows a round, what a draft costs is unknown (0): the catch-ups are no
    // bound worth having (after 35 plain steps of `bench spec`'s warm-up, 95-150 ms, which
    // kept every later prompt from drafting the second round that would have measured it).
    enum class Previous { prompt, plain, round };
    Previous previous_ = Previous::prompt;  // this sequence's pass before the next round
    double draft_ms_per_token_ = 0;       // EMA of rounds right after one of this drafter's
    // EMA of the draft time of rounds of one draft after plain steps: what a probe drafts.
    // Until one is measured, those after the prompt (their catch-up is the prompt's).
    double resume_ms_ = 0;
    bool resume_measured_ = false;        // resume_ms_ is from a round after plain steps
    double trial_ms_ = 0;                 // the first round of k = 1, graph builds included
    std::vector<double> tried_, hit_;     // decayed counts per position (index j-1)
    std::vector<double> seen_tried_, seen_hit_;  // the same, not decayed (learned())
    double prior_;                        // decayed weight of the prior (kind's or history's)
    double prior_rate_;                   // the prior's pooled acceptance
    std::vector<double> prior_at_;        // the history's acceptance per position (empty: none)
    int plain_since_probe_ = 0, starved_ = 0;
    int latched_wait_ = -1;               // the wait priced at the first step off, -1 = not yet
    uint32_t latched_for_ = 0;            // the probers it was priced for
    int rounds_since_plain_ = 0;          // verified rounds (any drafter's) since the last plain step
    int remeasure_after_;                 // rounds without a plain step before one re-measures it
    bool remeasuring_ = false;            // this plain step was taken to re-measure the baseline
    int first_misses_ = 0;                // rounds in a row whose first draft was rejected
    bool agreed_ = false;                 // a draft accepted, in this sequence or the history
    bool off_ = false, probing_ = false, started_ = false;
    ControllerStats report_;
};

}  // namespace tdm
