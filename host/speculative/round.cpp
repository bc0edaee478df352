// SPDX-License-Identifier: Apache-2.0
// host/speculative/round.cpp: the steps of a speculative round (see round.h).
#include "speculative/round.h"

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"
#include "speculative/tree_sampling.h"

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

DraftTree tree_of(const Proposal& p, int32_t root) {
    if (!p.tree()) return DraftTree::chain(root, p.drafts);
    DraftTree t(root);
    for (size_t i = 0; i < p.drafts.size(); ++i) (void)t.add(uint32_t(p.parents[i]), p.drafts[i]);
    for (size_t i = 0; i < p.drawn_from.size(); ++i)
        if (!p.drawn_from[i].ids.empty()) t.set_children_drawn_from(uint32_t(i), p.drawn_from[i]);
    return t;
}

int32_t accepted_draft(const Proposal& p, const RoundResult& r, uint32_t i) {
    return r.path.empty() ? p.drafts[i] : p.drafts[r.path[i + 1] - 1];
}

uint32_t accepted_row(const RoundResult& r, uint32_t i) { return r.path.empty() ? i : r.path[i]; }

namespace {

// A drafter's tree as a proposal: drafts and parents (node i + 1 is drafts[i]).
Result<Proposal> tree_proposal(Drafter& d, const DraftRequest& req) {
    const DraftTree t = TDM_TRY(d.draft_tree(req));
    if (t.size() > req.tree.nodes)
        return Error::format("it proposed a tree of {} nodes, {} were asked for", t.size(), req.tree.nodes);
    Proposal p;
    for (uint32_t i = 1; i < t.size(); ++i) {
        p.drafts.push_back(t.token(i));
        p.parents.push_back(t.parent(i));
    }
    for (uint32_t i = 0; i < t.size(); ++i)
        if (const TokenDistribution* q = t.children_drawn_from(i)) {
            p.drawn_from.resize(t.size());
            p.drawn_from[i] = *q;
        }
    // a chain is verified as one: the same rows, no tree input (a chain's rule treats drafts
    // as deterministic, so one drawn at random stays a tree, whose rule reads its q)
    if (t.max_depth() + 1 == t.size() && p.drawn_from.empty()) p.parents.clear();
    return p;
}

// What the drafter proposes: a tree when it grows them and the round allows one.
Result<Proposal> ask(Drafter& d, const DraftRequest& req) {
    if (req.tree.nodes > 1 && d.grows_trees()) return tree_proposal(d, req);
    Proposal p;
    p.drafts = TDM_TRY(d.draft(req));
    return p;
}

}  // namespace

Proposal propose(std::span<ChainedDrafter> chain, SpecStats& stats, const DraftRequest& req, int draft_min,
                 uint32_t n_vocab) {
    Proposal out;
    const size_t k = req.max;
    for (size_t i = 0; i < chain.size() && out.winner < 0; ++i) {
        ChainedDrafter& d = chain[i];
        if (!d.on) continue;
        const double g0 = steady_now_ms();
        Result<Proposal> prop = ask(*d.drafter, req);
        DrafterStats& st = stats.drafters[d.stat];
        st.calls_gen++;
        st.dur_gen_ms += steady_now_ms() - g0;
        if (!prop.ok()) {
            turn_off(d, stats, prop.error());
            continue;
        }
        std::vector<int32_t> parents = std::move(prop->parents);
        std::vector<int32_t> p = std::move(prop->drafts);
        if (p.size() > k && parents.empty()) p.resize(k);
        for (int32_t t : p)
            if (t < 0 || uint32_t(t) >= n_vocab) {
                turn_off(d, stats, Error::format("it proposed token {} outside the vocabulary of {}", t, n_vocab));
                p.clear();
                break;
            }
        if (d.on && !p.empty() && int(p.size()) >= std::max(1, draft_min)) {
            out.drafts = std::move(p);
            out.parents = std::move(parents);
            out.drawn_from = std::move(prop->drawn_from);
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
    if (proposal.tree()) {
        const DraftTree tree = tree_of(proposal, history.back());
        TreeVerdict v = greedy ? accept_greedy(tree, std::span<const int32_t>(rows.argmax, tree.size()))
                               : accept_sampled(tree, rows, sampler, history);
        r.accepted = uint32_t(v.path.size()) - 1;
        r.next = v.next;
        r.path = std::move(v.path);
        return r;
    }
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
    if (!round.path.empty()) return commit_path(kv, seq, int32_t(n_kv - uint32_t(round.path.size())), round.path);
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
    if (round.path.empty())
        stats.add_round(round.drafted, round.accepted);
    else
        stats.add_tree_round(round.drafted + 1, round.accepted);
    stats.verify_ms += verify_ms;
    DrafterStats& ws = stats.drafters[chain[size_t(round.winner)].stat];
    ws.gen_drafts++;
    ws.gen_tokens += round.drafted;
    ws.acc_tokens += round.accepted;
    if (round.accepted > 0) ws.acc_drafts++;
}

}  // namespace tdm
