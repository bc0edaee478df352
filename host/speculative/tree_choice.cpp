// SPDX-License-Identifier: Apache-2.0
// host/speculative/tree_choice.cpp: the tree-or-chain choice per round (see tree_choice.h).
#include "speculative/tree_choice.h"

#include <cstdlib>

namespace tdm {
namespace {

constexpr double kChoiceEma = 0.2;  // weight of the newest observation

void choice_ema(double& avg, double x, bool first) { avg = first ? x : (1 - kChoiceEma) * avg + kChoiceEma * x; }

}  // namespace

double TreeChoice::Kind::cost(uint32_t rows) const {
    if (rows < ms.size() && ms[rows] > 0) return ms[rows];
    // the nearest measured width, scaled by rows (a pass costs at most proportionally more)
    uint32_t best = 0;
    for (uint32_t w = 1; w < ms.size(); ++w)
        if (ms[w] > 0 && (best == 0 || std::abs(int(w) - int(rows)) < std::abs(int(best) - int(rows)))) best = w;
    return best ? ms[best] * double(rows) / double(best) : 0;
}

double TreeChoice::rate(bool tree, uint32_t rows) const {
    const Kind& k = kind(tree);
    const double c = k.cost(rows);
    return k.rounds > 0 && c > 0 ? k.tokens / c : 0;
}

bool TreeChoice::choose(uint32_t rows) {
    if (forced_) return true;
    bool tree = false;
    if (!cpu_) {
        ++decisions_;
        const double t = rate(true, rows), c = rate(false, rows);
        const bool warm = tree_.rounds >= kWarmRounds && chain_.rounds >= kWarmRounds && t > 0 && c > 0;
        if (!warm) {
            tree = tree_.rounds <= chain_.rounds;  // alternate, the tree first, until both are measured
        } else {
            tree = t > c;
            if (decisions_ % kRecheckRounds == 0) tree = !tree;  // keep the other one measured
        }
    }
    if (!tree) ++chains_chosen_;
    return tree;
}

void TreeChoice::observe(bool tree, uint32_t rows, uint32_t tokens, double verify_ms) {
    Kind& k = kind(tree);
    choice_ema(k.tokens, double(tokens), k.rounds == 0);
    ++k.rounds;
    if (k.ms.size() <= rows) {
        k.ms.resize(rows + 1, 0);
        k.seen.resize(rows + 1, 0);
    }
    if (k.seen[rows]++ > 0) choice_ema(k.ms[rows], verify_ms, k.ms[rows] == 0);
}

}  // namespace tdm
