// SPDX-License-Identifier: Apache-2.0
// host/speculative/goodput_history.cpp
#include "speculative/goodput_history.h"

#include <algorithm>
#include <numeric>

namespace tdm {
namespace {

constexpr double kSequenceDecay = 0.7;   // an older sequence's counts, per newer one
constexpr double kMaxFirstDrafts = 64;   // the first position's count is capped there
// The agreement between sequences is judged over about the last ten (an older one's weight,
// per newer one), from those with at least two first drafts (one says nothing of a rate).
constexpr double kAgreementDecay = 0.9;
constexpr double kAgreementDrafts = 2;

void fold(std::vector<double>& into, const std::vector<double>& add) {
    if (into.size() < add.size()) into.resize(add.size(), 0.0);
    for (double& x : into) x *= kSequenceDecay;
    for (size_t j = 0; j < add.size(); ++j) into[j] += add[j];
}

}  // namespace

double GoodputMemory::tried_total() const { return std::accumulate(tried.begin(), tried.end(), 0.0); }
double GoodputMemory::hit_total() const { return std::accumulate(hit.begin(), hit.end(), 0.0); }

// The sequences' first-draft rates spread for two reasons: chance (a rate measured over n drafts
// varies by p(1 - p) / n) and their texts (code, prose: tau^2 between sequences). Their rates
// then look drawn from a Beta distribution whose concentration, p(1 - p) / tau^2 - 1, is what
// the history is worth in drafts as the prior of the next sequence (its moments' estimate).
// Where the sequences agree as closely as chance allows (a benchmark's forced acceptance, a
// server answering one kind of request) it weighs `most`, so that two or three rejections in a
// row at the start of a sequence do not outvote what the sequences before saw (at 0.7 on
// lavapipe, where k = 1 breaks even near 0.55-0.6, they switched drafting off for a probe
// interval or more in about one sequence of four); where they differ (prose after code) it
// weighs `least` and the sequence's own drafts soon decide. Before two sequences, `least`;
// never more than the first drafts the history holds (two sequences of two drafts each, both
// accepted, agree perfectly but are worth 3.4 drafts, not 16).
double GoodputMemory::prior_weight(double least, double most) const {
    most = std::max(least, std::min(most, tried.empty() ? 0.0 : tried[0]));
    if (seqs < 1.5) return least;
    const double mean = seq_rate / seqs;
    const double spread = mean * (1.0 - mean);
    const double var = std::max(0.0, seq_rate_sq / seqs - mean * mean) * seqs / (seqs - 1.0);
    const double tau2 = var - spread * seq_inv_drafts / seqs;
    if (spread <= 0 || tau2 <= 0) return most;
    return std::clamp(spread / tau2 - 1.0, least, most);
}

const GoodputMemory* GoodputHistory::find(DrafterKind kind, std::string_view drafter) const {
    auto it = by_drafter_.find(Key(kind, drafter));
    return it == by_drafter_.end() ? nullptr : &it->second;
}

std::optional<GoodputMemory> GoodputHistory::start_for(DrafterKind kind, std::string_view drafter) const {
    if (const GoodputMemory* m = find(kind, drafter)) return *m;
    if (plain_ms_ <= 0) return std::nullopt;
    // Not the verify widths: a width marked measured makes the new drafter's first round
    // there count as timed, and that round's drafting builds the drafter's own graphs.
    GoodputMemory target;
    target.plain_ms = plain_ms_;
    return target;
}

void GoodputHistory::absorb(DrafterKind kind, std::string_view drafter, const GoodputMemory& seq) {
    auto it = by_drafter_.try_emplace(Key(kind, drafter)).first;
    if (seq.plain_ms > 0) plain_ms_ = seq.plain_ms;
    GoodputMemory& m = it->second;
    // A sequence that drafted nothing (its drafter off from its start, no probe due) says
    // nothing of the acceptance, so it does not age what the others saw: else a few of them
    // decayed a never-agreeing head's one rejected trial until the guess of the kind's prior
    // showed through and the next sequence drafted again.
    if (seq.tried_total() > 0) {
        if (!seq.tried.empty() && seq.tried[0] >= kAgreementDrafts) {
            const double rate = (seq.hit.empty() ? 0.0 : seq.hit[0]) / seq.tried[0];
            m.seqs = m.seqs * kAgreementDecay + 1.0;
            m.seq_rate = m.seq_rate * kAgreementDecay + rate;
            m.seq_rate_sq = m.seq_rate_sq * kAgreementDecay + rate * rate;
            m.seq_inv_drafts = m.seq_inv_drafts * kAgreementDecay + 1.0 / seq.tried[0];
        }
        fold(m.tried, seq.tried);
        fold(m.hit, seq.hit);
        m.hit.resize(m.tried.size(), 0.0);
        if (!m.tried.empty() && m.tried[0] > kMaxFirstDrafts) {
            const double scale = kMaxFirstDrafts / m.tried[0];
            for (double& x : m.tried) x *= scale;
            for (double& x : m.hit) x *= scale;
        }
    }
    // the newest sequence's probing (its count includes what it started from)
    m.off_steps = seq.off_steps;
    m.probe_after = seq.probe_after;
    // costs: the newest measurement of each (already an average within its sequence)
    if (seq.plain_ms > 0) m.plain_ms = seq.plain_ms;
    if (seq.draft_ms_per_token > 0) m.draft_ms_per_token = seq.draft_ms_per_token;
    if (seq.resume_draft_ms > 0 && (seq.resume_measured || !m.resume_measured)) {
        m.resume_draft_ms = seq.resume_draft_ms;
        m.resume_measured = seq.resume_measured;
    }
    if (seq.trial_ms > 0) m.trial_ms = seq.trial_ms;
    if (m.verify_ms.size() < seq.verify_ms.size()) m.verify_ms.resize(seq.verify_ms.size(), 0.0);
    for (size_t k = 0; k < seq.verify_ms.size(); ++k)
        if (seq.verify_ms[k] > 0) m.verify_ms[k] = seq.verify_ms[k];
    if (m.built.size() < seq.built.size()) m.built.resize(seq.built.size(), false);
    for (size_t k = 0; k < seq.built.size(); ++k)
        if (seq.built[k]) m.built[k] = true;
}

void GoodputHistory::forget_acceptance() {
    for (auto& [drafter, m] : by_drafter_) {
        m.tried.clear();
        m.hit.clear();
        m.seqs = m.seq_rate = m.seq_rate_sq = m.seq_inv_drafts = 0;
        m.off_steps = 0;
        m.probe_after = 0;
    }
}

void GoodputHistory::set_plain_ms(double ms) {
    if (ms <= 0) return;
    plain_ms_ = ms;
    for (auto& [drafter, m] : by_drafter_) m.plain_ms = ms;
}

}  // namespace tdm
