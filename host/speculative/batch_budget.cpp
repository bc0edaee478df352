// SPDX-License-Identifier: Apache-2.0
// host/speculative/batch_budget.cpp
#include "speculative/batch_budget.h"

#include "speculative/goodput.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace tdm {
namespace {

constexpr double kDecayBatchBudget = 0.95;      // weight of a pass halves after ~14 passes
constexpr double kShapeDecay = 0.7;  // per shape: a shape's time follows the context's growth

// The worth of a candidate's draft at `depth` (1-based): the chance it is accepted.
double worth(const DraftCandidate& c, uint32_t depth) {
    if (depth <= c.reach.size()) return std::clamp(c.reach[depth - 1], 0.0, 0.999);
    return std::pow(std::clamp(c.acceptance, 0.0, 0.999), double(depth));
}

// The drafting time of a candidate's draft at `depth`: the first also pays its catch-up.
double drafting_ms(const DraftCandidate& c, uint32_t depth) {
    return c.draft_ms_per_token + (depth == 1 ? c.first_draft_ms : 0.0);
}

}  // namespace

void PassCostModel::observe(uint32_t rows, uint32_t outputs, double ms) {
    Shape& s = shapes_[{rows, outputs}];
    if (s.seen++ == 0) return;  // the graph was built in this one
    s.ms = s.seen == 2 ? ms : kShapeDecay * s.ms + (1 - kShapeDecay) * ms;
    const double x = double(rows);
    w_ = w_ * kDecayBatchBudget + 1;
    x_ = x_ * kDecayBatchBudget + x;
    y_ = y_ * kDecayBatchBudget + ms;
    xx_ = xx_ * kDecayBatchBudget + x * x;
    xy_ = xy_ * kDecayBatchBudget + x * ms;
    ++seen_;
}

bool PassCostModel::ready() const {
    if (seen_ < 4 || w_ <= 0) return false;
    const double var = xx_ / w_ - (x_ / w_) * (x_ / w_);
    return var > 0.25;  // widths that differ by about a row or more
}

double PassCostModel::b() const {
    const double mx = x_ / w_, var = xx_ / w_ - mx * mx;
    if (var <= 0) return 0;
    return std::max(0.0, (xy_ / w_ - mx * (y_ / w_)) / var);
}

double PassCostModel::a() const { return std::max(0.0, y_ / w_ - b() * (x_ / w_)); }

bool PassCostModel::measured(uint32_t rows, uint32_t outputs) const {
    auto it = shapes_.find({rows, outputs});
    return it != shapes_.end() && it->second.seen >= 2;
}

double PassCostModel::estimate(uint32_t rows, uint32_t outputs) const {
    if (auto it = shapes_.find({rows, outputs}); it != shapes_.end() && it->second.seen >= 2) return it->second.ms;
    return a() + b() * double(rows);
}

void price_drafting(DraftCandidate& c, const GoodputController& lead,
                    std::span<const GoodputController* const> peers, double fallback_per_token) {
    // A head after plain steps (or its prompt) first catches up on the rows it skipped: a cost
    // the first draft pays, lost if that draft is rejected and the sequence goes back to plain
    // steps, kept for the rounds that follow if it is accepted. Priced at 0, a fresh sequence's
    // drafts looked free wherever the pass's tile had room: at 4 streams of a tiny Qwen3.5 on
    // lavapipe, every request drafted once with a head that never agreed, each draft's
    // catch-up 1-4 ms against an 8 ms pass. And a sequence that has not drafted has measured
    // neither cost: at 16 streams the first wave's sequences each found out for themselves,
    // one draft per pass, where the peers that had drafted knew.
    const auto from_peers = [&](double (GoodputController::*measure)() const) {
        double sum = 0;
        int n = 0;
        for (const GoodputController* p : peers)
            if (p && (p->*measure)() > 0) {
                sum += (p->*measure)();
                ++n;
            }
        return n > 0 ? sum / n : 0.0;
    };
    double per_token = lead.draft_ms_per_token();
    if (per_token <= 0) per_token = from_peers(&GoodputController::draft_ms_per_token);
    if (per_token <= 0) per_token = fallback_per_token;
    // A probe's draft is the catch-up and one drafted token: the token is priced per token,
    // once. (A controller that has only probed has no time per token of its own: its
    // catch-up was its whole probe's draft, and the peers' time per token was added on top.)
    double probe_ms = lead.probe_draft_ms();
    if (probe_ms <= 0) probe_ms = from_peers(&GoodputController::probe_draft_ms);
    const double catch_up = std::max(0.0, probe_ms - per_token);
    const double rejected = 1.0 - (c.reach.empty() ? std::clamp(c.acceptance, 0.0, 1.0) : c.reach[0]);
    c.draft_ms_per_token = per_token;
    c.first_draft_ms = lead.catches_up() ? catch_up * rejected : 0.0;
}

std::vector<uint32_t> allocate_drafts(const PassCostModel& cost, uint32_t base_rows, uint32_t base_outputs,
                                      double base_tokens, std::span<const DraftCandidate> candidates) {
    std::vector<uint32_t> k(candidates.size(), 0);
    const double base_ms = cost.estimate(base_rows, base_outputs);
    if (base_ms <= 0) return k;
    // A pass of d more rows does all the work of this pass, and more: it is never priced under
    // it, nor, where that shape was not measured, under it plus the fit's b per added row (a
    // measured shape knows its kernels' tiles, whose rows may cost nothing until the next).
    // Without this floor timing noise made rows look free: at 16 streams of a tiny Qwen3.5 on
    // lavapipe the plan gave drafts at an acceptance of 0.17 (their drafting not measured
    // yet), because the 16-row pass, measured in a slow stretch, cost more than the fit gave
    // wider passes (docs/perf-notes/goodput-controller.md, "Drafts priced before they are
    // measured"). Anchored at this pass, not at every narrower shape ever measured: one stale
    // or noisy narrow shape would otherwise floor every wider one for good.
    const double per_row = cost.ready() ? cost.b() : 0.0;
    const auto pass_ms = [&](uint32_t d) {
        const uint32_t rows = base_rows + d, outputs = base_outputs + d;
        const double floor = base_ms + (cost.measured(rows, outputs) ? 0.0 : per_row * double(d));
        return std::max(cost.estimate(rows, outputs), floor);
    };
    // The drafts in order of worth net of their drafting: each candidate's next draft is worth
    // reach(its depth), less its drafting time in tokens at the pass's rate without drafts (a
    // first draft's catch-up differs between candidates by milliseconds: ordered by worth
    // alone, a cheap draft behind a dear one was never tried without it).
    const double tokens_per_ms = base_tokens / base_ms;
    const auto net = [&](size_t i, uint32_t depth) {
        return worth(candidates[i], depth) - tokens_per_ms * drafting_ms(candidates[i], depth);
    };
    struct Next {
        double value;
        size_t who;
        bool operator<(const Next& o) const { return value < o.value || (value == o.value && who > o.who); }
    };
    std::priority_queue<Next> next;
    for (size_t i = 0; i < candidates.size(); ++i)
        if (candidates[i].k_cap > 0) next.push({net(i, 1), i});
    std::vector<size_t> order;  // candidate of the d-th draft
    double tokens = base_tokens, host_ms = 0;
    const uint32_t sequences = uint32_t(std::max(base_tokens, double(candidates.size())));
    double best_rate = base_tokens / base_ms * min_gain(sequences);
    size_t best_d = 0;
    std::vector<uint32_t> depth(candidates.size(), 0);
    while (!next.empty()) {
        const Next n = next.top();
        next.pop();
        order.push_back(n.who);
        tokens += worth(candidates[n.who], depth[n.who] + 1);
        host_ms += drafting_ms(candidates[n.who], depth[n.who] + 1);
        const uint32_t d = uint32_t(order.size());
        const double ms = pass_ms(d) + host_ms;
        if (ms > 0 && tokens / ms > best_rate) {
            best_rate = tokens / ms;
            best_d = order.size();
        }
        if (++depth[n.who] < candidates[n.who].k_cap)
            next.push({net(n.who, depth[n.who] + 1), n.who});
    }
    for (size_t d = 0; d < best_d; ++d) ++k[order[d]];
    return k;
}

}  // namespace tdm
