// SPDX-License-Identifier: Apache-2.0
// host/speculative/chain_goodput.cpp
#include "speculative/chain_goodput.h"

#include <algorithm>
#include <optional>

#include "speculative/goodput_history.h"

namespace tdm {
namespace {

using Why = GoodputOffer::Why;

// A revisit is due after this many rounds passed over; one that does not put the drafter
// first doubles it, up to 32x (the probes' back-off).
constexpr int kRevisitInterval = kGoodputProbeInterval;
constexpr int kMaxRevisitBackOff = 32;

}  // namespace

ChainGoodput::ChainGoodput(int k_max, const GoodputHistory* history) : k_max_(std::max(1, k_max)), history_(history) {}

ChainGoodput::Member* ChainGoodput::find(size_t stat) {
    for (Member& m : members_)
        if (m.stat == stat) return &m;
    return nullptr;
}

const ChainGoodput::Member* ChainGoodput::find(size_t stat) const {
    for (const Member& m : members_)
        if (m.stat == stat) return &m;
    return nullptr;
}

void ChainGoodput::meet(std::span<const ChainedDrafter> chain) {
    for (const ChainedDrafter& d : chain) {
        if (find(d.stat)) continue;
        const DrafterKind kind = d.drafter->kind();
        const std::string& name = d.drafter->history_name();
        const std::optional<GoodputMemory> start = history_ ? history_->start_for(kind, name) : std::nullopt;
        Member m{.stat = d.stat,
                 .drafter = name,
                 .tune = GoodputController(k_max_, kGoodputProbeInterval, kind, start ? &*start : nullptr)};
        m.revisit_after = kRevisitInterval;
        if (members_.empty()) planner_ = d.stat;
        members_.push_back(std::move(m));
    }
    ranked_for_ = -1;
    decided_ = -1;
    order_.clear();
    order_stat_.clear();
}

void ChainGoodput::rank(std::span<const ChainedDrafter> chain, int k_cap, uint32_t pos) {
    if (ranked_for_ == int64_t(pos)) return;
    ranked_for_ = int64_t(pos);
    decided_ = -1;
    order_.clear();
    order_stat_.clear();
    std::vector<size_t> on;
    for (size_t i = 0; i < chain.size(); ++i)
        if (chain[i].on && find(chain[i].stat)) on.push_back(i);
    const bool several = on.size() >= 2;
    for (size_t i : on) {
        Member& m = *find(chain[i].stat);
        m.offer = m.tune.offer(k_cap);
        m.promoted = m.asked_now = false;
        // what its controller would decide alone: no length pays, drafting is off (probes only)
        if (several && m.offer.why == Why::measured && m.offer.k == 0) {
            (void)m.tune.choose(k_cap);
            m.offer = m.tune.offer(k_cap);
        }
    }
    judge_revisits(chain, on);
    if (several)
        for (size_t i : on) {
            Member& m = *find(chain[i].stat);
            const bool revisit = m.offer.why == Why::measured && m.offer.k > 0 && m.passed >= m.revisit_after;
            m.promoted = m.offer.why == Why::first || m.offer.why == Why::probe || revisit;
        }
    // promoted first (the chain's order), then by what each offers, then those offering nothing
    std::vector<size_t> offering, idle;
    for (size_t i : on) {
        const Member& m = *find(chain[i].stat);
        if (m.promoted) order_.push_back(i);
        else if (m.offer.k > 0) offering.push_back(i);
        else idle.push_back(i);
    }
    std::stable_sort(offering.begin(), offering.end(), [&](size_t a, size_t b) {
        return find(chain[a].stat)->offer.speedup > find(chain[b].stat)->offer.speedup;
    });
    order_.insert(order_.end(), offering.begin(), offering.end());
    order_.insert(order_.end(), idle.begin(), idle.end());
    for (size_t i : order_) order_stat_.push_back(chain[i].stat);
    // the plan's estimates: the best-ranked drafter not going first for another reason
    const size_t planner = !offering.empty() ? offering.front()
                           : !idle.empty()   ? idle.front()
                           : !order_.empty() ? order_.front()
                                             : chain.size();
    if (planner < chain.size()) planner_ = chain[planner].stat;
}

// A revisit that did not put the drafter ahead of every other drafter offering a length
// backs off; one that did (or a drafter now alone) starts the interval again.
void ChainGoodput::judge_revisits(std::span<const ChainedDrafter> chain, std::span<const size_t> on) {
    for (size_t i : on) {
        Member& m = *find(chain[i].stat);
        if (!m.revisiting) continue;
        m.revisiting = false;
        double best_other = 0;
        for (size_t j : on) {
            const Member& o = *find(chain[j].stat);
            if (&o != &m && o.offer.why == Why::measured && o.offer.k > 0) best_other = std::max(best_other, o.offer.speedup);
        }
        const bool won = m.offer.why == Why::measured && m.offer.k > 0 && m.offer.speedup >= best_other;
        m.revisit_after = won ? kRevisitInterval : std::min(m.revisit_after * 2, kRevisitInterval * kMaxRevisitBackOff);
    }
}

int ChainGoodput::choose(std::span<const ChainedDrafter> chain, int k_cap, uint32_t pos) {
    if (decided_ >= 0 && ranked_for_ == int64_t(pos)) return decided_k_;
    rank(chain, k_cap, pos);
    if (order_.empty()) {
        ++off_steps_;
        return 0;
    }
    Member& m = *find(order_stat_.front());
    const int k = m.tune.choose(k_cap);
    decided_ = int64_t(m.stat);
    decided_k_ = k;
    if (k > 0) asked(m);
    else ++off_steps_;
    return k;
}

int ChainGoodput::ask(const ChainedDrafter& d, int k) {
    Member* m = find(d.stat);
    if (!m || k <= 0) return 0;
    if (decided_ == int64_t(m->stat)) return k;
    if (m->offer.k <= 0) return 0;  // a plain step for it this round
    const int own = m->tune.choose(k);
    if (own > 0) asked(*m);
    return own;
}

void ChainGoodput::asked(Member& m) {
    m.asked_now = true;
    m.passed = 0;
    if (m.promoted && m.offer.why == Why::measured) m.revisiting = true;
}

const GoodputController& ChainGoodput::planner() const {
    static const GoodputController none(1);
    const Member* m = find(planner_);
    return m ? m->tune : none;
}

const std::string& ChainGoodput::planner_drafter() const {
    static const std::string none;
    const Member* m = find(planner_);
    return m ? m->drafter : none;
}

void ChainGoodput::planned(int k) {
    Member* p = find(planner_);
    if (!p) return;
    p->tune.planned(k);
    if (k <= 0) {
        ++off_steps_;
        return;
    }
    if (!order_stat_.empty() && order_stat_.front() == planner_) {
        decided_ = int64_t(planner_);
        decided_k_ = k;
        asked(*p);
    }
}

bool ChainGoodput::probe_when_starved(uint32_t probers, uint32_t sequences) {
    Member* p = find(planner_);
    return p && p->tune.probe_when_starved(probers, sequences);
}

void ChainGoodput::probe_dropped() {
    if (Member* p = find(planner_)) p->tune.probe_dropped();
}

void ChainGoodput::observe_plain(double ms, bool alone) {
    for (Member& m : members_) m.tune.observe_plain(ms, alone);
}

void ChainGoodput::passed_over(size_t winner, int k, double verify_ms) {
    for (Member& m : members_) {
        if (m.stat == winner) continue;
        m.tune.observe_elsewhere(k, verify_ms);
        if (!m.asked_now && m.offer.why == Why::measured && m.offer.k > 0) ++m.passed;
    }
}

void ChainGoodput::observe_round(size_t winner, int k, int accepted, double draft_ms, double verify_ms) {
    if (Member* w = find(winner)) w->tune.observe_round(k, accepted, draft_ms, verify_ms);
    passed_over(winner, k, verify_ms);
}

void ChainGoodput::observe_tree_round(size_t winner, int depth, int rows, int accepted, double verify_ms) {
    if (Member* w = find(winner)) w->tune.observe_tree_round(depth, rows, accepted, verify_ms);
    passed_over(winner, std::clamp(rows - 1, 1, k_max_), verify_ms);
}

void ChainGoodput::observe_cut(size_t winner, int position) {
    if (Member* w = find(winner)) w->tune.observe_cut(position);
}

bool ChainGoodput::off() const {
    return !members_.empty() &&
           std::all_of(members_.begin(), members_.end(), [](const Member& m) { return m.tune.off(); });
}

double ChainGoodput::predicted_speedup(int k) const {
    const Member* m = order_stat_.empty() ? find(planner_) : find(order_stat_.front());
    return m ? m->tune.predicted_speedup(k) : 1.0;
}

ControllerStats ChainGoodput::report() const {
    if (members_.size() == 1) return members_.front().tune.report();
    ControllerStats r;
    r.on = true;
    for (const Member& m : members_) {
        const ControllerStats& c = m.tune.report();
        r.probes += c.probes;
        r.chosen_rounds += c.chosen_rounds;
        r.chosen_k_sum += c.chosen_k_sum;
        r.predicted_sum += c.predicted_sum;
    }
    r.off_steps = off_steps_;
    r.plain_ms = planner().report().plain_ms;
    return r;
}

void ChainGoodput::teach(GoodputHistory& history) const {
    std::vector<GoodputMemory> learned_by;
    for (const Member& m : members_) learned_by.push_back(m.tune.learned());
    const auto drafted = [&](const Member& m) {
        for (size_t i = 0; i < members_.size(); ++i)
            if (members_[i].tune.kind() == m.tune.kind() && members_[i].drafter == m.drafter &&
                learned_by[i].tried_total() > 0)
                return true;
        return false;
    };
    for (size_t i = 0; i < members_.size(); ++i) {
        const Member& m = members_[i];
        const GoodputMemory& learned = learned_by[i];
        if (members_.size() == 1 || learned.tried_total() > 0) {
            history.absorb(m.tune.kind(), m.drafter, learned);
            continue;
        }
        // One never asked leaves the history's costs and acceptance alone (its own are the
        // history's as it started, stale if other sequences taught it since), but one that is
        // off hands on its count toward the next probe: else a member switched off in an
        // earlier sequence, outranked in every short one after, counted from the same start in
        // each and never probed again. Not over a member of its name that drafted (a drafter
        // chained twice): that one's count is the history's.
        if (learned.off_steps <= 0 || drafted(m)) continue;
        GoodputMemory count;
        count.off_steps = learned.off_steps;
        count.probe_after = learned.probe_after;
        history.absorb(m.tune.kind(), m.drafter, count);
    }
}

Proposal propose_ranked(ChainGoodput& tune, std::span<ChainedDrafter> chain, SpecStats& stats, DraftRequest req,
                        int draft_min, uint32_t n_vocab) {
    const int k = int(req.max);
    const std::vector<size_t> order(tune.order().begin(), tune.order().end());
    for (size_t i : order) {
        if (i >= chain.size() || !chain[i].on) continue;
        const int own = tune.ask(chain[i], k);
        if (own <= 0) continue;
        // draft_min bounds every drafter's length: a shorter proposal would be dropped
        req.max = uint32_t(std::min(k, std::max(own, draft_min)));
        Proposal p = propose(chain.subspan(i, 1), stats, req, draft_min, n_vocab);
        if (p.winner < 0) continue;
        p.winner = int(i);
        return p;
    }
    return {};
}

}  // namespace tdm
