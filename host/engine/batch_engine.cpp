// SPDX-License-Identifier: Apache-2.0
// host/engine/batch_engine.cpp
#include "engine/batch_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "common/log.h"
#include "engine/continuation.h"
#include "speculative/batch_budget.h"

namespace tdm {
namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint32_t blocks_for(uint32_t tokens, uint32_t block_size) { return (tokens + block_size - 1) / block_size; }

// Prompt rows a prefilling session gets in a pass even when decode rows fill the budget.
constexpr uint32_t kMinPrefillRows = 16;
// Passes a session the draft budget gives nothing waits before it drafts one token.
constexpr int kProbeInterval = 24;

}  // namespace

struct BatchEngine::Session {
    SessionRequest req;
    std::vector<int32_t> history;  // prompt + emitted; history.back() is not in the KV yet
    uint32_t n_kv = 0;             // tokens of history whose rows are in the slot's KV
    Slot* slot = nullptr;
    uint64_t admitted_at = 0;
    std::optional<Sampler> sampler;
    bool greedy = true;
    std::optional<StreamDecoder> stream;
    StopRule stop;
    // the chain this admission uses: drafters, whether each is still on, and for shared
    // ones their index in shared_ (-1: the session's own)
    std::vector<Drafter*> chain;
    std::vector<char> on;
    std::vector<int> shared_index;
    AutoTune tune{1};
    int planned_k = -1;              // this pass's drafts from plan_drafts(); -1: its own choice
    int starved = 0;                 // passes in a row plan_drafts() gave it nothing
    double draft_ms_per_token = 0;   // EMA
    int zero_streak = 0;
    bool skip_next = false;
    bool done = false;
    SessionResult result;
    // this pass
    std::vector<int32_t> drafts;
    int winner = -1;
    double draft_ms = 0;
    uint32_t chunk = 0;  // history rows in the pass (drafts not counted)

    uint32_t pos() const { return uint32_t(history.size()) - 1; }  // of history.back()

    void turn_off(size_t i, const Error& e) {
        if (!on[i]) return;
        on[i] = 0;
        TDM_LOG_WARN("serve", "drafter {} failed and is off for the rest of this request (the output is unchanged): {}",
                     chain[i]->name(), e.message());
    }
};

BatchEngine::BatchEngine(Runner& runner, const Tokenizer* tokenizer, BatchEngineOptions options)
    : runner_(runner), tokenizer_(tokenizer), options_(options) {}

BatchEngine::~BatchEngine() {
    for (auto& s : active_)
        for (size_t i = 0; i < s->chain.size(); ++i)
            if (s->on[i]) s->chain[i]->cancel();
}

Result<std::unique_ptr<BatchEngine>> BatchEngine::create(Runner& runner, const Tokenizer* tokenizer,
                                                         BatchEngineOptions options,
                                                         std::vector<Drafter*> shared_drafters) {
    std::unique_ptr<BatchEngine> e(new BatchEngine(runner, tokenizer, options));
    KvPool& kv = runner.kv();
    while (true) {
        auto seq = kv.add_sequence();
        if (!seq.ok()) break;
        Slot slot;
        slot.seq = *seq;
        e->slots_.push_back(std::move(slot));
    }
    if (e->slots_.empty()) return Error("the KV pool has no free sequence slot");
    e->multi_seq_ = kv.n_states() == 0;
    tdm_hidden_point hp = TDM_HIDDEN_NONE;
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

// ---------------------------------------------------------------- admission

BatchEngine::Slot* BatchEngine::choose_slot(const Session& s, uint32_t* n_cached) {
    Slot* best = nullptr;
    uint32_t best_len = 0;
    for (Slot& slot : slots_) {
        if (slot.user) continue;
        const uint32_t len = options_.reuse_slots ? resumable_prefix(runner_.kv(), slot.seq, slot.tokens, s.history) : 0;
        // the longest shared prefix; among equals the slot idle longest (least to lose)
        if (!best || len > best_len || (len == best_len && slot.last_used < best->last_used)) {
            best = &slot;
            best_len = len;
        }
    }
    *n_cached = best_len;
    return best;
}

std::span<const int32_t> BatchEngine::kv_tokens(const Slot& slot) const {
    if (!slot.user) return slot.tokens;
    const Session& s = *slot.user;
    return std::span<const int32_t>(s.history).first(std::min<size_t>(s.n_kv, s.history.size()));
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
        finish(s, "error",
               s.history.empty() ? "the prompt is empty"
                                 : fmt::format("the prompt has {} tokens but the context holds {}", s.history.size(),
                                               capacity));
        return true;
    }
    if (!s.sampler) {  // first admission (a preempted session keeps its sampler, RNG and stream)
        auto sampler = Sampler::create(s.req.params.sampling);
        if (!sampler.ok()) {
            finish(s, "error", sampler.error().message());
            return true;
        }
        s.sampler.emplace(std::move(*sampler));
        s.greedy = s.sampler->greedy() && s.req.params.sampling.repeat_penalty == 1.0f;
        if (tokenizer_) s.stream.emplace(*tokenizer_);
        s.stop = StopRule{tokenizer_, s.req.params.ignore_eog, s.req.params.stop_tokens};
        s.tune = AutoTune(std::max(1, s.req.spec.draft_max));
    }
    uint32_t n_cached = 0;
    Slot* slot = choose_slot(s, &n_cached);
    if (!slot) return false;
    const uint32_t bs = kv.config().block_size;
    const uint32_t whole = blocks_for(uint32_t(s.history.size()), bs);
    if (whole > kv.n_blocks()) {
        finish(s, "error",
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
    if (options_.reuse_slots && kv.can_share()) {
        const Slot* src = nullptr;
        uint32_t best = n_cached;
        const uint32_t cap = uint32_t(s.history.size()) - 1;  // the last prompt token is always run
        for (const Slot& other : slots_) {
            if (&other == slot) continue;
            const uint32_t m = std::min(shared_prefix(kv_tokens(other), s.history), cap) / bs * bs;
            if (m > best) {
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
    if (s.result.preempted == 0) s.result.n_cached = n_cached;
    if (n_cached) {
        ++stats_.prefix_hits;
        stats_.cached_tokens += n_cached;
    }
    start_drafters(s, *slot, n_cached);
    return true;
}

void BatchEngine::start_drafters(Session& s, Slot& slot, uint32_t n_cached) {
    s.chain.clear();
    s.on.clear();
    s.shared_index.clear();
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
        s.chain.push_back(d);
        s.on.push_back(1);
        s.shared_index.push_back(si);
        const Status b = n_cached ? d->resume(s.history, n_cached) : d->begin(s.history);
        if (!b.ok()) s.turn_off(s.chain.size() - 1, b.error());
    }
    forget_slot();
}

void BatchEngine::preempt(Session& s) {
    for (size_t i = 0; i < s.chain.size(); ++i) {
        if (s.on[i]) s.chain[i]->cancel();
        if (s.shared_index[i] >= 0) shared_user_[size_t(s.shared_index[i])] = nullptr;
    }
    s.chain.clear();
    s.on.clear();
    s.shared_index.clear();
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

void BatchEngine::finish(Session& s, std::string reason, std::string error) {
    if (s.done) return;
    s.done = true;
    for (size_t i = 0; i < s.chain.size(); ++i) {
        if (s.on[i]) {
            s.chain[i]->cancel();
            if (auto f = s.chain[i]->finish(); !f.ok())
                TDM_LOG_WARN("serve", "drafter {}: {}", s.chain[i]->name(), f.error().message());
        }
        if (s.shared_index[i] >= 0) shared_user_[size_t(s.shared_index[i])] = nullptr;
    }
    if (s.stream && s.req.on_token) {
        const std::string tail = s.stream->flush();
        if (!tail.empty()) s.req.on_token(-1, tail, nullptr);
    }
    if (Slot* slot = s.slot) {
        // the KV keeps what the history says (a stop inside a round leaves rows past it)
        uint32_t keep = error.empty() ? std::min<uint32_t>(s.n_kv, uint32_t(s.history.size())) : 0;
        if (!runner_.kv().truncate(slot->seq, keep).ok()) {
            keep = 0;
            (void)runner_.kv().truncate(slot->seq, 0);
        }
        slot->tokens.assign(s.history.begin(), s.history.begin() + keep);
        slot->user = nullptr;
        slot->last_used = ++clock_;
        s.slot = nullptr;
    }
    s.result.stop_reason = std::move(reason);
    s.result.error = std::move(error);
    if (s.req.on_done) s.req.on_done(s.result);
}

// ---------------------------------------------------------------- one pass

int BatchEngine::decide_k(Session& s, bool cap_only) const {
    if (std::none_of(s.on.begin(), s.on.end(), [](char c) { return c != 0; })) return 0;
    if (s.planned_k >= 0) {  // the batch's budget decided (batch_budget.h)
        const int k = s.skip_next ? 0 : s.planned_k;
        s.skip_next = false;
        return k;
    }
    const KvPool& kv = runner_.kv();
    int k = s.req.spec.draft_max;
    const GenerateParams& p = s.req.params;
    if (p.max_tokens >= 0) k = std::min<int>(k, p.max_tokens - int(s.result.tokens.size()) - 1);
    k = std::min<int>(k, int(kv.capacity_tokens()) - int(s.pos()) - 2);
    if (kv.has_rings()) k = std::min<int>(k, int(kv.config().rows_max) - 1);
    k = std::max(0, k);
    if (s.req.spec.auto_k && !cap_only) k = s.tune.choose(k);
    if (cap_only) return k;
    if (s.skip_next) k = 0;
    s.skip_next = false;
    return k;
}

// --spec-auto with several decoding sessions: drafts where they pay for the whole pass.
void BatchEngine::plan_drafts(std::span<Session* const> part) {
    for (Session* s : part) s->planned_k = -1;
    if (!multi_seq_ || !cost_.ready()) return;
    std::vector<Session*> auto_sessions;
    std::vector<DraftCandidate> cand;
    uint32_t base_rows = 0, decoding = 0;
    for (Session* s : part) {
        if (s->done || !s->slot) continue;
        const uint32_t remaining = uint32_t(s->history.size()) - s->n_kv;
        if (remaining > 1) {
            base_rows += std::min(remaining, options_.n_batch);
            continue;
        }
        ++base_rows;
        ++decoding;
        if (!s->req.spec.auto_k) continue;
        auto_sessions.push_back(s);
        uint32_t cap = uint32_t(std::max(0, decide_k(*s, /*cap_only=*/true)));
        if (s->skip_next) cap = 0;  // its skip streak asks for a plain step: no rows for it
        if (cap < uint32_t(std::max(1, s->req.spec.draft_min))) cap = 0;  // a shorter proposal is dropped
        cand.push_back({cap, s->tune.acceptance(), s->draft_ms_per_token});
    }
    if (auto_sessions.size() < 2) return;
    const std::vector<uint32_t> k = allocate_drafts(cost_.a(), cost_.b(), double(decoding), base_rows, cand);
    for (size_t i = 0; i < auto_sessions.size(); ++i) {
        Session& s = *auto_sessions[i];
        const uint32_t min_k = uint32_t(std::max(1, s.req.spec.draft_min));
        s.planned_k = k[i] >= min_k ? int(k[i]) : 0;  // fewer than draft_min would be dropped
        if (s.planned_k > 0) {
            s.starved = 0;
        } else if (cand[i].k_cap > 0 && ++s.starved >= kProbeInterval) {
            // a session given nothing still drafts now and then, so that its acceptance
            // estimate follows what its drafter would do now
            s.planned_k = int(min_k);
            s.starved = 0;
        }
    }
}

std::vector<int32_t> BatchEngine::draft(Session& s, int k) {
    s.winner = -1;
    s.draft_ms = 0;
    if (k <= 0) return {};
    const uint32_t n_vocab = runner_.model().info().n_vocab;
    const DraftRequest req{std::span<const int32_t>(s.history), s.pos(), uint32_t(k), s.slot->seq};
    const double t0 = now_ms();
    std::vector<int32_t> out;
    for (size_t i = 0; i < s.chain.size() && s.winner < 0; ++i) {
        if (!s.on[i]) continue;
        auto prop = s.chain[i]->draft(req);
        if (!prop.ok()) {
            s.turn_off(i, prop.error());
            continue;
        }
        std::vector<int32_t> p = std::move(prop).value();
        if (p.size() > size_t(k)) p.resize(size_t(k));
        for (int32_t t : p)
            if (t < 0 || uint32_t(t) >= n_vocab) {
                s.turn_off(i, Error::format("it proposed token {} outside the vocabulary of {}", t, n_vocab));
                p.clear();
                break;
            }
        if (s.on[i] && !p.empty() && int(p.size()) >= std::max(1, s.req.spec.draft_min)) {
            out = std::move(p);
            s.winner = int(i);
        }
    }
    s.draft_ms = now_ms() - t0;
    const double per_token = s.draft_ms / double(std::max<size_t>(1, out.size()));
    s.draft_ms_per_token = s.draft_ms_per_token == 0 ? per_token : 0.8 * s.draft_ms_per_token + 0.2 * per_token;
    return out;
}

static TokenLogprobs logprobs_of(const float* logits, uint32_t n_vocab, int32_t tok, uint32_t n_top) {
    // NaN never reaches here (the runner refuses non-finite logits); -inf rows are fine
    float mx = -std::numeric_limits<float>::infinity();
    for (uint32_t i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
    double sum = 0;
    for (uint32_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - double(mx));
    const double log_z = double(mx) + std::log(sum);
    TokenLogprobs lp;
    lp.logprob = float(double(logits[tok]) - log_z);
    n_top = std::min(n_top, n_vocab);
    if (n_top) {
        std::vector<int32_t> ids(n_vocab);
        for (uint32_t i = 0; i < n_vocab; ++i) ids[i] = int32_t(i);
        const auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
        std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(), better);
        for (uint32_t i = 0; i < n_top; ++i) lp.top.emplace_back(ids[i], float(double(logits[ids[i]]) - log_z));
    }
    return lp;
}

bool BatchEngine::emit(Session& s, int32_t tok, const float* logits) {
    s.result.tokens.push_back(tok);
    s.history.push_back(tok);
    std::string piece = s.stream ? s.stream->push(tok) : std::string();
    std::optional<TokenLogprobs> lp;
    if (s.req.logprobs >= 0)
        lp = logprobs_of(logits, runner_.model().info().n_vocab, tok, uint32_t(s.req.logprobs));
    if (s.req.on_token && !s.req.on_token(tok, piece, lp ? &*lp : nullptr)) {
        s.result.stop_reason = "cancelled";
        return false;
    }
    if (std::string why = s.stop.check(tok); !why.empty()) {
        s.result.stop_reason = why;
        return false;
    }
    const int32_t max = s.req.params.max_tokens;
    if (max >= 0 && s.result.tokens.size() >= size_t(max)) {
        s.result.stop_reason = "length";
        return false;
    }
    return true;
}

// After the pass: the session's rows start at batch row row0 and its logits rows at out0.
void BatchEngine::settle(Session& s, const ForwardOutput& out, uint32_t row0, uint32_t out0, double pass_ms) {
    KvPool& kv = runner_.kv();
    const uint32_t n_vocab = runner_.model().info().n_vocab;
    const uint32_t first_pos = s.n_kv;
    const bool final_chunk = s.n_kv + s.chunk == s.history.size();
    auto observe = [&](uint32_t n_rows) {
        bool any = false;
        for (size_t i = 0; i < s.chain.size(); ++i) any |= s.on[i] && s.chain[i]->hidden_point() != TDM_HIDDEN_NONE;
        if (!any || !out.hidden) return;
        std::vector<int32_t> toks(s.history.begin() + first_pos, s.history.begin() + first_pos + s.chunk);
        toks.insert(toks.end(), s.drafts.begin(), s.drafts.begin() + (n_rows - s.chunk));
        const uint32_t n_embd = runner_.model().info().n_embd;
        const TargetRows rows{toks, first_pos, out.hidden + size_t(row0) * n_embd, n_embd,
                              // the device table holds them until the next pass: only a
                              // session drafting before it (every session runs in every
                              // pass when passes take many sequences) may read them there
                              row0 == 0 && multi_seq_ ? out.hidden_on_device : nullptr};
        for (size_t i = 0; i < s.chain.size(); ++i)
            if (s.on[i] && s.chain[i]->hidden_point() != TDM_HIDDEN_NONE)
                if (auto o = s.chain[i]->observe(rows); !o.ok()) s.turn_off(i, o.error());
    };
    if (!final_chunk) {
        observe(s.chunk);
        s.n_kv += s.chunk;
        return;
    }
    if (s.req.params.max_tokens == 0) {
        s.n_kv += s.chunk;
        finish(s, "length");
        return;
    }

    // accept: the longest agreeing prefix of the drafts, then the target's own token
    const uint32_t nd = uint32_t(s.drafts.size());
    uint32_t m = 0;
    int32_t next = -1;
    Sampler& sampler = *s.sampler;
    if (s.greedy) {
        while (m < nd && s.drafts[m] == out.argmax[out0 + m]) ++m;
        next = out.argmax[out0 + m];
    } else {
        TokenDistribution p;
        std::vector<int32_t> h = s.history;  // the penalty window sees accepted drafts
        for (; m < nd; ++m) {
            sampler.distribution(out.logits + size_t(out0 + m) * n_vocab, int(n_vocab), h, &p);
            const SpecDecision dec = speculative_accept(p, s.drafts[m], sampler.rng());
            if (!dec.accepted) {
                next = dec.token;
                break;
            }
            h.push_back(s.drafts[m]);
        }
        if (next < 0) next = sampler.sample(out.logits + size_t(out0 + nd) * n_vocab, int(n_vocab), h);
    }
    s.n_kv = uint32_t(s.history.size()) + m;
    if (nd > 0) {
        if (Status st = kv.truncate(s.slot->seq, s.n_kv); !st.ok()) {
            finish(s, "error", st.error().message());
            return;
        }
    }
    observe(s.chunk + m);
    if (nd > 0) {
        s.result.drafted += nd;
        s.result.accepted += m;
        stats_.drafted += nd;
        stats_.accepted += m;
        if (stats_.drafted_at.size() < nd) {
            stats_.drafted_at.resize(nd);
            stats_.accepted_at.resize(nd);
        }
        for (uint32_t i = 0; i < nd; ++i) ++stats_.drafted_at[i];
        for (uint32_t i = 0; i < m; ++i) ++stats_.accepted_at[i];
        s.tune.observe_round(int(nd), int(m), s.draft_ms, pass_ms);
        s.zero_streak = m == 0 ? s.zero_streak + 1 : 0;
        if (s.req.spec.skip_streak > 0 && s.zero_streak >= s.req.spec.skip_streak) {
            s.skip_next = true;
            s.zero_streak = 0;
        }
    } else if (s.chunk == 1) {
        s.tune.observe_plain(pass_ms);
    }

    bool running = true;
    const auto row = [&](uint32_t i) { return out.logits + size_t(out0 + i) * n_vocab; };
    for (uint32_t i = 0; i < m && running; ++i) running = emit(s, s.drafts[i], row(i));
    if (running) running = emit(s, next, row(m));
    for (size_t i = 0; i < s.chain.size() && running; ++i) {
        if (!s.on[i]) continue;
        const bool won = int(i) == s.winner;
        if (auto a = s.chain[i]->accept(s.history, won ? nd : 0, won ? m : 0); !a.ok()) s.turn_off(i, a.error());
    }
    if (!running) {
        finish(s, s.result.stop_reason);
        return;
    }
    if (s.history.size() >= kv.capacity_tokens()) finish(s, "context");
}

bool BatchEngine::pass(std::span<Session* const> run) {
    std::vector<int32_t> tokens, positions, seqs, outputs;
    std::vector<uint32_t> row0, out0;
    for (Session* s : run) {
        row0.push_back(uint32_t(tokens.size()));
        out0.push_back(uint32_t(outputs.size()));
        const bool final_chunk = s->n_kv + s->chunk == s->history.size();
        for (uint32_t i = 0; i < s->chunk; ++i) {
            tokens.push_back(s->history[s->n_kv + i]);
            positions.push_back(int32_t(s->n_kv + i));
            seqs.push_back(s->slot->seq);
        }
        if (final_chunk) outputs.push_back(int32_t(tokens.size() - 1));
        for (size_t i = 0; i < s->drafts.size(); ++i) {
            tokens.push_back(s->drafts[i]);
            positions.push_back(int32_t(s->history.size() + i));
            seqs.push_back(s->slot->seq);
            outputs.push_back(int32_t(tokens.size() - 1));
        }
    }
    if (outputs.empty()) outputs.push_back(int32_t(tokens.size() - 1));  // middle chunks only: unused
    const double t0 = now_ms();
    ForwardInput in{tokens, positions, run.front()->slot->seq, outputs, seqs};
    auto out = runner_.forward(in);
    const double pass_ms = now_ms() - t0;
    if (out.ok()) cost_.observe(uint32_t(tokens.size()), pass_ms);
    ++stats_.steps;
    stats_.rows += tokens.size();
    if (!out.ok()) {
        TDM_LOG_ERROR("serve", "a forward pass of {} rows of {} sessions failed: {}", tokens.size(), run.size(),
                      out.error().message());
        if (run.size() == 1) finish(*run.front(), "error", out.error().message());
        return false;
    }
    for (size_t i = 0; i < run.size(); ++i) settle(*run[i], *out, row0[i], out0[i], pass_ms);
    return true;
}

void BatchEngine::abort_all(const std::string& error) {
    for (auto& s : active_) finish(*s, "error", error);
    for (auto& s : waiting_) finish(*s, "error", error);
    active_.clear();
    waiting_.clear();
}

bool BatchEngine::step() {
    // sessions cancelled from outside end now; waiting ones never start
    for (auto& s : active_)
        if (s->req.cancel && s->req.cancel->load()) finish(*s, "cancelled");
    for (auto& s : waiting_)
        if (s->req.cancel && s->req.cancel->load()) finish(*s, "cancelled");
    std::erase_if(active_, [](const auto& s) { return s->done; });
    std::erase_if(waiting_, [](const auto& s) { return s->done; });

    while (!waiting_.empty() && active_.size() < slots_.size()) {
        if (!admit(waiting_.front())) break;
        std::unique_ptr<Session> s = std::move(waiting_.front());
        waiting_.pop_front();
        if (!s->done) active_.push_back(std::move(s));
    }
    if (active_.empty()) return !waiting_.empty();

    // who runs this pass: every session, or one (round robin) for recurrent models
    std::vector<Session*> part;
    if (multi_seq_) {
        for (auto& s : active_) part.push_back(s.get());
    } else {
        part.push_back(active_[next_single_++ % active_.size()].get());
    }
    plan_drafts(part);
    KvPool& kv = runner_.kv();
    const uint32_t bs = kv.config().block_size;
    uint32_t rows = 0;
    std::vector<Session*> run;
    for (Session* s : part) {
        if (s->done || !s->slot) continue;  // preempted for an earlier session of this pass
        const uint32_t remaining = uint32_t(s->history.size()) - s->n_kv;
        s->drafts.clear();
        s->winner = -1;
        if (remaining == 1) {
            s->chunk = 1;
            s->drafts = draft(*s, decide_k(*s));
        } else {
            // A recompute after preemption stops one row short: its next token then comes
            // from a decode step with drafts, as it would have without the preemption.
            s->chunk = std::min(remaining - (s->result.tokens.empty() ? 0 : 1), options_.n_batch);
            // past the row budget a prompt still advances by a few rows
            if (rows + s->chunk > options_.max_batch_rows)
                s->chunk = std::min(s->chunk, std::max(kMinPrefillRows, options_.max_batch_rows - std::min(rows, options_.max_batch_rows)));
        }
        const uint32_t end = s->n_kv + s->chunk + uint32_t(s->drafts.size());
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
                    finish(*s, "error",
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
                rows -= victim->chunk + uint32_t(victim->drafts.size());
            }
            preempt(*victim);
        }
        if (!fits) continue;
        run.push_back(s);
        rows += s->chunk + uint32_t(s->drafts.size());
    }
    std::erase_if(active_, [](const auto& s) { return s->done; });
    if (run.empty()) return true;

    // One pass over them all. A failure may come from one session's rows (non-finite
    // logits, a refusal of its batch): then each runs alone, and only the failing one ends.
    if (!pass(run) && run.size() > 1)
        for (Session* s : run) pass(std::span<Session* const>(&s, 1));
    std::erase_if(active_, [](const auto& s) { return s->done; });
    return true;
}

}  // namespace tdm
