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

std::vector<uint32_t> allocate_drafts(const PassCostModel& cost, uint32_t base_rows, uint32_t base_outputs,
                                      double base_tokens, std::span<const DraftCandidate> candidates) {
    std::vector<uint32_t> k(candidates.size(), 0);
    const double base_ms = cost.estimate(base_rows, base_outputs);
    if (base_ms <= 0) return k;
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
        const double ms = cost.estimate(base_rows + d, base_outputs + d) + host_ms;
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
