// SPDX-License-Identifier: Apache-2.0
// host/cli/serve_backend.cpp
#include "cli/serve_backend.h"

#include "server/stop_strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <optional>

namespace tdm::cli {

using server::ApiError;
using server::ApiResult;

namespace {

ApiError server_error(const Error& e) {
    ApiError out;
    out.status = 500;
    out.type = "server_error";
    out.message = e.message();
    return out;
}

std::string finish_reason(StopReason stop_reason) {
    return stop_reason == StopReason::length || stop_reason == StopReason::context ? "length" : "stop";
}

}  // namespace

Result<std::unique_ptr<ServeBackend>> ServeBackend::create(Setup setup) {
    if (!setup.runner) return Error("serve: no model");
    if (!setup.tokenizer) return Error("serve needs a model with a tokenizer");
    if (!setup.per_request.empty() && setup.per_request.size() != setup.drafters.size())
        return Error("serve: one per-request factory (or none) per drafter is needed");
    std::unique_ptr<ServeBackend> b(new ServeBackend(std::move(setup)));
    b->end_of_turn_pieces_ = EndOfTurnPieces(*b->setup_.tokenizer);
    b->setup_.engine.n_batch = b->setup_.defaults.n_batch;
    b->setup_.engine.hidden_point = chain_hidden_point(b->setup_.drafters);
    b->engine_ = TDM_TRY(BatchEngine::create(*b->setup_.runner, b->setup_.tokenizer, b->setup_.engine,
                                             shared_drafters(b->setup_.drafters, b->setup_.per_request)));
    b->slots_ = b->engine_->slots();
    b->gauges_.kv_blocks_free = b->engine_->kv_blocks_free();
    b->gauges_.kv_blocks_used = b->engine_->kv_blocks_total() - b->gauges_.kv_blocks_free;
    b->thread_ = std::thread([p = b.get()] { p->loop(); });
    return b;
}

ServeBackend::~ServeBackend() {
    {
        std::lock_guard lock(mutex_);
        quit_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

// The engine thread: takes new sessions, steps while there is work, sleeps otherwise.
void ServeBackend::loop() {
    while (true) {
        std::deque<SessionRequest> arrived;
        bool quitting = false;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return quit_ || !inbox_.empty() || engine_->running() || engine_->waiting(); });
            arrived.swap(inbox_);
            quitting = quit_;
        }
        if (quitting) {  // every request still here gets an answer, so that no run() waits for ever
            SessionResult gone;
            gone.stop_reason = StopReason::error;
            gone.error = "the server is shutting down";
            for (SessionRequest& r : arrived)
                if (r.on_done) r.on_done(gone);
            engine_->abort_all(gone.error);
            break;
        }
        for (SessionRequest& r : arrived) engine_->add(std::move(r));
        engine_->step();
        server::EngineGauges g;
        g.running = engine_->running();
        g.waiting = engine_->waiting();
        g.kv_blocks_free = engine_->kv_blocks_free();
        g.kv_blocks_used = engine_->kv_blocks_total() - g.kv_blocks_free;
        g.kv_blocks_shared = engine_->kv_blocks_shared();
        const BatchEngineStats& st = engine_->stats();
        g.prefix_hits = st.prefix_hits;
        g.cached_tokens = st.cached_tokens;
        g.preemptions = st.preemptions;
        g.drafted_at = st.drafted_at;
        g.accepted_at = st.accepted_at;
        std::lock_guard lock(mutex_);
        gauges_ = std::move(g);
    }
    engine_.reset();
}

server::EngineGauges ServeBackend::gauges() const {
    std::lock_guard lock(mutex_);
    return gauges_;
}

uint32_t ServeBackend::context_tokens() const { return setup_.runner->kv().capacity_tokens(); }

ApiResult<server::Job> ServeBackend::prepare(server::GenerationRequest request) const {
    const Tokenizer& tok = *setup_.tokenizer;
    server::Job job;
    if (request.endpoint == server::Endpoint::chat_completions) {
        if (!setup_.chat_template)
            return ApiError::invalid("messages", "this model has no chat template: use /v1/completions, or start "
                                                 "the server with --chat-template NAME");
        std::vector<ChatMessage> messages;
        for (const server::ChatMessage& m : request.messages) messages.push_back({m.role, m.content});
        auto text = setup_.chat_template->apply(messages, true);
        if (!text.ok()) return ApiError::invalid("messages", text.error().message());
        job.prompt = tok.encode(*text, true);  // as `tandem run -p TEXT` tokenizes its prompt
    } else if (request.prompt_is_tokens) {
        for (size_t i = 0; i < request.prompt_tokens.size(); ++i)
            if (request.prompt_tokens[i] >= tok.n_vocab())
                return ApiError::invalid(fmt::format("prompt[{}]", i),
                                         fmt::format("token {} is outside the vocabulary of {} tokens",
                                                     request.prompt_tokens[i], tok.n_vocab()));
        job.prompt = request.prompt_tokens;
    } else {
        job.prompt = tok.encode(request.prompt, true);
    }
    const std::string prompt_field = request.endpoint == server::Endpoint::chat_completions ? "messages" : "prompt";
    if (job.prompt.empty()) return ApiError::invalid(prompt_field, "the prompt is empty");

    // OpenAI's and vLLM's rule: a request that cannot fit the context is refused whole,
    // not cut short silently.
    const uint64_t context = context_tokens();
    const uint64_t wanted = job.prompt.size() + request.max_tokens.value_or(1);
    if (job.prompt.size() >= context || wanted > context) {
        ApiError e = ApiError::invalid(
            request.max_tokens && job.prompt.size() < context ? "max_tokens" : prompt_field,
            request.max_tokens ? fmt::format("this model's context is {} tokens; the prompt is {} and max_tokens asks "
                                             "for {} more",
                                             context, job.prompt.size(), *request.max_tokens)
                               : fmt::format("this model's context is {} tokens and the prompt is {}", context,
                                             job.prompt.size()));
        e.code = "context_length_exceeded";
        return e;
    }
    if (request.speculative && !request.speculative->type.empty() && request.speculative->type != "none") {
        const auto& d = setup_.drafters;
        const bool loaded = std::any_of(d.begin(), d.end(), [&](Drafter* x) { return x->name() == request.speculative->type; });
        if (!loaded) {
            std::string names;
            for (Drafter* x : d) names += (names.empty() ? "" : ", ") + x->name();
            return ApiError::invalid("speculative.type",
                                     fmt::format("drafter '{}' is not loaded in this server ({})",
                                                 request.speculative->type,
                                                 names.empty() ? "it runs without drafters" : "loaded: " + names));
        }
    }
    if (auto gp = generate_params(request); !gp.ok()) return gp.error();
    job.request = std::move(request);
    return job;
}

ApiResult<GenerateParams> ServeBackend::generate_params(const server::GenerationRequest& r) const {
    GenerateParams gp = setup_.defaults;
    if (r.max_tokens) gp.max_tokens = int32_t(std::min<uint64_t>(*r.max_tokens, std::numeric_limits<int32_t>::max()));
    SamplerParams& s = gp.sampling;
    if (r.temperature) s.temperature = float(*r.temperature);
    if (r.top_p) s.top_p = float(*r.top_p);
    if (r.min_p) s.min_p = float(*r.min_p);
    if (r.top_k) s.top_k = int(*r.top_k);
    if (r.repetition_penalty) s.repeat_penalty = float(*r.repetition_penalty);
    if (r.seed) s.seed = *r.seed;
    if (Status st = validate(s); !st.ok()) return ApiError::invalid("", st.error().message());
    gp.ignore_eog = r.ignore_eos;
    return gp;
}

bool ServeBackend::speculate(const server::GenerationRequest& r) const {
    if (setup_.drafters.empty()) return false;
    if (!r.speculative) return true;
    return r.speculative->type != "none" && r.speculative->draft_max.value_or(1) != 0;
}

ApiResult<std::vector<int32_t>> ServeBackend::tokenize(const server::TokenizeRequest& request) const {
    return setup_.tokenizer->encode(request.content, request.add_special, request.parse_special);
}

std::string ServeBackend::token_piece(int32_t id) const { return setup_.tokenizer->token_to_piece(id); }

ApiResult<std::string> ServeBackend::detokenize(const server::DetokenizeRequest& request) const {
    const int32_t n_vocab = setup_.tokenizer->n_vocab();
    for (size_t i = 0; i < request.tokens.size(); ++i)
        if (request.tokens[i] >= n_vocab)
            return ApiError::invalid(fmt::format("tokens[{}]", i),
                                     fmt::format("token {} is outside the vocabulary of {} tokens", request.tokens[i],
                                                 n_vocab));
    return setup_.tokenizer->decode(request.tokens);
}

Result<std::vector<DrafterSlot>> ServeBackend::drafters_for(const server::GenerationRequest& r) const {
    if (!speculate(r)) return std::vector<DrafterSlot>{};
    return request_drafters(setup_.drafters, setup_.per_request, r.speculative ? r.speculative->type : std::string());
}

namespace {

// What the engine thread hands to the HTTP worker of one request.
struct Channel {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::pair<std::string, std::vector<server::TokenLogprob>>> pieces;
    std::optional<SessionResult> result;
    std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace

ApiResult<server::Outcome> ServeBackend::run(const server::Job& job, const server::TextSink& on_text) {
    auto params = generate_params(job.request);
    if (!params.ok()) return params.error();
    auto drafters = drafters_for(job.request);
    if (!drafters.ok()) return server_error(drafters.error());

    auto ch = std::make_shared<Channel>();
    SessionRequest sr;
    sr.prompt = job.prompt;
    sr.params = std::move(*params);
    sr.spec = setup_.spec;
    if (job.request.speculative && job.request.speculative->draft_max)
        sr.spec.draft_max = int(*job.request.speculative->draft_max);
    sr.drafters = std::move(*drafters);
    sr.cancel = ch->cancel;
    const bool want_logprobs = job.request.logprobs;
    if (want_logprobs) sr.logprobs = int32_t(job.request.top_logprobs);

    // Engine thread: end-of-turn tokens close the reply unseen (as OpenAI's API); stop
    // strings hold text back; logprobs travel with the text their tokens released.
    auto stops = std::make_shared<server::StopMatcher>(job.request.stop);
    auto pending_lp = std::make_shared<std::vector<server::TokenLogprob>>();
    const bool ignore_eog = sr.params.ignore_eog;
    const Tokenizer* tok = setup_.tokenizer;
    const EndOfTurnPieces* eot = &end_of_turn_pieces_;
    auto deliver = [ch](std::string text, std::vector<server::TokenLogprob> lp) {
        if (text.empty() && lp.empty()) return;
        std::lock_guard lock(ch->mutex);
        ch->pieces.emplace_back(std::move(text), std::move(lp));
        ch->cv.notify_all();
    };
    sr.on_token = [=](int32_t id, std::string_view piece, const TokenLogprobs* lp) {
        if (stops->stopped()) return false;
        const std::string p(piece);
        const bool end_of_turn = id >= 0 && !ignore_eog && eot->contains(tok->token_to_piece(id));
        if (lp && !end_of_turn) {
            server::TokenLogprob t;
            t.token = tok->token_to_piece(id);
            t.logprob = lp->logprob;
            for (const auto& [alt, v] : lp->top) t.top.push_back({tok->token_to_piece(alt), v});
            pending_lp->push_back(std::move(t));
        }
        if (end_of_turn) return true;
        std::string shown = stops->push(p);
        if (!shown.empty() || stops->stopped()) {
            deliver(std::move(shown), std::move(*pending_lp));
            pending_lp->clear();
        }
        return !stops->stopped();
    };
    sr.on_done = [=](const SessionResult& res) {
        if (!stops->stopped()) deliver(stops->flush(), std::move(*pending_lp));
        std::lock_guard lock(ch->mutex);
        ch->result = res;
        ch->cv.notify_all();
    };
    {
        std::lock_guard lock(mutex_);
        if (quit_) return server_error(Error("the server is shutting down"));
        inbox_.push_back(std::move(sr));
    }
    wake_.notify_all();

    // This worker streams; the client's writes never hold up the engine.
    bool client_gone = false, timed_out = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(job.time_limit_s);
    while (true) {
        std::pair<std::string, std::vector<server::TokenLogprob>> piece;
        {
            std::unique_lock lock(ch->mutex);
            const auto ready = [&] { return !ch->pieces.empty() || ch->result; };
            if (job.time_limit_s && !timed_out) {
                if (!ch->cv.wait_until(lock, deadline, ready)) {
                    // past the limit: the engine ends the session at its next step, and what
                    // it made so far is the answer
                    timed_out = true;
                    ch->cancel->store(true);
                    lock.unlock();
                    wake_.notify_all();
                    continue;
                }
            } else {
                ch->cv.wait(lock, ready);
            }
            if (ch->pieces.empty()) break;
            piece = std::move(ch->pieces.front());
            ch->pieces.pop_front();
        }
        if (client_gone) continue;
        if (!on_text(piece.first, want_logprobs ? &piece.second : nullptr)) {
            client_gone = true;
            ch->cancel->store(true);
            wake_.notify_all();
        }
    }
    const SessionResult& res = *ch->result;
    if (res.stop_reason == StopReason::error) return server_error(Error(res.error));
    server::Outcome out;
    out.finish_reason = stops->stopped() ? "stop" : finish_reason(res.stop_reason);
    if (timed_out && !stops->stopped() && res.stop_reason == StopReason::cancelled) {
        out.finish_reason = "length";
        out.timed_out = true;
    }
    out.usage.prompt_tokens = job.prompt.size();
    out.usage.completion_tokens = res.tokens.size();
    out.usage.cached_tokens = res.n_cached;
    out.drafted = res.spec.drafted;
    out.accepted = res.spec.accepted;
    return out;
}

}  // namespace tdm::cli
