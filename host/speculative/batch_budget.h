/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/batch_budget.h: how many drafts each sequence of a batched pass gets, so
// that speculation pays for the batch as a whole (engine/batch_engine.h, --spec-auto).
//
// One sequence alone: AutoTune (auto_tune.h) weighs its drafts against its own plain steps.
// Many sequences in one pass: a sequence's drafts lengthen everyone's pass, and the pass
// time a sequence sees depends on the others' drafts, so per-sequence tuning cannot see
// the cost. Here the pass time is modelled as a + b * rows (fitted to recent passes), every
// decoding sequence yields at least one token per pass, and a draft at depth j of a
// sequence with acceptance p is worth p^j expected tokens. Draft rows are added, best value
// first, while each raises the expected tokens per millisecond of the pass: on a device
// where rows are nearly free (a GPU's memory-bound decode) most drafts go in; on one where
// they cost compute (lavapipe with many sequences) only the likely ones, or none.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tdm {

// Pass time in ms as a + b * rows: a least-squares fit with exponentially decayed weights.
class PassCostModel {
public:
    void observe(uint32_t rows, double ms);
    // Fitted only once passes of different widths were seen.
    bool ready() const;
    double a() const;
    double b() const;

private:
    double w_ = 0, x_ = 0, y_ = 0, xx_ = 0, xy_ = 0;  // decayed sums
    uint32_t seen_ = 0;
};

struct DraftCandidate {
    uint32_t k_cap = 0;               // most drafts this sequence may get
    double acceptance = 0;            // per-token acceptance estimate
    double draft_ms_per_token = 0;    // drafting time on the host's critical path
};

// Drafts per candidate (<= its k_cap) for a pass of `base_rows` rows yielding `base_tokens`
// tokens without drafts, with pass time a + b * rows.
std::vector<uint32_t> allocate_drafts(double a, double b, double base_tokens, uint32_t base_rows,
                                      std::span<const DraftCandidate> candidates);

}  // namespace tdm
