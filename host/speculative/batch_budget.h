/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/batch_budget.h: how many drafts each sequence of a batched pass gets, so
// that speculation pays for the batch as a whole (engine/batch_engine.h, --spec-auto).
//
// The goodput controller (goodput.h) seen from the whole step. One sequence alone: its
// controller weighs its drafts against its own plain steps. Many sequences in one pass: a
// sequence's drafts lengthen everyone's pass, and the pass time a sequence sees depends on
// the others' drafts, so per-sequence choices cannot see the cost. Here every decoding
// sequence yields at least one token per pass, and a draft at depth j of a sequence is
// worth the chance that drafts 1..j are all accepted (its controller's reach(j)). The
// drafts are ordered by that worth, and the pass takes the number of them that gives the
// most expected tokens per millisecond of the pass, if that beats the pass without drafts
// by the controller's min_gain().
//
// The pass time is measured per shape (rows, rows with logits), not assumed linear: kernels
// work on tiles of rows, so on lavapipe a 9th row costs 38% more than 8 rows (a new tile)
// while rows 10 to 12 cost almost nothing more. A shape not measured yet is estimated from
// a + b * rows fitted over recent passes, so the first passes of a new width explore it.
// The plan never prices a wider pass under the pass it widens (plus b per added row, if the
// wider shape was not measured), which timing noise would otherwise make look like free drafts.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace tdm {

class PassCostModel {
public:
    // A pass of `rows` rows, `outputs` of them with logits, took `ms`. The first pass of a
    // shape is not counted: it usually includes building that shape's graph.
    void observe(uint32_t rows, uint32_t outputs, double ms);
    // Fitted only once passes of different widths were seen.
    bool ready() const;
    double a() const;
    double b() const;
    // The time of such a pass: as measured (a decayed average), else from the fit.
    double estimate(uint32_t rows, uint32_t outputs) const;
    bool measured(uint32_t rows, uint32_t outputs) const;

private:
    double w_ = 0, x_ = 0, y_ = 0, xx_ = 0, xy_ = 0;  // decayed sums of the fit
    uint32_t seen_ = 0;
    struct Shape {
        uint32_t seen = 0;
        double ms = 0;  // decayed average of the counted passes
    };
    std::map<std::pair<uint32_t, uint32_t>, Shape> shapes_;
};

struct DraftCandidate {
    uint32_t k_cap = 0;               // most drafts this sequence may get
    double acceptance = 0;            // per-token acceptance estimate
    double draft_ms_per_token = 0;    // drafting time on the host's critical path
    double first_draft_ms = 0;        // what the first draft costs on top (a head's catch-up)
    std::vector<double> reach;        // [j-1]: the chance drafts 1..j are accepted; empty: acceptance^j
};

class GoodputController;

// Sets c's drafting costs from `lead`, the controller that plans its drafts: the time per
// drafted token, and for a draft head after plain steps or its prompt the catch-up on the
// rows it skipped, which its first draft pays and loses if that draft is rejected (weighed
// by c.reach[0]): a probe's draft less one token at the per-token price. What `lead` has not
// measured yet comes from `peers` (the controllers of the pass's sequences that plan drafts
// of the same drafter: Drafter::history_name and kind), else the per token from
// `fallback_per_token` (the session's own average) and the catch-up from nothing.
void price_drafting(DraftCandidate& c, const GoodputController& lead,
                    std::span<const GoodputController* const> peers, double fallback_per_token);

// Drafts per candidate (<= its k_cap) for a pass of `base_rows` rows (`base_outputs` with
// logits) that yields `base_tokens` tokens without drafts. Each draft adds a row with
// logits. Of every total number of drafts, the likeliest placement is costed, and the best
// total wins; any drafts at all must beat the pass without drafts by min_gain() (5%).
std::vector<uint32_t> allocate_drafts(const PassCostModel& cost, uint32_t base_rows, uint32_t base_outputs,
                                      double base_tokens, std::span<const DraftCandidate> candidates);

}  // namespace tdm
