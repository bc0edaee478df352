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
// min_gain(). Else drafting is switched off and probed again with k = 1 after
// `probe_interval` plain steps; a probe that does not turn drafting back on doubles the
// interval (up to 32x), so a drafter that never agrees costs about a percent of
// the steps, while text that becomes predictable (code, quotes, JSON) gets drafts back.
//
// Before any measurement the drafter's kind gives the first length: a draft head (MTP,
// NextN, an assistant, a draft model) starts at 3, an n-gram drafter at the cap (its
// matched length decides; it drafts nothing it did not match). Then two plain steps
// calibrate the baseline (the first only builds graphs) and measurements decide. The
// first round of each k and the first plain step count only for acceptance: their time
// usually includes building graphs.
//
// Many sequences in one pass: the engine plans the pass as a whole with allocate_drafts
// (batch_budget.h), which weighs each sequence's drafts by reach() and the pass cost at
// the current width, with the same min_gain(): one mechanism, seen from the whole step.
// Not here: the pass cost table (batch_budget.h), which drafter of a chain proposes (the
// first still on: round.h).
#pragma once

#include <cstdint>
#include <vector>

#include "speculative/drafter.h"  // DrafterKind
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

class GoodputController {
public:
    explicit GoodputController(int k_max, int probe_interval = kGoodputProbeInterval,
                               DrafterKind kind = DrafterKind::head);

    // The draft length to try this round (0 = plain step); k_cap bounds it.
    int choose(int k_cap);
    void observe_plain(double ms);
    // A verified round of k drafts, `accepted` of them accepted.
    void observe_round(int k, int accepted, double draft_ms, double verify_ms);
    // The output's constraint refused the draft at `position` (0-based) before verification,
    // all drafts before it having been accepted (or there being none): the draft was
    // rejected there as surely as by the target, so it counts as tried and missed. Without
    // this, a drafter whose every draft the grammar refuses would keep drafting for ever,
    // its rounds looking like plain steps. Call before that round's observe_round or
    // observe_plain.
    void observe_cut(int position);
    // Records a draft length chosen for this sequence by the batch's plan (allocate_drafts).
    void planned(int k);
    // In a batched pass whose plan gave this sequence no drafts: whether it should probe now
    // (the same back-off as alone). Call once per such pass.
    bool probe_when_starved();

    double acceptance() const;            // the pooled per-draft acceptance
    double acceptance_at(int j) const;    // p_j, j >= 1
    double reach(int j) const;            // p_1 * ... * p_j: the chance draft j is accepted
    double expected_tokens(int k) const;  // E(k)
    double predicted_speedup(int k) const;
    bool off() const { return off_; }
    const ControllerStats& report() const { return report_; }

private:
    double verify_estimate(int k) const;
    bool any_k_pays() const;
    void probe_failed();
    int k_max_, probe_interval_, probe_after_;
    DrafterKind kind_;
    double plain_ms_ = 0;                 // EMA of a single-token target pass
    std::vector<double> verify_ms_;       // EMA per width k (index k), 0 = unmeasured
    std::vector<int> rounds_at_;          // rounds seen per k: the first is a warm-up (graph builds)
    int plain_seen_ = 0;
    double draft_ms_per_token_ = 0;       // EMA
    std::vector<double> tried_, hit_;     // decayed counts per position (index j-1)
    double prior_;                        // decayed weight of the kind's prior on the pooled rate
    int plain_since_probe_ = 0, starved_ = 0;
    bool off_ = false, probing_ = false, started_ = false;
    ControllerStats report_;
};

}  // namespace tdm
