// SPDX-License-Identifier: Apache-2.0
// host/speculative/batch_budget.cpp
#include "speculative/batch_budget.h"

#include <algorithm>
#include <cmath>

namespace tdm {
namespace {

constexpr double kDecay = 0.95;  // weight of a pass halves after ~14 passes

}  // namespace

void PassCostModel::observe(uint32_t rows, double ms) {
    const double x = double(rows);
    w_ = w_ * kDecay + 1;
    x_ = x_ * kDecay + x;
    y_ = y_ * kDecay + ms;
    xx_ = xx_ * kDecay + x * x;
    xy_ = xy_ * kDecay + x * ms;
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

std::vector<uint32_t> allocate_drafts(double a, double b, double base_tokens, uint32_t base_rows,
                                      std::span<const DraftCandidate> candidates) {
    std::vector<uint32_t> k(candidates.size(), 0);
    double tokens = base_tokens, ms = a + b * double(base_rows);
    if (ms <= 0) return k;
    // the next draft of each candidate is worth p^(k+1); take the best while it pays
    while (true) {
        int best = -1;
        double best_v = 0;
        for (size_t i = 0; i < candidates.size(); ++i) {
            const DraftCandidate& c = candidates[i];
            if (k[i] >= c.k_cap) continue;
            const double v = std::pow(std::clamp(c.acceptance, 0.0, 0.999), double(k[i] + 1));
            if (v > best_v) {
                best_v = v;
                best = int(i);
            }
        }
        if (best < 0) break;
        const double cost = b + candidates[size_t(best)].draft_ms_per_token;
        // adding it raises tokens per ms iff v / cost > tokens / ms
        if (best_v * ms <= tokens * cost) break;
        tokens += best_v;
        ms += cost;
        ++k[size_t(best)];
    }
    return k;
}

}  // namespace tdm
