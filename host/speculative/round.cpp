// SPDX-License-Identifier: Apache-2.0
// host/speculative/round.cpp: the steps of a speculative round (see round.h).
#include "speculative/round.h"

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"

namespace tdm {

void turn_off(ChainedDrafter& d, SpecStats& stats, const Error& e) {
    if (!d.on) return;
    d.on = false;
    stats.drafters[d.stat].failure = e.message();
    TDM_LOG_WARN("spec", "drafter {} failed and is off for the rest of this request (the output is unchanged): {}",
                 d.drafter->name(), e.message());
}

bool any_on(std::span<const ChainedDrafter> chain) {
    return std::any_of(chain.begin(), chain.end(), [](const ChainedDrafter& d) { return d.on; });
}

ChainedDrafter* first_on(std::span<ChainedDrafter> chain) {
    for (ChainedDrafter& d : chain)
        if (d.on) return &d;
    return nullptr;
}

bool any_reads_hidden(std::span<const ChainedDrafter> chain) {
    return std::any_of(chain.begin(), chain.end(), [](const ChainedDrafter& d) {
        return d.on && d.drafter->hidden_point() != TDM_HIDDEN_NONE;
    });
}

Proposal propose(std::span<ChainedDrafter> chain, SpecStats& stats, const DraftRequest& req, int draft_min,
                 uint32_t n_vocab) {
    Proposal out;
    const size_t k = req.max;
    for (size_t i = 0; i < chain.size() && out.winner < 0; ++i) {
        ChainedDrafter& d = chain[i];
        if (!d.on) continue;
        const double g0 = steady_now_ms();
        auto prop = d.drafter->draft(req);
        DrafterStats& st = stats.drafters[d.stat];
        st.calls_gen++;
        st.dur_gen_ms += steady_now_ms() - g0;
        if (!prop.ok()) {
            turn_off(d, stats, prop.error());
            continue;
        }
        std::vector<int32_t> p = std::move(prop).value();
        if (p.size() > k) p.resize(k);
        for (int32_t t : p)
            if (t < 0 || uint32_t(t) >= n_vocab) {
                turn_off(d, stats, Error::format("it proposed token {} outside the vocabulary of {}", t, n_vocab));
                p.clear();
                break;
            }
        if (d.on && !p.empty() && int(p.size()) >= std::max(1, draft_min)) {
            out.drafts = std::move(p);
            out.winner = int(i);
        }
    }
    return out;
}

RoundResult verify(const Proposal& proposal, const VerifyRows& rows, Sampler& sampler, bool greedy,
                   std::span<const int32_t> history) {
    const std::vector<int32_t>& drafts = proposal.drafts;
    const uint32_t nd = uint32_t(drafts.size());
    const int n_vocab = int(rows.n_vocab);
    RoundResult r;
    r.drafted = nd;
    r.winner = proposal.winner;
    uint32_t m = 0;
    if (greedy) {
        while (m < nd && drafts[m] == rows.argmax[m]) ++m;
        r.next = rows.argmax[m];
    } else if (nd == 0) {
        r.next = sampler.sample(rows.logits, n_vocab, history);
    } else {
        TokenDistribution p;
        std::vector<int32_t> h(history.begin(), history.end());  // the penalty window sees accepted drafts
        for (; m < nd; ++m) {
            sampler.distribution(rows.logits + size_t(m) * rows.n_vocab, n_vocab, h, &p);
            const SpecDecision dec = speculative_accept(p, drafts[m], sampler.rng());
            if (!dec.accepted) {
                r.next = dec.token;
                break;
            }
            h.push_back(drafts[m]);
        }
        if (r.next < 0) r.next = sampler.sample(rows.logits + size_t(nd) * rows.n_vocab, n_vocab, h);
    }
    r.accepted = m;
    return r;
}

Status rollback(KvPool& kv, int seq, uint32_t n_kv, const RoundResult& round) {
    if (round.drafted == 0) return {};
    return kv.truncate(seq, n_kv);
}

void show_rows(std::span<ChainedDrafter> chain, SpecStats& stats, const TargetRows& rows) {
    for (ChainedDrafter& d : chain)
        if (d.on && d.drafter->hidden_point() != TDM_HIDDEN_NONE)
            if (auto o = d.drafter->observe(rows); !o.ok()) turn_off(d, stats, o.error());
}

void accept(std::span<ChainedDrafter> chain, SpecStats& stats, std::span<const int32_t> history,
            const RoundResult& round) {
    for (size_t i = 0; i < chain.size(); ++i) {
        ChainedDrafter& d = chain[i];
        if (!d.on) continue;
        const bool won = int(i) == round.winner;
        const double c0 = steady_now_ms();
        if (auto a = d.drafter->accept(history, won ? round.drafted : 0, won ? round.accepted : 0); !a.ok())
            turn_off(d, stats, a.error());
        DrafterStats& st = stats.drafters[d.stat];
        st.calls_acc++;
        st.dur_acc_ms += steady_now_ms() - c0;
    }
}

void tally(std::span<const ChainedDrafter> chain, SpecStats& stats, const RoundResult& round, double verify_ms) {
    stats.add_round(round.drafted, round.accepted);
    stats.verify_ms += verify_ms;
    DrafterStats& ws = stats.drafters[chain[size_t(round.winner)].stat];
    ws.gen_drafts++;
    ws.gen_tokens += round.drafted;
    ws.acc_tokens += round.accepted;
    if (round.accepted > 0) ws.acc_drafts++;
}

}  // namespace tdm
