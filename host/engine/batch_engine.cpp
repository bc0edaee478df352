// SPDX-License-Identifier: Apache-2.0
// host/engine/batch_engine.cpp: sessions and slots (admission, prefix reuse, preemption,
// the end of a session) and the step: who runs, the pass over their rows. What happens to
// one session's rows is batch_session.cpp.
#include "engine/batch_engine.h"

#include <algorithm>

#include "common/log.h"
#include "engine/batch_session.h"
#include "engine/continuation.h"

namespace tdm {
namespace {

uint32_t blocks_for(uint32_t tokens, uint32_t block_size) { return (tokens + block_size - 1) / block_size; }

// Prompt rows a prefilling session gets in a pass even when decode rows fill the budget.
constexpr uint32_t kMinPrefillRows = 16;
// Prompt rows per pass of a session whose prompt logprobs are due: every row's logits come
// back (rows x vocabulary floats), 39 MB here with a 152k vocabulary where a 512-row chunk
// would take 311 MB.
constexpr uint32_t kScoredPromptRows = 64;

}  // namespace

BatchEngine::BatchEngine(Runner& runner, const Tokenizer* tokenizer, BatchEngineOptions options)
    : runner_(runner), tokenizer_(tokenizer), options_(std::move(options)) {}

BatchEngine::~BatchEngine() {
    for (auto& s : active_)
        for (const ChainedDrafter& d : s->chain)
            if (d.on) d.drafter->cancel();
}

Result<std::unique_ptr<BatchEngine>> BatchEngine::create(Runner& runner, const Tokenizer* tokenizer,
                                                         BatchEngineOptions options,
                                                         std::vector<Drafter*> shared_drafters) {
    std::unique_ptr<BatchEngine> e(new BatchEngine(runner, tokenizer, std::move(options)));
    KvPool& kv = runner.kv();
    if (e->options_.seqs.empty()) {
        while (true) {
            auto seq = kv.add_sequence();
            if (!seq.ok()) break;
            e->slots_.push_back(Slot{*seq});
        }
    } else {
        for (int seq : e->options_.seqs) e->slots_.push_back(Slot{seq});
    }
    if (e->slots_.empty()) return Error("the KV pool has no free sequence slot");
    if (!runner.model().batches_sequences() && e->slots_.size() > 1)
        TDM_LOG_INFO("serve", "the {} model's plugin batches one sequence per pass (no TDM_MODEL_BATCHED_STATES): "
                              "requests take turns",
                     runner.model().arch().desc->name);
    tdm_hidden_point hp = e->options_.hidden_point;
    for (Drafter* d : shared_drafters) {
        const tdm_hidden_point h = d->hidden_point();
        if (h == TDM_HIDDEN_NONE) continue;
        if (hp != TDM_HIDDEN_NONE && h != hp)
            return Error("the drafters of this chain read different target hidden states (pre- and post-norm)");
        hp = h;
    }
    runner.set_hidden_point(hp);
    e->hidden_point_ = hp;
    e->shared_ = std::move(shared_drafters);
    e->shared_user_.assign(e->shared_.size(), nullptr);
    e->shared_slot_.assign(e->shared_.size(), -1);
    if (e->options_.n_batch == 0) e->options_.n_batch = 256;
    // sliding-window rings hold window + rows_max - 1 positions: chunks stay within rows_max
    if (kv.has_rings()) e->options_.n_batch = std::min(e->options_.n_batch, kv.config().rows_max);
    e->options_.max_batch_rows = std::max(e->options_.max_batch_rows, 1u);
    return e;
}

uint32_t BatchEngine::kv_blocks_free() const { return runner_.kv().free_blocks(); }
uint32_t BatchEngine::kv_blocks_total() const { return runner_.kv().n_blocks(); }
uint32_t BatchEngine::kv_blocks_shared() const { return runner_.kv().shared_blocks(); }

void BatchEngine::add(SessionRequest request) {
    auto s = std::make_unique<Session>();
    s->history = request.prompt;
    s->req = std::move(request);
    s->result.n_prompt = uint32_t(s->history.size());
    waiting_.push_back(std::move(s));
}

void BatchEngine::assume_slot_holds(int seq, std::span<const int32_t> tokens) {
    for (size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].seq != seq || slots_[i].user) continue;
        slots_[i].tokens.assign(tokens.begin(), tokens.end());
        for (int& followed : shared_slot_) followed = int(i);
    }
}

// ---------------------------------------------------------------- admission

BatchEngine::Slot* BatchEngine::choose_slot(const Session& s, uint32_t* n_cached) {
    Slot* best = nullptr;
    uint32_t best_len = 0;
    for (Slot& slot : slots_) {
        if (slot.user) continue;
        // only the text before a first image row may be resumed: ask about that prefix alone
        // (resumable_prefix keeps the last token of what it is given to be run)
        const std::span<const int32_t> text =
            std::span<const int32_t>(s.history).first(std::min<size_t>(s.history.size(), size_t(text_prefix(s)) + 1));
        uint32_t len = reuse(s) ? resumable_prefix(runner_.kv(), slot.seq, slot.tokens, text) : 0;
        if (!heads_resume(s, &slot, len)) len = 0;
        // the longest shared prefix; among equals the slot idle longest (least to lose)
        if (!best || len > best_len || (len == best_len && slot.last_used < best->last_used)) {
            best = &slot;
            best_len = len;
        }
    }
    *n_cached = best_len;
    return best;
}

bool BatchEngine::heads_resume(const Session& s, const Slot* slot, uint32_t n_cached) const {
    for (const DrafterSlot& ds : s.req.drafters) {
        const Drafter* d = ds.owned.get();
        if (!n_cached || !d || d->hidden_point() == TDM_HIDDEN_NONE || d->can_resume(n_cached)) continue;
        const bool kept = slot && std::any_of(slot->kept.begin(), slot->kept.end(), [&](const auto& k) {
            return k && k->name() == d->name() && k->hidden_point() == d->hidden_point() && k->can_resume(n_cached);
        });
        if (!kept) return false;
    }
    return true;
}

std::span<const int32_t> BatchEngine::kv_tokens(const Slot& slot) const {
    if (!slot.user) return slot.tokens;
    const Session& s = *slot.user;
    return std::span<const int32_t>(s.history).first(std::min<size_t>({s.n_kv, s.history.size(), text_prefix(s)}));
}

bool BatchEngine::reuse(const Session& s) const { return options_.reuse_slots && !s.scores_prompt(); }

uint32_t BatchEngine::text_prefix(const Session& s) {
    return s.req.images ? s.req.images->first_row() : UINT32_MAX;
}

// Frees blocks held by idle slots other than `keep` (least recently used first) until
// `blocks` are free.
bool BatchEngine::make_room(uint32_t blocks, const Slot* keep) {
    KvPool& kv = runner_.kv();
    while (kv.free_blocks() < blocks) {
        Slot* victim = nullptr;
        for (Slot& slot : slots_)
            if (!slot.user && kv.reserved_tokens(slot.seq) > 0 && &slot != keep &&
                (!victim || slot.last_used < victim->last_used))
                victim = &slot;
        if (!victim) return false;
        victim->tokens.clear();
        (void)kv.truncate(victim->seq, 0);  // to length 0 always succeeds
    }
    return true;
}

bool BatchEngine::admit(std::unique_ptr<Session>& sp) {
    Session& s = *sp;
    KvPool& kv = runner_.kv();
    const uint32_t capacity = kv.capacity_tokens();
    if (s.history.empty() || s.history.size() >= capacity) {
        finish(s, StopReason::error,
               s.history.empty() ? "the prompt is empty: at least one token is needed"
                                 : fmt::format("the prompt has {} tokens but the context holds {} (raise -c/--ctx-size)",
                                               s.history.size(), capacity));
        return true;
    }
    if (!s.sampler) {  // first admission (a preempted session keeps its sampler, RNG and stream)
        auto sampler = Sampler::create(s.req.params.sampling);
        if (!sampler.ok()) {
            finish(s, StopReason::error, sampler.error().message());
            return true;
        }
        const uint32_t n_vocab = runner_.model().info().n_vocab;
        for (const TokenBias& b : s.req.params.sampling.logit_bias)
            if (uint32_t(b.token) >= n_vocab) {
                finish(s, StopReason::error,
                       fmt::format("logit_bias names token {}, outside the vocabulary of {} tokens", b.token, n_vocab));
                return true;
            }
        s.sampler.emplace(std::move(*sampler));
        s.sampler->set_prompt_length(s.req.prompt.size());  // penalties count the output only
        // bias and penalties move the argmax: greedy rounds then use the host's exact one
        s.greedy = argmax_of_raw_logits(s.req.params.sampling);
        if (tokenizer_) s.stream.emplace(*tokenizer_);
        s.stop = StopRule{tokenizer_, s.req.params.ignore_eog, s.req.params.stop_tokens};
        if (s.req.params.constraint) s.constraint = s.req.params.constraint->clone();
        // a controller per drafter, each of its kind, once the chain is built (start_drafters)
        s.tune = ChainGoodput(std::max(1, s.req.spec.draft_max), &history_of(s));
        // trees by measurement under the goodput controller; with fixed k, whenever asked for
        s.tree_choice = TreeChoice(runner_.device().caps().is_cpu(), !s.req.spec.auto_k);
        s.result.stop_reason = StopReason::length;
        if (const PromptImages* im = s.req.images.get(); im && !im->images().empty()) {
            const auto& last = im->images().back();
            if (last.first + last.encoded.n_rows > s.req.prompt.size() || im->n_embd() != runner_.model().info().n_embd) {
                finish(s, StopReason::error, "the prompt's images do not fit its tokens or the model's embeddings");
                return true;
            }
            if (s.req.on_prefix) {  // a saved prefix is token ids, which do not say which image
                finish(s, StopReason::error, "a prompt cache keeps token ids, not image rows: it cannot save a prompt with images");
                return true;
            }
        }
    }
    uint32_t n_cached = 0;
    Slot* slot = choose_slot(s, &n_cached);
    if (!slot) return false;
    const uint32_t bs = kv.config().block_size;
    const uint32_t whole = blocks_for(uint32_t(s.history.size()), bs);
    if (whole > kv.n_blocks()) {
        finish(s, StopReason::error,
               fmt::format("the prompt needs {} KV blocks of {} tokens and the whole pool has {} (raise [model] "
                           "kv_memory)",
                           whole, bs, kv.n_blocks()));
        return true;
    }
    // The slot keeps its prefix and its blocks past it go back; then the whole prompt is
    // reserved, so that the sessions admitted after this one see what is really left.
    if (!kv.truncate(slot->seq, n_cached).ok()) {
        n_cached = 0;
        (void)kv.truncate(slot->seq, 0);
    }
    slot->tokens.resize(n_cached);
    // Another slot, busy or idle, may hold a longer prefix: share its whole blocks
    // (copy-on-write) rather than compute them again.
    if (reuse(s) && kv.can_share()) {
        const Slot* src = nullptr;
        uint32_t best = n_cached;
        // the last prompt token is always run; image rows are never shared (see SessionRequest)
        const uint32_t cap = std::min(uint32_t(s.history.size()) - 1, text_prefix(s));
        for (const Slot& other : slots_) {
            if (&other == slot) continue;
            const uint32_t m = std::min(shared_prefix(kv_tokens(other), s.history), cap) / bs * bs;
            if (m > best && heads_resume(s, nullptr, m)) {  // no head of its own saw another slot's rows
                best = m;
                src = &other;
            }
        }
        if (src) {
            (void)kv.truncate(slot->seq, 0);
            auto m = kv.share_prefix(src->seq, slot->seq, best);
            n_cached = m.ok() ? *m : 0;
            slot->tokens.assign(s.history.begin(), s.history.begin() + n_cached);
            if (n_cached) ++stats_.shared_prefixes;
            // what a shared drafter knew of this slot is gone
            const int slot_index = int(slot - slots_.data());
            for (int& followed : shared_slot_)
                if (followed == slot_index) followed = -1;
        }
    }
    const uint32_t held = kv.reserved_tokens(slot->seq) / bs;
    // a kept block shared with another slot is copied before the prompt writes into it
    const uint32_t copies = kv.copies_needed(slot->seq, n_cached, uint32_t(s.history.size()) - 1);
    if (!make_room((whole > held ? whole - held : 0) + copies, slot) ||
        !kv.reserve(slot->seq, uint32_t(s.history.size())).ok())
        return false;  // the running sessions hold the pool: wait for one to end
    slot->user = &s;
    slot->last_used = ++clock_;
    s.slot = slot;
    s.n_kv = n_cached;
    s.admitted_at = clock_;
    if (!s.result.admitted) {
        s.result.admitted = true;
        s.result.n_cached = n_cached;
        s.n_cached_first = n_cached;
        s.t_admitted = steady_now_ms();
    }
    if (n_cached) {
        ++stats_.prefix_hits;
        stats_.cached_tokens += n_cached;
    }
    start_drafters(s, *slot, n_cached);
    return true;
}

void BatchEngine::start_drafters(Session& s, Slot& slot, uint32_t n_cached) {
    s.chain.clear();
    s.next_k = s.prepared = -1;
    // A resumed prompt: the request's own fresh drafters fed by hidden rows cannot resume
    // it; the slot's kept ones of the same kind (one head's sequences) can. The rest of the
    // kept ones go now, giving their sequences back before the fresh ones begin.
    {
        std::vector<std::unique_ptr<Drafter>> kept = std::move(slot.kept);
        slot.kept.clear();
        for (DrafterSlot& ds : s.req.drafters) {
            Drafter* d = ds.owned.get();
            if (!n_cached || !d || d->hidden_point() == TDM_HIDDEN_NONE || d->can_resume(n_cached)) continue;
            for (auto& k : kept)
                if (k && k->name() == d->name() && k->hidden_point() == d->hidden_point() &&
                    k->can_resume(n_cached)) {
                    std::swap(ds.owned, k);
                    break;
                }
        }
    }
    const int slot_index = int(&slot - slots_.data());
    // A shared drafter follows the slot it last served only while nobody else writes it.
    const auto forget_slot = [&] {
        for (size_t i = 0; i < shared_.size(); ++i)
            if (shared_slot_[i] == slot_index && shared_user_[i] != &s) shared_slot_[i] = -1;
    };
    for (DrafterSlot& ds : s.req.drafters) {
        Drafter* d = ds.get();
        if (!d) continue;
        int si = -1;
        if (!ds.owned) {
            auto it = std::find(shared_.begin(), shared_.end(), d);
            if (it == shared_.end()) continue;
            si = int(it - shared_.begin());
            if (shared_user_[size_t(si)]) continue;  // another session holds it
            // a head fed by the target's hidden rows knows only the rows it was shown
            const bool follows_slot = shared_slot_[size_t(si)] == slot_index;
            const bool fed_rows = d->hidden_point() != TDM_HIDDEN_NONE;
            if (n_cached && ((fed_rows && !follows_slot) || !d->can_resume(n_cached))) continue;
            shared_user_[size_t(si)] = &s;
            shared_slot_[size_t(si)] = slot_index;
        } else if (d->hidden_point() != TDM_HIDDEN_NONE && d->hidden_point() != hidden_point_) {
            continue;  // the runner's hidden point is fixed by the shared drafters
        }
        // its statistics carry over a preemption
        auto known = std::find(s.stat_drafters.begin(), s.stat_drafters.end(), d);
        if (known == s.stat_drafters.end()) {
            s.stat_drafters.push_back(d);
            s.result.spec.drafters.push_back({d->name()});
            known = s.stat_drafters.end() - 1;
        }
        ChainedDrafter& link = s.chain.emplace_back(
            ChainedDrafter{.drafter = d, .on = true, .stat = size_t(known - s.stat_drafters.begin()), .shared = si});
        const double t0 = steady_now_ms();
        const Status b = n_cached ? d->resume(s.history, n_cached) : d->begin(s.history);
        DrafterStats& st = s.stats_of(link);
        st.calls_begin++;
        st.dur_begin_ms += steady_now_ms() - t0;
        if (!b.ok()) s.turn_off(link, b.error());
    }
    forget_slot();
    s.tune.meet(s.chain);
}

void BatchEngine::preempt(Session& s) {
    for (const ChainedDrafter& d : s.chain) {
        if (d.on) d.drafter->cancel();
        if (d.shared >= 0) shared_user_[size_t(d.shared)] = nullptr;
    }
    s.chain.clear();
    s.next_k = s.prepared = -1;
    (void)runner_.kv().truncate(s.slot->seq, 0);
    s.slot->tokens.clear();
    s.slot->user = nullptr;
    s.slot = nullptr;
    s.n_kv = 0;
    ++s.result.preempted;
    ++stats_.preemptions;
    TDM_LOG_INFO("serve", "KV pool full: a session of {} tokens gives its blocks back and will recompute them",
                 s.history.size());
    auto it = std::find_if(active_.begin(), active_.end(), [&](const auto& p) { return p.get() == &s; });
    waiting_.push_front(std::move(*it));
    active_.erase(it);
}

void BatchEngine::finish(Session& s, StopReason reason, std::string error) {
    if (s.done) return;
    s.done = true;
    if (scorer_) scorer_->forget(&s);  // scores still due are no one's now
    if (s.req.spec.auto_k && !s.chain.empty()) {
        s.result.spec.controller = s.tune.report();
        s.tune.teach(history_of(s));
    }
    const double now = steady_now_ms();
    // a first token means a finished prefill, even if a preemption gave its KV back since
    s.result.n_prompt_done = s.t_first != 0 ? s.result.n_prompt : std::min(s.n_kv, s.result.n_prompt);
    for (ChainedDrafter& d : s.chain) {
        if (d.on) {
            d.drafter->cancel();
            // Finishing saves drafter state (an n-gram cache file). A failure there is
            // reported, but the tokens are kept: they are already exact.
            if (auto f = d.drafter->finish(); !f.ok()) {
                s.stats_of(d).failure = f.error().message();
                TDM_LOG_WARN("spec", "drafter {}: {}", d.drafter->name(), f.error().message());
            }
        }
        if (d.shared >= 0) shared_user_[size_t(d.shared)] = nullptr;
    }
    if (s.stream && s.req.on_token) {
        const std::string tail = s.stream->flush();
        if (!tail.empty()) s.req.on_token(-1, tail, nullptr);
    }
    if (Slot* slot = s.slot) {
        // The KV keeps what the history says, up to all but the last token generated (a
        // stop inside a round leaves accepted rows past it); nothing after an error.
        const uint32_t want = uint32_t(s.history.size()) - (s.result.tokens.empty() ? 0 : 1);
        uint32_t keep = error.empty() ? std::min({s.n_kv, want, text_prefix(s)}) : 0;
        if (!runner_.kv().truncate(slot->seq, keep).ok()) {
            keep = 0;
            (void)runner_.kv().truncate(slot->seq, 0);
        }
        slot->tokens.assign(s.history.begin(), s.history.begin() + keep);
        slot->kept.clear();
        if (keep > 0)
            for (ChainedDrafter& d : s.chain) {
                if (!d.on || d.drafter->hidden_point() == TDM_HIDDEN_NONE) continue;
                for (DrafterSlot& ds : s.req.drafters)
                    if (ds.owned && ds.owned.get() == d.drafter) {
                        slot->kept.push_back(std::move(ds.owned));
                        d.on = false;  // no longer the session's
                    }
            }
        slot->user = nullptr;
        slot->last_used = ++clock_;
        s.slot = nullptr;
        s.result.n_kv = keep;
    }
    if (s.result.admitted) {
        if (s.t_first == 0) {
            s.result.prefill_ms = now - s.t_admitted;
        } else {
            s.result.prefill_ms = s.t_first - s.t_admitted;
            s.result.decode_ms = now - s.t_first;
        }
    }
    s.result.stop_reason = reason;
    s.result.error = std::move(error);
    if (s.req.on_done) s.req.on_done(s.result);
}

GoodputHistory& BatchEngine::history_of(const Session& s) {
    return s.req.spec.history ? *s.req.spec.history : history_;
}

void BatchEngine::refuse_stuck(std::string why) {
    std::unique_ptr<Session> s = std::move(waiting_.front());
    waiting_.pop_front();
    finish(*s, StopReason::error, std::move(why));
}

void BatchEngine::abort_all(const std::string& error) {
    for (auto& s : active_) finish(*s, StopReason::error, error);
    for (auto& s : waiting_) finish(*s, StopReason::error, error);
    active_.clear();
    waiting_.clear();
}

// ---------------------------------------------------------------- one pass

// The pass's tree rows (graph/graph.h, KvTreeRow) when a session verifies a tree: its first
// token and drafts; every other row ordinary. Empty when none does.
std::vector<KvTreeRow> BatchEngine::kv_tree_rows(std::span<Session* const> run, std::span<const uint32_t> row0,
                                                 size_t n_rows) {
    std::vector<KvTreeRow> rows;
    for (size_t j = 0; j < run.size(); ++j) {
        const Session& s = *run[j];
        if (!s.proposal.tree()) continue;
        rows.resize(n_rows);
        const DraftTree tree = tree_of(s.proposal, s.history.back());
        const uint32_t root = row0[j] + s.chunk - 1;
        for (uint32_t i = 0; i < tree.size(); ++i) rows[root + i] = {int32_t(s.pos()), tree.ancestors(i)};
    }
    return rows;
}

bool BatchEngine::pass(std::span<Session* const> run, bool device_rows) {
    std::vector<int32_t> tokens, positions, seqs, outputs;
    std::vector<uint32_t> row0, out0;
    for (Session* s : run) {
        row0.push_back(uint32_t(tokens.size()));
        out0.push_back(uint32_t(outputs.size()));
        const bool final_chunk = s->n_kv + s->chunk == s->history.size();
        const bool all_rows = s->all_rows();
        for (uint32_t i = 0; i < s->chunk; ++i) {
            tokens.push_back(s->history[s->n_kv + i]);
            positions.push_back(int32_t(s->n_kv + i));
            seqs.push_back(s->slot->seq);
            if (all_rows && i + 1 < s->chunk) outputs.push_back(int32_t(tokens.size() - 1));
        }
        if (final_chunk || all_rows) outputs.push_back(int32_t(tokens.size() - 1));
        // draft i is node i + 1, at its depth past the round's first token (a chain's: i + 1)
        const std::optional<DraftTree> tree =
            s->proposal.tree() ? std::optional(tree_of(s->proposal, s->history.back())) : std::nullopt;
        for (size_t i = 0; i < s->proposal.drafts.size(); ++i) {
            tokens.push_back(s->proposal.drafts[i]);
            positions.push_back(int32_t(s->pos() + (tree ? tree->depth(uint32_t(i + 1)) : uint32_t(i + 1))));
            seqs.push_back(s->slot->seq);
            outputs.push_back(int32_t(tokens.size() - 1));
        }
    }
    const std::vector<KvTreeRow> tree_rows = kv_tree_rows(run, row0, tokens.size());
    // images: every row's rotary position, and the rows that replace embeddings
    std::vector<int32_t> positions4;
    std::vector<const float*> image_rows;
    bool any_rows = false;
    for (Session* s : run)
        if (s->req.images) {
            positions4.resize(tokens.size() * 4);
            image_rows.assign(tokens.size(), nullptr);
            break;
        }
    if (!positions4.empty())
        for (size_t j = 0; j < run.size(); ++j) {
            const Session& s = *run[j];
            const uint32_t end = j + 1 < run.size() ? row0[j + 1] : uint32_t(tokens.size());
            for (uint32_t r = row0[j]; r < end; ++r) {
                const uint32_t at = uint32_t(positions[r]);
                const std::array<int32_t, 4> p4 =
                    s.req.images ? s.req.images->position4(at) : std::array<int32_t, 4>{int32_t(at), int32_t(at), int32_t(at), 0};
                std::copy(p4.begin(), p4.end(), positions4.begin() + r * 4);
                // drafts sit past the prompt, where no image is
                if (s.req.images && r < row0[j] + s.chunk && (image_rows[r] = s.req.images->row(at))) any_rows = true;
            }
        }
    if (!any_rows) image_rows.clear();
    if (outputs.empty()) outputs.push_back(int32_t(tokens.size() - 1));  // middle chunks only: unused
    const double t0 = steady_now_ms();
    ForwardInput in{tokens, positions, run.front()->slot->seq, outputs, seqs, positions4, image_rows, tree_rows};
    in.read_logits = std::any_of(run.begin(), run.end(), [](const Session* s) { return s->reads_logits(); });
    auto out = runner_.forward(in);
    const double pass_ms = steady_now_ms() - t0;
    if (out.ok()) cost_.observe(uint32_t(tokens.size()), uint32_t(outputs.size()), pass_ms);
    ++stats_.steps;
    stats_.rows += tokens.size();
    if (log_level() <= LogLevel::debug) {  // one line per pass: what a slow pass carried
        size_t drafts = 0;
        for (const Session* s : run) drafts += s->proposal.drafts.size();
        TDM_LOG_DEBUG("serve", "pass {}: {} rows of {} sequences ({} drafts), {} outputs, {:.1f} ms", stats_.steps,
                      tokens.size(), run.size(), drafts, outputs.size(), pass_ms);
    }
    if (!out.ok()) {
        TDM_LOG_ERROR("serve", "a forward pass of {} rows of {} sessions failed: {}", tokens.size(), run.size(),
                      out.error().message());
        if (run.size() == 1) finish(*run.front(), StopReason::error, out.error().message());
        return false;
    }
    if (!device_rows) out->hidden_on_device = nullptr;
    pass_sequences_ = run.size();
    for (size_t i = 0; i < run.size(); ++i) settle(*run[i], *out, row0[i], out0[i], pass_ms);
    return true;
}

bool BatchEngine::step() {
    take_prompt_scores();
    // sessions cancelled from outside end now; waiting ones never start
    for (auto& s : active_)
        if (s->req.cancel && s->req.cancel->load()) finish(*s, StopReason::cancelled);
    for (auto& s : waiting_)
        if (s->req.cancel && s->req.cancel->load()) finish(*s, StopReason::cancelled);
    std::erase_if(active_, [](const auto& s) { return s->done; });
    std::erase_if(waiting_, [](const auto& s) { return s->done; });

    while (!waiting_.empty() && active_.size() < slots_.size()) {
        if (!admit(waiting_.front())) {
            // nothing runs that could give blocks back: it would wait for ever
            if (active_.empty())
                refuse_stuck(fmt::format("the KV pool of {} blocks ({} free) cannot hold a prompt of {} tokens "
                                         "(raise [model] kv_memory or lower -c/--ctx-size)",
                                         runner_.kv().n_blocks(), runner_.kv().free_blocks(),
                                         waiting_.front()->history.size()));
            break;
        }
        std::unique_ptr<Session> s = std::move(waiting_.front());
        waiting_.pop_front();
        if (!s->done) active_.push_back(std::move(s));
    }
    if (active_.empty()) return !waiting_.empty();

    // every session runs in every pass, or they take turns
    std::vector<Session*> part;
    if (runner_.model().batches_sequences()) {
        for (auto& s : active_)
            if (!awaits_scores(*s)) part.push_back(s.get());
    } else {
        for (size_t n = 0; n < active_.size() && part.empty(); ++n)
            if (Session* s = active_[next_single_++ % active_.size()].get(); !awaits_scores(*s)) part.push_back(s);
    }
    if (part.empty()) {  // every session waits for its prompt's scores: nothing else to do
        scorer_->wait_for_one();
        return true;
    }
    plan_drafts(part);
    KvPool& kv = runner_.kv();
    const uint32_t bs = kv.config().block_size;
    uint32_t rows = 0;
    std::vector<Session*> run;
    // each session's rows: a decode step (with its k drafts) or a chunk of its prompt
    for (Session* s : part) {
        const uint32_t remaining = uint32_t(s->history.size()) - s->n_kv;
        s->proposal = {};
        s->k = 0;
        s->draft_ms = 0;  // draft() times a session that drafts this pass
        if (remaining == 1) {
            s->chunk = 1;
            s->k = pass_k(*s);
        } else {
            // A recompute after preemption stops one row short: its next token then comes
            // from a decode step with drafts, as it would have without the preemption.
            s->chunk = std::min(remaining - (s->result.tokens.empty() ? 0 : 1), options_.n_batch);
            if (s->scores_prompt()) {
                s->chunk = std::min(s->chunk, kScoredPromptRows);
                // its last token runs alone, once every row before it is scored: the first
                // token then follows the prompt's logprobs without this thread waiting
                s->chunk = std::min(s->chunk, uint32_t(s->history.size()) - 1 - s->n_kv);
            }
            // the prompt cache's pause: the KV then holds all of the prompt but its last token
            const uint32_t pause = uint32_t(s->history.size()) - 1;
            if (s->req.on_prefix && s->result.tokens.empty() && s->n_kv < pause)
                s->chunk = std::min(s->chunk, pause - s->n_kv);
        }
    }
    prepare_batches(part);
    for (Session* s : part) {
        if (s->done || !s->slot) continue;  // preempted for an earlier session of this pass
        if (s->k > 0) s->proposal = draft(*s, s->k);
        // past the row budget a prompt still advances by a few rows
        if (s->chunk > 1 && rows + s->chunk > options_.max_batch_rows)
            s->chunk = std::min(s->chunk, std::max(kMinPrefillRows, options_.max_batch_rows -
                                                                         std::min(rows, options_.max_batch_rows)));
        const uint32_t end = s->n_kv + s->chunk + uint32_t(s->proposal.drafts.size());
        // room in the pool: idle slots first, then the newest session gives its blocks back
        bool fits = false;
        while (!fits) {
            const uint32_t held = kv.reserved_tokens(s->slot->seq) / bs;
            const uint32_t need = (blocks_for(end, bs) > held ? blocks_for(end, bs) - held : 0) +
                                  kv.copies_needed(s->slot->seq, s->n_kv, end - 1);
            if (make_room(need, s->slot)) {
                fits = kv.reserve(s->slot->seq, end).ok();
                if (fits) break;
            }
            Session* victim = active_.back().get();
            if (victim == s) {
                if (active_.size() == 1) {
                    finish(*s, StopReason::error,
                           fmt::format("the KV pool of {} blocks cannot hold {} tokens (raise [model] kv_memory)",
                                       kv.n_blocks(), end));
                } else {
                    preempt(*s);
                }
                break;
            }
            const bool ran = std::find(run.begin(), run.end(), victim) != run.end();
            if (ran) {  // its blocks are spoken for in this pass: drop it from the pass too
                std::erase(run, victim);
                rows -= victim->chunk + uint32_t(victim->proposal.drafts.size());
            }
            preempt(*victim);
        }
        if (!fits) continue;
        run.push_back(s);
        rows += s->chunk + uint32_t(s->proposal.drafts.size());
    }
    share_draft_time(run);  // before the sessions that ended are dropped: batches may hold them
    std::erase_if(active_, [](const auto& s) { return s->done; });
    if (run.empty()) return true;

    // One pass over them all. A failure may come from one session's rows (non-finite
    // logits, a refusal of its batch): then each runs alone, and only the failing one ends.
    if (!pass(run) && run.size() > 1) {
        ++stats_.failed_passes;
        for (Session* s : run) pass(std::span<Session* const>(&s, 1), /*device_rows=*/false);
    }
    std::erase_if(active_, [](const auto& s) { return s->done; });
    return true;
}

}  // namespace tdm
