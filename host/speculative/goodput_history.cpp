// SPDX-License-Identifier: Apache-2.0
// host/speculative/goodput_history.cpp
#include "speculative/goodput_history.h"

#include <algorithm>
#include <numeric>

namespace tdm {
namespace {

constexpr double kSequenceDecay = 0.7;   // an older sequence's counts, per newer one
constexpr double kMaxFirstDrafts = 64;   // the first position's count is capped there

void fold(std::vector<double>& into, const std::vector<double>& add) {
    if (into.size() < add.size()) into.resize(add.size(), 0.0);
    for (double& x : into) x *= kSequenceDecay;
    for (size_t j = 0; j < add.size(); ++j) into[j] += add[j];
}

}  // namespace

double GoodputMemory::tried_total() const { return std::accumulate(tried.begin(), tried.end(), 0.0); }
double GoodputMemory::hit_total() const { return std::accumulate(hit.begin(), hit.end(), 0.0); }

const GoodputMemory* GoodputHistory::find(DrafterKind kind) const {
    auto it = by_kind_.find(kind);
    return it == by_kind_.end() ? nullptr : &it->second;
}

void GoodputHistory::absorb(DrafterKind kind, const GoodputMemory& seq) {
    GoodputMemory& m = by_kind_[kind];
    // A sequence that drafted nothing (its drafter off from its start, no probe due) says
    // nothing of the acceptance, so it does not age what the others saw: else a few of them
    // decayed a never-agreeing head's one rejected trial until the guess of the kind's prior
    // showed through and the next sequence drafted again.
    if (seq.tried_total() > 0) {
        fold(m.tried, seq.tried);
        fold(m.hit, seq.hit);
        m.hit.resize(m.tried.size(), 0.0);
        if (!m.tried.empty() && m.tried[0] > kMaxFirstDrafts) {
            const double scale = kMaxFirstDrafts / m.tried[0];
            for (double& x : m.tried) x *= scale;
            for (double& x : m.hit) x *= scale;
        }
    }
    // costs: the newest measurement of each (already an average within its sequence)
    if (seq.plain_ms > 0) m.plain_ms = seq.plain_ms;
    if (seq.draft_ms_per_token > 0) m.draft_ms_per_token = seq.draft_ms_per_token;
    if (seq.trial_ms > 0) m.trial_ms = seq.trial_ms;
    if (m.verify_ms.size() < seq.verify_ms.size()) m.verify_ms.resize(seq.verify_ms.size(), 0.0);
    for (size_t k = 0; k < seq.verify_ms.size(); ++k)
        if (seq.verify_ms[k] > 0) m.verify_ms[k] = seq.verify_ms[k];
    if (m.built.size() < seq.built.size()) m.built.resize(seq.built.size(), false);
    for (size_t k = 0; k < seq.built.size(); ++k)
        if (seq.built[k]) m.built[k] = true;
}

void GoodputHistory::forget_acceptance() {
    for (auto& [kind, m] : by_kind_) {
        m.tried.clear();
        m.hit.clear();
    }
}

void GoodputHistory::set_plain_ms(double ms) {
    if (ms <= 0) return;
    for (auto& [kind, m] : by_kind_) m.plain_ms = ms;
}

}  // namespace tdm
