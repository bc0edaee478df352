// SPDX-License-Identifier: Apache-2.0
// host/engine/batch_session.cpp: one session's part of a pass: its draft length and
// drafts before the pass, and after it (settle) the round's steps (speculative/round.h:
// verify, rollback, accept), the engine's statistics, and the session's callbacks.
#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "common/log.h"
#include "engine/batch_session.h"

namespace tdm {

// ---------------------------------------------------------------- before the pass

int BatchEngine::decide_k(Session& s, bool cap_only) const {
    if (!any_on(s.chain)) return 0;  // every drafter failed
    if (s.scores_prompt()) return 0;  // the prompt's round: its last token runs alone, undrafted
    if (s.planned_k >= 0) {  // the batch's budget decided (batch_budget.h)
        const int k = s.skip_next ? 0 : s.planned_k;
        s.skip_next = false;
        return k;
    }
    const KvPool& kv = runner_.kv();
    // Most drafts: the remaining budget (k drafts + the target's own token), draft_max, the
    // context (plain decoding never runs position capacity-1, so a verify must not either)
    // and the rows the target's sliding-window rings were sized for.
    int k = s.req.spec.draft_max;
    const GenerateParams& p = s.req.params;
    if (p.max_tokens >= 0) k = std::min<int>(k, p.max_tokens - int(s.result.tokens.size()) - 1);
    k = std::min<int>(k, int(kv.capacity_tokens()) - int(s.pos()) - 2);
    if (kv.has_rings()) k = std::min<int>(k, int(kv.config().rows_max) - 1);
    // recurrent states roll back only to a checkpoint: the pool keeps n_checkpoints, for a
    // verify of k + 1 rows and the state before it (a request's own draft_max may ask more)
    if (kv.n_states() > 0) k = std::min<int>(k, int(kv.config().n_checkpoints) - 2);
    k = std::max(0, k);
    if (s.req.spec.auto_k && !cap_only) {
        const int chosen = s.tune.choose(s.chain, k, s.pos());
        // draft_min is a limit of the controller too: a shorter proposal would be dropped
        k = chosen > 0 ? std::min(k, std::max(chosen, s.req.spec.draft_min)) : 0;
    }
    if (cap_only) return k;
    if (s.skip_next) k = 0;
    s.skip_next = false;
    return k;
}

int BatchEngine::pass_k(Session& s) {
    // decided with the prepare unless the batch's budget has its say this pass
    const int k = s.next_k >= 0 && s.planned_k < 0 ? s.next_k : decide_k(s);
    if (s.prepared >= 0 && (k != s.next_k || !s.chain[size_t(s.prepared)].on)) {
        s.chain[size_t(s.prepared)].drafter->cancel();
        s.prepared = -1;
    }
    s.next_k = -1;
    return k;
}

// The goodput controller with several decoding sessions: drafts where they pay for the whole pass.
void BatchEngine::plan_drafts(std::span<Session* const> part) {
    for (Session* s : part) s->planned_k = -1;
    if (!cost_.ready()) return;
    std::vector<Session*> auto_sessions;
    std::vector<const GoodputController*> leads;  // each auto session's planner
    // the leads by drafter (kind and history name), and each lead's group: its peers
    std::map<std::pair<DrafterKind, std::string_view>, std::vector<const GoodputController*>> by_drafter;
    std::vector<const std::vector<const GoodputController*>*> peers;
    std::vector<DraftCandidate> cand;
    uint32_t base_rows = 0, base_outputs = 0, decoding = 0;
    for (Session* s : part) {
        if (s->done || !s->slot) continue;
        const uint32_t remaining = uint32_t(s->history.size()) - s->n_kv;
        if (remaining > 1) {
            base_rows += std::min(remaining, options_.n_batch);
            base_outputs += remaining <= options_.n_batch;  // its last chunk: the first token's row
            continue;
        }
        ++base_rows;
        ++base_outputs;
        ++decoding;
        if (!s->req.spec.auto_k) continue;
        auto_sessions.push_back(s);
        const int own_cap = std::max(0, decide_k(*s, /*cap_only=*/true));
        s->tune.rank(s->chain, own_cap, s->pos());  // the drafter whose estimates plan its drafts
        const GoodputController& lead = s->tune.planner();
        uint32_t cap = uint32_t(own_cap);
        if (s->skip_next) cap = 0;  // its skip streak asks for a plain step: no rows for it
        if (cap < uint32_t(std::max(1, s->req.spec.draft_min))) cap = 0;  // a shorter proposal is dropped
        std::vector<double> reach;
        for (uint32_t j = 1; j <= cap; ++j) reach.push_back(lead.reach(int(j)));
        cand.push_back({cap, lead.acceptance(), 0, 0, std::move(reach)});
        leads.push_back(&lead);
        std::vector<const GoodputController*>& group = by_drafter[{lead.kind(), s->tune.planner_drafter()}];
        group.push_back(&lead);
        peers.push_back(&group);  // a map's elements stay where they are
    }
    if (auto_sessions.size() < 2) return;
    for (size_t i = 0; i < cand.size(); ++i)
        price_drafting(cand[i], *leads[i], *peers[i], auto_sessions[i]->draft_ms_per_token);
    base_outputs = std::max(base_outputs, 1u);  // a pass always reads back one row
    const std::vector<uint32_t> k = allocate_drafts(cost_, base_rows, base_outputs, double(decoding), cand);
    uint32_t starved = 0;  // the sessions that may probe this pass
    for (size_t i = 0; i < auto_sessions.size(); ++i) {
        Session& s = *auto_sessions[i];
        s.planned_k = k[i] >= uint32_t(std::max(1, s.req.spec.draft_min)) ? int(k[i]) : 0;  // fewer would be dropped
        starved += s.planned_k == 0 && cand[i].k_cap > 0;
    }
    for (size_t i = 0; i < auto_sessions.size(); ++i) {
        Session& s = *auto_sessions[i];
        const uint32_t min_k = uint32_t(std::max(1, s.req.spec.draft_min));
        if (s.planned_k == 0 && cand[i].k_cap > 0 && s.tune.probe_when_starved(starved, decoding)) {
            // A session given nothing drafts now and then (its controller's back-off), so
            // that its acceptance estimate follows what its drafter would do now; but only
            // where its drafts could pay were they all accepted (else the probe only costs:
            // a pass one tile wider).
            std::vector<DraftCandidate> best_case = cand;
            best_case[i].acceptance = 1.0;
            best_case[i].reach.clear();
            best_case[i].first_draft_ms = 0;  // accepted, the catch-up serves the rounds after it
            if (allocate_drafts(cost_, base_rows, base_outputs, double(decoding), best_case)[i] >= min_k)
                s.planned_k = int(min_k);
            else
                s.tune.probe_dropped();
        }
        if (cand[i].k_cap > 0) s.tune.planned(s.planned_k);
    }
}

void BatchEngine::prepare_batches(std::span<Session* const> part) {
    draft_batches_.clear();
    // per batcher: the drafters (each a session's first active one) and their requests
    struct Member {
        Drafter* drafter;
        DraftRequest req;
        Session* session;
    };
    std::vector<std::pair<DraftBatcher*, std::vector<Member>>> groups;
    for (Session* s : part) {
        if (s->k <= 0 || s->prepared >= 0) continue;
        const ChainedDrafter* first = s->opener();
        if (!first) continue;
        Drafter* d = first->drafter;
        DraftBatcher* b = d->batcher();
        if (!b || (d->grows_trees() && tree_shape(*s, s->k).nodes > 1)) continue;  // trees are grown alone
        auto g = std::find_if(groups.begin(), groups.end(), [b](const auto& x) { return x.first == b; });
        if (g == groups.end()) g = groups.insert(groups.end(), {b, {}});
        g->second.push_back({d, DraftRequest{std::span<const int32_t>(s->history), s->pos(), uint32_t(s->k),
                                             s->slot->seq}, s});
    }
    for (auto& [batcher, members] : groups) {
        if (members.size() < 2) continue;  // alone: its own draft() call
        std::vector<Drafter*> ds;
        std::vector<DraftRequest> reqs;
        DraftBatch batch;
        for (const Member& m : members) {
            ds.push_back(m.drafter);
            reqs.push_back(m.req);
            batch.members.push_back(m.session);
        }
        const double t0 = steady_now_ms();
        batcher->prepare_batch(ds, reqs);
        batch.start_ms = steady_now_ms() - t0;
        draft_batches_.push_back(std::move(batch));
    }
}

void BatchEngine::share_draft_time(std::span<Session* const> run) {
    // The first of a batch to draft waited for the whole graph, the others found their drafts
    // ready: each got 0 ms but one, and their controllers took drafting for free (with 4
    // streams of a tiny Qwen3.5 on lavapipe, a miss cost of 0.08 plain steps for three of
    // them, 1.0 for the fourth), while the plan's candidates carried one session's cost each.
    // Shared by the drafts asked (the graph computed them, whatever a constraint cut after),
    // among the members that run; one preempted in this pass, before or after it drafted,
    // has none. Not told apart: a member's catch-up on rows it skipped (after plain steps, or
    // a prompt's leading chunks, caught up when the batch starts) is shared like the rest.
    const auto runs = [run](const Session* s) { return std::find(run.begin(), run.end(), s) != run.end(); };
    for (const DraftBatch& b : draft_batches_) {
        double total = b.start_ms;
        int asked = 0;
        for (const Session* s : b.members) {
            total += s->draft_ms;
            if (runs(s)) asked += std::max(0, s->k);
        }
        if (asked == 0) continue;
        for (Session* s : b.members)
            if (runs(s)) s->draft_ms = total * double(std::max(0, s->k)) / double(asked);
    }
    draft_batches_.clear();
    for (Session* s : run) {
        if (s->k <= 0) continue;
        TDM_LOG_DEBUG("spec", "sequence {} at {}: asked {} drafts, got {} in {:.1f} ms", s->slot->seq, s->pos(), s->k,
                      s->proposal.drafts.size(), s->draft_ms);
        s->result.spec.draft_ms += s->draft_ms;
        const double per_token = s->draft_ms / double(std::max<size_t>(1, s->proposal.drafts.size()));
        s->draft_ms_per_token = s->draft_ms_per_token == 0 ? per_token : 0.8 * s->draft_ms_per_token + 0.2 * per_token;
    }
}

// The round's proposal (speculative/round.h), with the session's drafting time.
Proposal BatchEngine::draft(Session& s, int k) {
    s.draft_ms = 0;
    s.tree_chosen = false;
    if (k <= 0) return {};
    DraftRequest req{std::span<const int32_t>(s.history), s.pos(), uint32_t(k), s.slot->seq};
    req.tree = tree_shape(s, k);
    if (s.req.spec.auto_k) s.tune.rank(s.chain, k, s.pos());  // ranked already when k was chosen
    const ChainedDrafter* opener = s.opener();
    s.tree_chosen = req.tree.nodes > 1 && opener && opener->drafter->grows_trees();
    if (s.tree_chosen && !s.tree_choice.choose(req.tree.nodes)) {
        // the chain of as many rows as the tree (tree_choice.h compares equal budgets)
        req.max = std::min(req.max, req.tree.nodes - 1);
        req.tree = {};
        ++s.result.spec.tree_chains_chosen;
    }
    const double t0 = steady_now_ms();
    const uint32_t n_vocab = runner_.model().info().n_vocab;
    // under the goodput controller the drafters are asked in its order, each for its own length
    Proposal out = s.req.spec.auto_k ? propose_ranked(s.tune, s.chain, s.result.spec, req, s.req.spec.draft_min, n_vocab)
                                     : propose(s.chain, s.result.spec, req, s.req.spec.draft_min, n_vocab);
    if (s.prepared >= 0 && !s.chain[size_t(s.prepared)].on) s.chain[size_t(s.prepared)].drafter->cancel();
    s.prepared = -1;
    // a draft the constraint forbids would be rejected anyway: it and the rest are not verified
    s.cut_at = -1;
    if (s.constraint && !out.drafts.empty())
        if (const uint32_t cut = cut_drafts(*s.constraint, out, s.draft_states); cut > 0) {
            ++s.result.spec.constraint_cuts;
            s.result.spec.constraint_cut_tokens += cut;
            s.cut_at = int(out.drafts.size());
        }
    s.draft_ms = steady_now_ms() - t0;  // accounted, a batch's shared out, by share_draft_time()
    return out;
}

// A tree of at most as many rows as the chain of k drafts, where the round can verify one:
// unconstrained, no recurrent state (speculative/draft_tree.h); greedy or sampling
// (speculative/tree_sampling.h). Drafters reading the target's hidden rows are shown the
// accepted path's (show_target_rows).
TreeShape BatchEngine::tree_shape(const Session& s, int k) const {
    TreeShape t = s.req.spec.tree;
    if (t.nodes <= 1 || s.constraint || runner_.kv().n_states() > 0) return {};
    t.nodes = std::min({t.nodes, uint32_t(k) + 1, kKvTreeMaxNodes});
    return t;
}

// While the session is the engine's only one, the next pass is its alone: the next draft
// length is known now and the first drafter may start its device work (depth 2) before the
// host streams this pass's text.
void BatchEngine::prepare_next(Session& s) {
    if (active_.size() != 1 || !waiting_.empty() || s.chain.empty()) return;
    if (s.history.size() - s.n_kv != 1) return;  // the next pass is not a decode step
    s.next_k = decide_k(s);
    s.prepared = -1;
    if (s.next_k <= 0) return;
    ChainedDrafter* d = s.opener();
    if (!d) return;
    if (d->drafter->grows_trees() && tree_shape(s, s.next_k).nodes > 1) return;  // a tree is grown when asked
    const DraftRequest req{std::span<const int32_t>(s.history), s.pos(), uint32_t(s.next_k), s.slot->seq};
    if (auto p = d->drafter->prepare(req); !p.ok()) {
        s.turn_off(*d, p.error());
        return;
    }
    s.prepared = int(d - s.chain.data());
}

// ---------------------------------------------------------------- after the pass

bool BatchEngine::record(Session& s, int32_t tok, uint32_t logits_row) {
    s.result.tokens.push_back(tok);
    s.history.push_back(tok);
    s.fresh.emplace_back(tok, logits_row);
    ++s.result.spec.emitted;
    // Only a row the constraint masked to nothing (a constraint with no way on) gives a token
    // it refuses.
    if (s.constraint)
        if (Status st = s.constraint->advance(tok); !st.ok()) {
            // the refused token is not part of the output: nothing of it is streamed
            s.result.tokens.pop_back();
            s.history.pop_back();
            s.fresh.pop_back();
            --s.result.spec.emitted;
            s.result.stop_reason = StopReason::error;
            s.result.error = fmt::format("the output's constraint allows no token here: {}", st.error().message());
            return false;
        }
    if (const std::optional<StopReason> why = s.stop.check(tok)) {
        s.result.stop_reason = *why;
        return false;
    }
    if (s.constraint && s.constraint->complete()) {  // only an end-of-generation token could follow
        s.result.stop_reason = StopReason::constraint;
        return false;
    }
    const int32_t max = s.req.params.max_tokens;
    if (max >= 0 && s.result.tokens.size() >= size_t(max)) {
        s.result.stop_reason = StopReason::length;
        return false;
    }
    return true;
}

bool BatchEngine::deliver(Session& s, const ForwardOutput& out, uint32_t out0, bool first_row_sunk) {
    const uint32_t n_vocab = runner_.model().info().n_vocab;
    bool wanted = true;
    size_t i = 0;
    for (; i < s.fresh.size() && wanted; ++i) {
        const auto [tok, row] = s.fresh[i];
        const float* logits = out.logits ? out.logits + size_t(out0 + row) * n_vocab : nullptr;  // reads_logits()
        if (s.req.logits_sink && !(first_row_sunk && i == 0)) s.req.logits_sink(logits, n_vocab);
        const std::string piece = s.stream ? s.stream->push(tok) : std::string();
        std::optional<TokenLogprobs> lp;
        if (s.req.logprobs >= 0) lp = token_logprobs(logits, n_vocab, tok, uint32_t(s.req.logprobs));
        wanted = !s.req.on_token || s.req.on_token(tok, piece, lp ? &*lp : nullptr);
    }
    if (!wanted) {  // the tokens after the one refused never happened
        const size_t drop = s.fresh.size() - i;
        s.result.tokens.resize(s.result.tokens.size() - drop);
        s.history.resize(s.history.size() - drop);
        s.result.stop_reason = StopReason::cancelled;
    }
    s.fresh.clear();
    return wanted;
}

bool BatchEngine::after_chunk(Session& s) {
    if (s.req.on_progress) {
        const uint32_t total = uint32_t(s.history.size()) - s.n_cached_first;
        s.req.on_progress(std::min(s.n_kv - s.n_cached_first, total), total, steady_now_ms() - s.t_admitted);
    }
    if (s.req.on_prefix && s.result.tokens.empty() && s.n_kv == s.history.size() - 1)
        if (Status st = s.req.on_prefix(s.n_kv); !st.ok()) {
            finish(s, StopReason::error, st.error().message());
            return false;
        }
    return true;
}

// After the pass: the session's rows start at batch row row0 and its logits rows at out0.
// A prompt chunk before the last only fills the KV; the last one and every decode step
// end in a round (speculative/round.h), the prompt's with no drafts unless it was resumed.
void BatchEngine::settle(Session& s, const ForwardOutput& out, uint32_t row0, uint32_t out0, double pass_ms) {
    const double a0 = steady_now_ms();
    const bool first_token = s.result.tokens.empty();  // this pass ends the prompt
    const bool prompt_rows_sunk = s.req.logits_all && s.all_rows();  // the first token's row went to the sink too
    out0 = sink_prompt_logits(s, out, out0);
    if (s.n_kv + s.chunk < s.history.size()) return settle_chunk(s, out, row0);
    const uint32_t n_vocab = runner_.model().info().n_vocab;
    VerifyRows rows{out.logits ? out.logits + size_t(out0) * n_vocab : nullptr, out.argmax + out0, n_vocab};
    // with a constraint, greedy's argmax too is of the masked rows: the device's is not
    if (s.constraint)
        rows = s.masked.mask(rows, uint32_t(s.proposal.drafts.size()) + 1, *s.constraint, s.draft_states);
    const RoundResult round = verify(s.proposal, rows, *s.sampler, s.greedy, s.history);
    if (!keep_accepted(s, out, row0, round) || (first_token && !start_decoding(s))) return;
    count_round(s, round, first_token, pass_ms);
    const uint32_t pos = s.pos();
    bool running = commit(s, round, first_token);
    if (running) prepare_next(s);
    running = deliver(s, out, out0, prompt_rows_sunk) && running;
    end_round(s, round, first_token, pos, pass_ms, steady_now_ms() - a0, running);
}

uint32_t BatchEngine::sink_prompt_logits(Session& s, const ForwardOutput& out, uint32_t out0) {
    if (!s.all_rows()) return out0;
    const uint32_t n_vocab = runner_.model().info().n_vocab;
    const auto row = [&](uint32_t i) { return out.logits + size_t(out0 + i) * n_vocab; };
    if (s.req.logits_all && s.req.logits_sink)
        for (uint32_t i = 0; i < s.chunk; ++i) s.req.logits_sink(row(i), n_vocab);
    if (s.scores_prompt()) submit_prompt_rows(s, row(0), s.chunk);
    return out0 + s.chunk - 1;  // the chunk's last row: the first token's logits
}

void BatchEngine::show_target_rows(Session& s, const ForwardOutput& out, uint32_t row0, uint32_t first_pos,
                                   uint32_t n_rows, std::span<const uint32_t> tree_path) {
    if (!any_reads_hidden(s.chain) || !out.hidden) return;
    std::vector<int32_t> toks(s.history.begin() + first_pos, s.history.begin() + first_pos + s.chunk);
    const uint32_t n_embd = out.hidden_width;
    if (tree_path.size() > 1) {
        // a tree's accepted path: node i was row chunk - 1 + i of the session's rows
        std::vector<float> hidden(out.hidden + size_t(row0) * n_embd, out.hidden + size_t(row0 + s.chunk) * n_embd);
        for (size_t j = 1; j < tree_path.size(); ++j) {
            toks.push_back(s.proposal.drafts[tree_path[j] - 1]);
            const float* h = out.hidden + size_t(row0 + s.chunk - 1 + tree_path[j]) * n_embd;
            hidden.insert(hidden.end(), h, h + n_embd);
        }
        show_rows(s.chain, s.result.spec, {toks, first_pos, hidden.data(), n_embd});
        return;
    }
    toks.insert(toks.end(), s.proposal.drafts.begin(), s.proposal.drafts.begin() + (n_rows - s.chunk));
    // the device table holds the pass's rows (when it is short enough) until the next
    // pass, before which every session drafts
    const TargetRows rows{toks, first_pos, out.hidden + size_t(row0) * n_embd, n_embd, out.hidden_on_device, row0};
    show_rows(s.chain, s.result.spec, rows);
}

void BatchEngine::settle_chunk(Session& s, const ForwardOutput& out, uint32_t row0) {
    show_target_rows(s, out, row0, s.n_kv, s.chunk);
    s.n_kv += s.chunk;
    after_chunk(s);
}

bool BatchEngine::keep_accepted(Session& s, const ForwardOutput& out, uint32_t row0, const RoundResult& round) {
    const uint32_t first_pos = s.n_kv;
    s.n_kv = uint32_t(s.history.size()) + round.accepted;
    if (Status st = rollback(runner_.kv(), s.slot->seq, s.n_kv, round); !st.ok()) {
        finish(s, StopReason::error, st.error().message());
        return false;
    }
    show_target_rows(s, out, row0, first_pos, s.chunk + round.accepted, round.path);
    return true;
}

bool BatchEngine::start_decoding(Session& s) {
    s.t_first = steady_now_ms();
    if (!after_chunk(s)) return false;
    if (s.req.params.max_tokens == 0) {
        finish(s, StopReason::length);
        return false;
    }
    return true;
}

void BatchEngine::count_round(Session& s, const RoundResult& round, bool first_token, double pass_ms) {
    SpecStats& spec = s.result.spec;
    // the positions a tree reached (its depth) stand for a chain's drafts
    const uint32_t nd = s.proposal.tree() ? tree_of(s.proposal, 0).max_depth() : round.drafted, m = round.accepted;
    // the draft the constraint cut was rejected there, if the target took every draft before it
    if (s.cut_at >= 0 && uint32_t(s.cut_at) == nd && m == nd && s.proposal.winner >= 0)
        s.tune.observe_cut(s.chain[size_t(s.proposal.winner)].stat, s.cut_at);
    s.cut_at = -1;
    if (nd > 0) {
        tally(s.chain, spec, round, pass_ms);
        stats_.drafted += nd;
        stats_.accepted += m;
        if (stats_.drafted_at.size() < nd) {
            stats_.drafted_at.resize(nd);
            stats_.accepted_at.resize(nd);
        }
        for (uint32_t i = 0; i < nd; ++i) ++stats_.drafted_at[i];
        for (uint32_t i = 0; i < m; ++i) ++stats_.accepted_at[i];
        const size_t winner = s.chain[size_t(round.winner)].stat;
        if (s.proposal.tree())
            s.tune.observe_tree_round(winner, int(nd), int(s.proposal.drafts.size()) + 1, int(m), pass_ms);
        else
            s.tune.observe_round(winner, int(nd), int(m), s.draft_ms, pass_ms);
        if (s.tree_chosen)
            s.tree_choice.observe(s.proposal.tree(), uint32_t(s.proposal.drafts.size()) + 1, m + 1, pass_ms);
        s.zero_streak = m == 0 ? s.zero_streak + 1 : 0;
        if (s.req.spec.skip_streak > 0 && s.zero_streak >= s.req.spec.skip_streak) {
            s.skip_next = true;
            s.zero_streak = 0;
        }
    } else if (!first_token) {
        spec.plain_steps++;
        spec.plain_ms += pass_ms;
        s.tune.observe_plain(pass_ms, pass_sequences_ == 1);
    }
    if (s.req.spec.auto_k && log_level() <= LogLevel::debug) {  // what the controller now believes
        const GoodputController& c = s.tune.planner();
        TDM_LOG_DEBUG("spec", "sequence {} at {}: {} in {:.1f} ms; controller: p1 {:.3f}, plain {:.1f} ms, "
                      "miss cost {:.3f}, speedup(1) {:.3f}, {}", s.slot->seq, s.pos(),
                      nd > 0 ? fmt::format("{} of {} drafts accepted", m, nd) : std::string("plain step"), pass_ms,
                      c.acceptance_at(1), c.report().plain_ms, c.miss_cost(), c.predicted_speedup(1),
                      c.off() ? "off" : "on");
    }
}

bool BatchEngine::commit(Session& s, const RoundResult& round, bool first_token) {
    // the accepted drafts and the target's token (a stop may cut the round)
    bool running = true;
    for (uint32_t i = 0; i < round.accepted && running; ++i)
        running = record(s, accepted_draft(s.proposal, round, i), accepted_row(round, i));
    if (running) running = record(s, round.next, accepted_row(round, round.accepted));
    // The prompt's pass is no round (drafters hear of it at their first draft) unless it
    // carried drafts: a prompt resumed all but its last token drafts on that pass.
    if (!first_token || round.drafted > 0) accept(s.chain, s.result.spec, s.history, round);
    if (running && s.history.size() >= runner_.kv().capacity_tokens()) {
        s.result.stop_reason = StopReason::context;
        running = false;
    }
    return running;
}

void BatchEngine::end_round(Session& s, const RoundResult& round, bool first_token, uint32_t pos, double pass_ms,
                            double accept_ms, bool running) {
    if (!first_token) {
        s.result.spec.accept_ms += accept_ms;
        if (round.drafted == 0) s.result.spec.plain_accept_ms += accept_ms;
    }
    if (s.req.on_round && !first_token) {
        RoundRecord r;
        r.round = s.rounds;
        r.pos = pos;
        r.drafter = round.winner >= 0 ? s.chain[size_t(round.winner)].drafter->name() : std::string();
        r.k = s.k;
        r.drafted = s.proposal.drafts;
        r.parents = s.proposal.parents;
        if (s.tree_chosen) r.tree_choice = s.proposal.tree() ? "tree" : "chain";
        r.accepted = round.accepted;
        r.next = round.next;
        r.draft_ms = s.draft_ms;
        r.verify_ms = pass_ms;
        r.accept_ms = accept_ms;
        if (s.req.spec.auto_k) {
            r.controller = true;
            r.drafting_off = s.tune.off();
            r.estimated_speedup = s.tune.predicted_speedup(std::max(1, s.k));
        }
        s.req.on_round(r);
    }
    if (!first_token) ++s.rounds;
    if (!running) finish(s, s.result.stop_reason, s.result.error);
}

}  // namespace tdm
