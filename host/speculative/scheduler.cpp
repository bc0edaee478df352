// SPDX-License-Identifier: Apache-2.0
// host/speculative/scheduler.cpp: the draft -> verify -> accept -> rollback loop.
#include "speculative/scheduler.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>

#include "common/log.h"
#include "speculative/auto_tune.h"
#include "tokenizer/stream.h"

namespace tdm {
namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Everything the loop keeps about the sequence being generated.
struct Sequence {
    std::vector<int32_t> history;  // prompt + emitted
    uint32_t pos = 0;              // position of history.back() (not yet in the target's KV)
    size_t n_prompt = 0;
};

}  // namespace

Result<SpecResult> generate_speculative(Runner& target, const Tokenizer* tokenizer, int seq,
                                        std::span<const int32_t> prompt, const GenerateParams& params,
                                        std::span<Drafter* const> drafters, const SpecParams& spec,
                                        const std::function<void(const std::string&)>& on_text) {
    const uint32_t n_vocab = target.model().info().n_vocab;
    const uint32_t capacity = target.kv().capacity_tokens();
    if (prompt.size() >= capacity)
        return Error::format("the prompt has {} tokens but the context holds {} (raise -c/--ctx-size)", prompt.size(),
                             capacity);
    if (drafters.empty()) return Error("speculative decoding needs at least one drafter");
    auto sampler = TDM_TRY(Sampler::create(params.sampling));
    const bool greedy = sampler.greedy() && params.sampling.repeat_penalty == 1.0f;
    StopRule stop{tokenizer, params.ignore_eog, params.stop_tokens};
    std::optional<StreamDecoder> stream;
    if (tokenizer) stream.emplace(*tokenizer);
    std::ofstream trace;
    if (!spec.trace_path.empty()) {
        trace.open(spec.trace_path, std::ios::trunc);
        if (!trace) return Error::format("cannot write the speculative trace {}", spec.trace_path);
    }

    SpecResult res;
    GenerateResult& r = res.gen;
    SpecStats& st = res.stats;
    for (Drafter* d : drafters) st.drafters.push_back({d->name()});
    AutoTune tune(spec.draft_max);
    r.stats.n_prompt = uint32_t(prompt.size());
    r.stop_reason = "length";

    // ---- drafters that read the target's hidden states get its committed rows
    tdm_hidden_point hp = TDM_HIDDEN_NONE;
    for (Drafter* d : drafters) {
        const tdm_hidden_point h = d->hidden_point();
        if (h == TDM_HIDDEN_NONE) continue;
        if (hp != TDM_HIDDEN_NONE && h != hp)
            return Error("the drafters of this chain read different target hidden states (pre- and post-norm)");
        hp = h;
    }
    target.set_hidden_point(hp);
    const uint32_t n_embd = target.model().info().n_embd;

    // A drafter that fails is turned off for the rest of this request, with one
    // warning: the target alone decides every token, so the output stays exact.
    std::vector<char> active(drafters.size(), 1);
    auto turn_off = [&](size_t i, const Error& e) {
        if (!active[i]) return;
        active[i] = 0;
        st.drafters[i].failure = e.message();
        TDM_LOG_WARN("spec", "drafter {} failed and is off for the rest of this request (the output is unchanged): {}",
                     drafters[i]->name(), e.message());
    };
    auto first_active = [&]() -> int {
        for (size_t i = 0; i < drafters.size(); ++i)
            if (active[i]) return int(i);
        return -1;
    };
    auto observe = [&](std::span<const int32_t> tokens, uint32_t first_pos, const ForwardOutput& fo) -> Status {
        if (hp == TDM_HIDDEN_NONE) return {};
        const TargetRows rows{tokens, first_pos, fo.hidden, n_embd, fo.hidden_on_device};
        for (size_t i = 0; i < drafters.size(); ++i)
            if (active[i] && drafters[i]->hidden_point() != TDM_HIDDEN_NONE)
                if (auto o = drafters[i]->observe(rows); !o.ok()) turn_off(i, o.error());
        return {};
    };

    // ---- prefill, first token (drafters begin before: the prefill feeds
    // observe). A continuation resumes drafters at the cached length.
    for (size_t i = 0; i < drafters.size(); ++i) {
        const double b0 = now_ms();
        const Status b = params.n_cached ? drafters[i]->resume(prompt, params.n_cached) : drafters[i]->begin(prompt);
        if (!b.ok()) turn_off(i, b.error());
        st.drafters[i].calls_begin++;
        st.drafters[i].dur_begin_ms += now_ms() - b0;
    }
    r.stats.n_cached = params.n_cached;
    const double t0 = now_ms();
    PrefillResult pre = TDM_TRY(prefill(target, seq, prompt, params, false, {},
                                        [&](const ForwardInput& in, const ForwardOutput& o) -> Status {
                                            return observe(in.tokens, uint32_t(in.positions[0]), o);
                                        }));
    const double t1 = now_ms();
    r.stats.prefill_ms = t1 - t0;
    if (pre.cancelled) {
        r.stop_reason = "cancelled";
        r.n_kv = pre.n_done;
        return res;
    }
    ForwardOutput out = pre.out;
    Sequence s;
    s.history.assign(prompt.begin(), prompt.end());
    s.n_prompt = prompt.size();
    s.pos = uint32_t(prompt.size());
    auto pick = [&](const ForwardOutput& o, uint32_t row) {
        return greedy ? o.argmax[row] : sampler.sample(o.logits + size_t(row) * n_vocab, int(n_vocab), s.history);
    };
    const int32_t first = pick(out, out.n_outputs - 1);

    // Emits one token; returns false once generation must stop.
    std::vector<int32_t> pending_text;  // tokens to stream after the next prepare (depth-2 overlap)
    auto emit = [&](int32_t tok) -> bool {
        r.tokens.push_back(tok);
        s.history.push_back(tok);
        pending_text.push_back(tok);
        ++st.emitted;
        if (std::string why = stop.check(tok); !why.empty()) {
            r.stop_reason = why;
            return false;
        }
        if (params.max_tokens >= 0 && r.tokens.size() >= size_t(params.max_tokens)) return false;
        return true;
    };
    auto flush_text = [&] {
        if (stream)
            for (int32_t tok : pending_text) {
                const std::string piece = stream->push(tok);
                r.text += piece;
                if (on_text && !piece.empty()) on_text(piece);
            }
        pending_text.clear();
    };

    bool running = params.max_tokens != 0 && emit(first);

    int zero_streak = 0;
    bool skip_next = false;
    uint64_t round = 0;
    auto make_request = [&](uint32_t max) {
        return DraftRequest{std::span<const int32_t>(s.history), s.pos, max, seq};
    };
    // Most drafts this round: the remaining budget (k drafts + the target's own
    // token), the context, draft_max and the rows the target's KV rings were sized for.
    auto k_cap = [&]() -> int {
        int k = spec.draft_max;
        if (params.max_tokens >= 0) k = std::min<int>(k, params.max_tokens - int(r.tokens.size()) - 1);
        // plain decoding never runs position capacity-1 (it stops once the
        // next position is the last), so a verify pass must not either
        k = std::min<int>(k, int(capacity) - int(s.pos) - 2);
        // a verify stores k + 1 rows: no more than the target's sliding-window rings hold
        if (target.kv().has_rings()) k = std::min<int>(k, int(target.kv().config().rows_max) - 1);
        return std::max(0, k);
    };
    // The draft length of the next round: decided (and the drafter prepared) as
    // soon as the previous round is accepted.
    auto decide_k = [&]() -> int {
        if (first_active() < 0) return 0;  // every drafter failed: plain steps
        int k = k_cap();
        if (spec.auto_k) k = tune.choose(k);
        if (skip_next) k = 0;
        skip_next = false;
        return k;
    };
    // The first active drafter may start the next round's device work early
    // (prepare); `prepared` is its index, or -1.
    int prepared = -1;
    auto prepare_next = [&](int k) {
        const int i = first_active();
        if (k <= 0 || i < 0) return;
        if (auto p = drafters[size_t(i)]->prepare(make_request(uint32_t(k))); !p.ok()) {
            turn_off(size_t(i), p.error());
            return;
        }
        prepared = i;
    };
    int next_k = running ? decide_k() : 0;
    prepare_next(next_k);
    flush_text();

    while (running) {
        if (s.pos + 1 >= capacity) {
            r.stop_reason = "context";
            break;
        }
        if (params.cancel && params.cancel->load(std::memory_order_relaxed)) {
            r.stop_reason = "cancelled";
            break;
        }
        const int k = next_k;

        // ---- draft: the first drafter of the chain that proposes wins
        std::vector<int32_t> drafts;
        int winner = -1;
        const double d0 = now_ms();
        if (k > 0) {
            const DraftRequest req = make_request(uint32_t(k));
            for (size_t i = 0; i < drafters.size() && winner < 0; ++i) {
                if (!active[i]) continue;
                const double g0 = now_ms();
                auto prop = drafters[i]->draft(req);
                st.drafters[i].calls_gen++;
                st.drafters[i].dur_gen_ms += now_ms() - g0;
                if (!prop.ok()) {
                    turn_off(i, prop.error());
                    continue;
                }
                std::vector<int32_t> p = std::move(prop).value();
                if (p.size() > size_t(k)) p.resize(size_t(k));
                bool in_vocab = true;
                for (int32_t t : p)
                    if (in_vocab && (t < 0 || uint32_t(t) >= n_vocab)) {
                        turn_off(i, Error::format("it proposed token {} outside the vocabulary of {}", t, n_vocab));
                        in_vocab = false;
                    }
                if (in_vocab && !p.empty() && int(p.size()) >= std::max(1, spec.draft_min)) {
                    drafts = std::move(p);
                    winner = int(i);
                }
            }
            if (prepared >= 0 && !active[size_t(prepared)]) drafters[size_t(prepared)]->cancel();
        } else if (prepared >= 0) {
            drafters[size_t(prepared)]->cancel();
        }
        prepared = -1;
        const double draft_ms = now_ms() - d0;
        st.draft_ms += draft_ms;

        // ---- verify (or a plain step)
        const uint32_t nd = uint32_t(drafts.size());
        std::vector<int32_t> batch;
        batch.push_back(s.history.back());
        batch.insert(batch.end(), drafts.begin(), drafts.end());
        std::vector<int32_t> positions(batch.size()), rows(batch.size());
        for (size_t i = 0; i < batch.size(); ++i) {
            positions[i] = int32_t(s.pos + i);
            rows[i] = int32_t(i);
        }
        const double v0 = now_ms();
        out = TDM_TRY(target.forward({batch, positions, seq, rows}));
        const double verify_ms = now_ms() - v0;

        // ---- accept: the longest agreeing prefix, then the target's own token
        const double a0 = now_ms();
        uint32_t m = 0;
        int32_t next = -1;
        if (greedy) {
            while (m < nd && drafts[m] == out.argmax[m]) ++m;
            next = out.argmax[m];
        } else {
            TokenDistribution p;
            std::vector<int32_t> h = s.history;  // the penalty window sees accepted drafts
            for (; m < nd; ++m) {
                sampler.distribution(out.logits + size_t(m) * n_vocab, int(n_vocab), h, &p);
                const SpecDecision dec = speculative_accept(p, drafts[m], sampler.rng());
                if (!dec.accepted) {
                    next = dec.token;
                    break;
                }
                h.push_back(drafts[m]);
            }
            if (next < 0) next = sampler.sample(out.logits + size_t(nd) * n_vocab, int(n_vocab), h);
        }
        // rollback: the target's KV (and recurrent-state checkpoint) keeps last +
        // the accepted drafts; drafters reading hidden states get those rows
        TDM_TRY(target.kv().truncate(seq, s.pos + m + 1));
        TDM_TRY(observe(std::span<const int32_t>(batch).first(m + 1), s.pos, out));

        if (nd > 0) {
            st.add_round(nd, m);
            tune.observe_round(int(nd), int(m), draft_ms, verify_ms);
            DrafterStats& ws = st.drafters[size_t(winner)];
            ws.gen_drafts++;
            ws.gen_tokens += nd;
            ws.acc_tokens += m;
            if (m > 0) ws.acc_drafts++;
            st.verify_ms += verify_ms;
            zero_streak = m == 0 ? zero_streak + 1 : 0;
            if (spec.skip_streak > 0 && zero_streak >= spec.skip_streak) {
                skip_next = true;
                zero_streak = 0;
            }
        } else {
            st.plain_steps++;
            st.plain_ms += verify_ms;
            tune.observe_plain(verify_ms);
        }

        // ---- emit accepted drafts and the target's token (stops may cut the round)
        const uint32_t pos_before = s.pos;
        for (uint32_t i = 0; i < m && running; ++i) running = emit(drafts[i]);
        if (running) running = emit(next);
        s.pos = pos_before + m + 1;
        for (size_t i = 0; i < drafters.size(); ++i) {
            if (!active[i]) continue;
            const double c0 = now_ms();
            if (auto a = drafters[i]->accept(s.history, int(i) == winner ? nd : 0, int(i) == winner ? m : 0); !a.ok())
                turn_off(i, a.error());
            st.drafters[i].calls_acc++;
            st.drafters[i].dur_acc_ms += now_ms() - c0;
        }
        const double accept_ms = now_ms() - a0;
        st.accept_ms += accept_ms;

        // ---- depth 2: start the next round's draft before the host bookkeeping
        next_k = running ? decide_k() : 0;
        prepare_next(next_k);
        flush_text();
        if (trace.is_open()) {
            nlohmann::json j = {{"round", round},
                                {"pos", pos_before},
                                {"drafter", winner >= 0 ? drafters[size_t(winner)]->name() : std::string()},
                                {"k", k},
                                {"drafted", drafts},
                                {"accepted", m},
                                {"next", next},
                                {"t_draft_ms", draft_ms},
                                {"t_verify_ms", verify_ms},
                                {"t_accept_ms", accept_ms}};
            trace << j.dump() << '\n';
        }
        ++round;
    }
    if (prepared >= 0) drafters[size_t(prepared)]->cancel();
    // Finishing saves drafter state (an n-gram cache file). A failure there is
    // reported, but the generated tokens are kept: they are already exact.
    for (size_t i = 0; i < drafters.size(); ++i) {
        if (!active[i]) continue;
        if (auto f = drafters[i]->finish(); !f.ok()) {
            st.drafters[i].failure = f.error().message();
            TDM_LOG_WARN("spec", "drafter {}: {}", drafters[i]->name(), f.error().message());
        }
    }
    flush_text();
    if (stream) {
        const std::string tail = stream->flush();
        r.text += tail;
        if (on_text && !tail.empty()) on_text(tail);
    }
    r.stats.n_generated = uint32_t(r.tokens.size());
    r.stats.decode_ms = now_ms() - t1;
    // A stop inside a round leaves accepted rows past the last emitted token in
    // the KV; roll them back so the KV holds what the result says. A hybrid
    // model's checkpoints cover every row of the verify batch; if one is missing
    // anyway, say that nothing can be resumed rather than leave a wrong claim.
    const uint32_t want = uint32_t(s.history.size()) - (r.tokens.empty() ? 0 : 1);
    r.n_kv = s.pos;
    if (s.pos > want) r.n_kv = target.kv().truncate(seq, want).ok() ? want : 0;
    return res;
}

}  // namespace tdm
