// SPDX-License-Identifier: Apache-2.0
// host/serve/serve_backend.cpp
#include "serve/serve_backend.h"

#include "serve/constraint_request.h"
#include "serve/drafter_choice.h"
#include "serve/request_channel.h"
#include "serve/tool_call_grammar.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <limits>
#include <thread>

namespace tdm::server {

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

// tool_choice "required" or a named function: the output is held to the family's call
// syntax around the allowed tools' parameter schemas (serve/tool_call_grammar.h), so the
// reply is a call whose arguments parse against the tool's schema, as vLLM does.
std::optional<ApiError> force_tool_call(GenerationRequest& request, ToolCallFormat format) {
    const ToolChoiceMode mode = request.tool_choice.mode;
    if (mode != ToolChoiceMode::required && mode != ToolChoiceMode::named) return std::nullopt;
    if (request.constraint.any())
        return ApiError::invalid("tool_choice", fmt::format("a 'tool_choice' of 'required' or a named function "
                                                            "constrains the output itself; it cannot be combined "
                                                            "with '{}'",
                                                            request.constraint.origin));
    auto gbnf = tool_call_grammar_gbnf(request.tools, request.tool_choice, request.parallel_tool_calls, format,
                                       [](const nlohmann::json& schema, std::string_view root) -> ApiResult<std::string> {
                                           auto rules = json_schema_rules(schema, root);
                                           if (!rules.ok()) return ApiError::invalid("tools", rules.error().message());
                                           return std::move(*rules);
                                       });
    if (!gbnf.ok()) return gbnf.error();
    request.constraint = {ConstraintSpec::Kind::grammar, std::move(*gbnf), "tool_choice"};
    return std::nullopt;
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
    b->gauges_.kv_block_size = b->setup_.runner->kv().config().block_size;
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
        std::deque<Arrival> arrived;
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
            for (Arrival& a : arrived)
                if (a.session.on_done) a.session.on_done(gone);
            engine_->abort_all(gone.error);
            break;
        }
        for (Arrival& a : arrived) admit(a);
        engine_->step();
        EngineGauges g;
        g.running = engine_->running();
        g.waiting = engine_->waiting();
        g.kv_blocks_free = engine_->kv_blocks_free();
        g.kv_blocks_used = engine_->kv_blocks_total() - g.kv_blocks_free;
        g.kv_blocks_shared = engine_->kv_blocks_shared();
        g.kv_block_size = setup_.runner->kv().config().block_size;
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

// The engine thread: a session joins the engine, its images encoded first (the device is
// this thread's); a session whose images cannot be encoded, or whose client has gone while it
// waited, ends here.
void ServeBackend::admit(Arrival& a) {
    if (a.images) {
        const auto end = [&](StopReason reason, std::string error) {
            SessionResult ended;
            ended.stop_reason = reason;
            ended.error = std::move(error);
            if (a.session.on_done) a.session.on_done(ended);
        };
        if (a.session.cancel && a.session.cancel->load()) return end(StopReason::cancelled, "");
        auto ms = encode_session_images(setup_.images, *setup_.tokenizer, *a.images, a.session);
        if (!ms.ok()) return end(StopReason::error, "encoding the request's images failed: " + ms.error().message());
        *a.encode_ms = *ms;
    }
    engine_->add(std::move(a.session));
}

EngineGauges ServeBackend::gauges() const {
    std::lock_guard lock(mutex_);
    return gauges_;
}

uint32_t ServeBackend::context_tokens() const { return setup_.runner->kv().capacity_tokens(); }

ApiResult<Job> ServeBackend::prepare(GenerationRequest request) const {
    const Tokenizer& tok = *setup_.tokenizer;
    Job job;
    if (request.endpoint == Endpoint::chat_completions) {
        if (!setup_.chat_template)
            return ApiError::invalid("messages", "this model has no chat template: use /v1/completions, or start "
                                                 "the server with --chat-template NAME");
        std::vector<tdm::ChatMessage> messages;
        if (auto refused = refuse_images(request, setup_.images)) return *refused;
        const std::string place =
            setup_.images.encoder ? image_place_text(tok, setup_.images.encoder->info()) : std::string();
        for (const ChatMessage& m : request.messages)
            messages.push_back({m.role, text_with_image_places(m, place), m.tool_calls, m.tool_call_id, m.name});
        // tool_choice "none": the tools are not shown, so the model has nothing to call
        // (docs/SERVER.md "Tool calls").
        const bool offer = !request.tools.empty() && request.tool_choice.mode != ToolChoiceMode::none;
        if (offer && setup_.chat_template->parts().tool_format == ToolCallFormat::none)
            return ApiError::invalid("tools", fmt::format("chat template '{}' renders no tools",
                                                          setup_.chat_template->name()));
        auto text = setup_.chat_template->apply(messages, true, offer ? request.tools : std::vector<ToolDefinition>{});
        if (!text.ok()) return ApiError::invalid("messages", text.error().message());
        if (offer) {
            job.tool_format = setup_.chat_template->parts().tool_format;
            // The model hands over to the tool results there; stop if its vocabulary does not.
            if (const std::string_view marker = tool_results_marker(job.tool_format); !marker.empty())
                request.stop.emplace_back(marker);
            if (auto refused = force_tool_call(request, job.tool_format)) return *refused;
        }
        job.prompt = tok.encode(*text, true);  // as `tandem run -p TEXT` tokenizes its prompt
        if (auto refused = prepare_images(request, setup_.images, tok, job)) return *refused;
    } else if (request.prompt_is_tokens) {
        for (size_t i = 0; i < request.prompt_tokens.size(); ++i)
            if (request.prompt_tokens[i] >= tok.n_vocab())
                return ApiError::invalid(fmt::format("prompt[{}]", i),
                                         fmt::format("token {} is outside the vocabulary of {} tokens",
                                                     request.prompt_tokens[i], tok.n_vocab()));
        job.prompt = request.prompt_tokens;
        if (request.echo) job.echo = tok.decode(request.prompt_tokens);
    } else {
        job.prompt = tok.encode(request.prompt, true);
        if (request.echo) job.echo = request.prompt;
    }
    const std::string prompt_field = request.endpoint == Endpoint::chat_completions ? "messages" : "prompt";
    if (job.prompt.empty()) return ApiError::invalid(prompt_field, "the prompt is empty");

    // OpenAI's and vLLM's rule: a request that cannot fit the context is refused whole,
    // not cut short silently.
    const uint64_t context = context_tokens();
    const uint64_t prompt_size = expanded_prompt_size(job);  // an image counts its rows
    const uint64_t wanted = prompt_size + request.max_tokens.value_or(1);
    if (prompt_size >= context || wanted > context) {
        ApiError e = ApiError::invalid(
            request.max_tokens && prompt_size < context ? "max_tokens" : prompt_field,
            request.max_tokens ? fmt::format("this model's context is {} tokens; the prompt is {} and max_tokens asks "
                                             "for {} more",
                                             context, prompt_size, *request.max_tokens)
                               : fmt::format("this model's context is {} tokens and the prompt is {}", context,
                                             prompt_size));
        e.code = "context_length_exceeded";
        return e;
    }
    // Each choice fits its own context (above); together they must fit the KV pool, where
    // they share the prompt's blocks but not the tokens each generates.
    const KvPool& kv = setup_.runner->kv();
    const uint64_t pool = uint64_t(kv.n_blocks()) * kv.config().block_size;
    const uint64_t sequences = generated_sequences(request);
    if (sequences > 1 && request.max_tokens && prompt_size + sequences * *request.max_tokens > pool) {
        const bool ranked = sequences > request.n;
        ApiError e = ApiError::invalid(
            ranked ? "best_of" : "n",
            fmt::format("the KV cache holds {} tokens; the prompt is {} and {} = {} sequences of max_tokens {} ask "
                        "for {} more",
                        pool, prompt_size, ranked ? "best_of" : "n", sequences, *request.max_tokens,
                        sequences * *request.max_tokens));
        e.code = "context_length_exceeded";
        return e;
    }
    const uint32_t n_vocab = setup_.runner->model().info().n_vocab;
    for (const auto& [id, bias] : request.logit_bias)
        if (uint32_t(id) >= n_vocab)
            return ApiError::invalid(fmt::format("logit_bias.{}", id),
                                     fmt::format("token {} is outside the vocabulary of {} tokens", id, n_vocab));
    if (request.speculative && !request.speculative->type.empty() && request.speculative->type != "none")
        if (auto picks = choose_drafters(setup_.drafters, setup_.drafter_types, request.speculative->type); !picks.ok())
            return ApiError::invalid("speculative.type", picks.error().message());
    if (auto gp = generate_params(request); !gp.ok()) return gp.error();
    auto constraint = build_constraint(request.constraint, setup_.constraints);
    if (!constraint.ok()) return constraint.error();
    job.constraint = std::move(*constraint);
    job.request = std::move(request);
    return job;
}

ApiResult<GenerateParams> ServeBackend::generate_params(const GenerationRequest& r) const {
    GenerateParams gp = setup_.defaults;
    if (r.max_tokens) gp.max_tokens = int32_t(std::min<uint64_t>(*r.max_tokens, std::numeric_limits<int32_t>::max()));
    SamplerParams& s = gp.sampling;
    if (r.temperature) s.temperature = float(*r.temperature);
    if (r.top_p) s.top_p = float(*r.top_p);
    if (r.min_p) s.min_p = float(*r.min_p);
    if (r.top_k) s.top_k = int(*r.top_k);
    if (r.repetition_penalty) s.repeat_penalty = float(*r.repetition_penalty);
    if (r.seed) s.seed = *r.seed;
    if (r.presence_penalty) s.presence_penalty = float(*r.presence_penalty);
    if (r.frequency_penalty) s.frequency_penalty = float(*r.frequency_penalty);
    if (!r.logit_bias.empty()) {  // the request's bias replaces the configured one, as its other fields do
        s.logit_bias.clear();
        for (const auto& [id, bias] : r.logit_bias) s.logit_bias.push_back({id, float(bias)});
    }
    if (Status st = validate(s); !st.ok()) return ApiError::invalid("", st.error().message());
    if (r.ignore_eos) gp.ignore_eog = *r.ignore_eos;
    return gp;
}

bool ServeBackend::speculate(const GenerationRequest& r) const {
    if (setup_.drafters.empty()) return false;
    if (!r.speculative) return true;
    return r.speculative->type != "none" && r.speculative->draft_max.value_or(1) != 0;
}

ApiResult<std::vector<int32_t>> ServeBackend::tokenize(const TokenizeRequest& request) const {
    return setup_.tokenizer->encode(request.content, request.add_special, request.parse_special);
}

std::string ServeBackend::token_piece(int32_t id) const { return setup_.tokenizer->token_to_piece(id); }

ApiResult<std::string> ServeBackend::detokenize(const DetokenizeRequest& request) const {
    const int32_t n_vocab = setup_.tokenizer->n_vocab();
    for (size_t i = 0; i < request.tokens.size(); ++i)
        if (request.tokens[i] >= n_vocab)
            return ApiError::invalid(fmt::format("tokens[{}]", i),
                                     fmt::format("token {} is outside the vocabulary of {} tokens", request.tokens[i],
                                                 n_vocab));
    return setup_.tokenizer->decode(request.tokens);
}

Result<std::vector<DrafterSlot>> ServeBackend::drafters_for(const GenerationRequest& r) const {
    if (!speculate(r)) return std::vector<DrafterSlot>{};
    std::vector<size_t> picks;  // empty: the whole chain
    if (r.speculative && !r.speculative->type.empty())
        picks = TDM_TRY(choose_drafters(setup_.drafters, setup_.drafter_types, r.speculative->type));
    return request_drafters(setup_.drafters, setup_.per_request, picks);
}

void ServeBackend::submit(std::vector<Arrival> arrivals) {
    {
        std::lock_guard lock(mutex_);
        if (!quit_) {
            for (Arrival& a : arrivals) inbox_.push_back(std::move(a));
            arrivals.clear();
        }
    }
    wake_.notify_all();
    SessionResult gone;  // the engine thread has stopped taking sessions: end them here
    gone.stop_reason = StopReason::error;
    gone.error = "the server is shutting down";
    for (Arrival& a : arrivals)
        if (a.session.on_done) a.session.on_done(gone);
}

ApiResult<std::vector<Outcome>> ServeBackend::run(const Job& job, const ChoiceSink& on_text) {
    auto params = generate_params(job.request);
    if (!params.ok()) return params.error();
    const uint32_t n = std::max(1u, generated_sequences(job.request));
    const bool want_logprobs = job.request.logprobs;
    const bool ranked = job.request.best_of > job.request.n;  // best_of ranks by the tokens' logprobs
    std::vector<Arrival> arrivals(n);
    std::vector<std::shared_ptr<RequestChannel>> channels(n);
    // written by the engine thread before on_done, read once the channel has ended
    std::vector<std::shared_ptr<double>> cumulative(n);
    // "echo" with "logprobs": the prompt tokens' logprobs, written by the engine thread as the
    // first choice's prefill computes them (its followers start after it and share its KV)
    // and read there as each choice's text begins with the echoed prompt
    std::shared_ptr<std::vector<TokenLogprob>> prompt_lp;
    if (job.request.echo && want_logprobs) {
        prompt_lp = std::make_shared<std::vector<TokenLogprob>>();
        TokenLogprob first;
        first.token = setup_.tokenizer->token_to_piece(job.prompt.front());
        first.unpredicted = true;
        prompt_lp->push_back(std::move(first));
    }
    for (uint32_t i = 0; i < n; ++i) {
        auto drafters = drafters_for(job.request);  // each choice drafts for itself
        if (!drafters.ok()) return server_error(drafters.error());
        SessionRequest& sr = arrivals[i].session;
        sr.prompt = job.prompt;
        sr.params = *params;
        sr.params.constraint = job.constraint;
        // choice i samples with seed + i: a fixed seed reproduces every choice
        if (sr.params.sampling.seed) sr.params.sampling.seed = *sr.params.sampling.seed + i;
        sr.spec = setup_.spec;
        if (job.request.speculative && job.request.speculative->draft_max)
            sr.spec.draft_max = int(*job.request.speculative->draft_max);
        if (job.request.speculative && job.request.speculative->fixed)
            sr.spec.auto_k = !*job.request.speculative->fixed;
        if (job.request.speculative && job.request.speculative->draft_tree) {
            const DraftTreeSetting& t = *job.request.speculative->draft_tree;
            sr.spec.tree = {t.steps, t.topk, t.nodes};
        }
        sr.drafters = std::move(*drafters);
        if (want_logprobs) sr.logprobs = int32_t(job.request.top_logprobs);
        else if (ranked) sr.logprobs = 0;
        channels[i] = std::make_shared<RequestChannel>(job.request.stop, sr.params.ignore_eog, *setup_.tokenizer,
                                                       end_of_turn_pieces_);
        RequestChannel::connect(channels[i], sr);
        if (job.request.echo) channels[i]->lead_with(job.echo, prompt_lp);
        if (prompt_lp && i == 0) {
            sr.prompt_logprobs = int32_t(job.request.top_logprobs);
            sr.on_prompt_logprob = [prompt_lp, tok = setup_.tokenizer](uint32_t, int32_t id, const TokenLogprobs& lp) {
                prompt_lp->push_back(response_logprob(*tok, id, lp));
            };
        }
        cumulative[i] = std::make_shared<double>(0.0);
        if (ranked)
            sr.on_token = [sum = cumulative[i], inner = std::move(sr.on_token)](int32_t id, std::string_view piece,
                                                                               const TokenLogprobs* lp) {
                if (id >= 0 && lp) *sum += lp->logprob;
                return inner(id, piece, lp);
            };
        // each choice's images are encoded for it on the engine thread, as it joins
        arrivals[i].images = job.images;
        arrivals[i].encode_ms = std::make_shared<double>(0.0);
    }
    std::vector<std::shared_ptr<double>> encode_ms;
    for (const Arrival& a : arrivals) encode_ms.push_back(a.encode_ms);
    if (n > 1) {
        // The other choices follow the first once its prompt is in the KV (its first token,
        // or its end, whichever comes first), on the engine thread.
        struct Followers {
            std::vector<Arrival> arrivals;
            bool sent = false;
        };
        auto followers = std::make_shared<Followers>();
        followers->arrivals.assign(std::make_move_iterator(arrivals.begin() + 1),
                                   std::make_move_iterator(arrivals.end()));
        arrivals.resize(1);
        const auto release = [this, followers] {
            if (followers->sent) return;
            followers->sent = true;
            submit(std::move(followers->arrivals));
        };
        SessionRequest& first = arrivals[0].session;
        first.on_token = [release, inner = std::move(first.on_token)](int32_t id, std::string_view piece,
                                                                      const TokenLogprobs* lp) {
            release();
            return inner(id, piece, lp);
        };
        first.on_done = [release, inner = std::move(first.on_done)](const SessionResult& r) {
            inner(r);
            release();
        };
    }
    submit(std::move(arrivals));

    std::vector<RequestChannel::Ended> ended(n);
    const auto stream_choice = [&](uint32_t i) {
        ended[i] = channels[i]->stream(
            [&on_text, i](std::string_view text, const std::vector<TokenLogprob>* lp) { return on_text(i, text, lp); },
            want_logprobs, job.time_limit_s, job.client_gone, [this] { wake_.notify_all(); });
    };
    {
        std::vector<std::jthread> workers;  // joined however this block is left
        for (uint32_t i = 1; i < n; ++i) workers.emplace_back(stream_choice, i);
        stream_choice(0);
    }

    std::vector<Outcome> outcomes;
    for (uint32_t i = 0; i < n; ++i) {
        const RequestChannel::Ended& e = ended[i];
        const SessionResult& res = e.result;
        if (res.stop_reason == StopReason::error) return server_error(Error(res.error));
        Outcome out;
        out.finish_reason = e.stopped ? "stop" : finish_reason(res.stop_reason);
        if (e.timed_out && !e.stopped && res.stop_reason == StopReason::cancelled) {
            out.finish_reason = "length";
            out.timed_out = true;
        }
        out.usage.prompt_tokens = expanded_prompt_size(job);
        out.usage.images = job.images ? uint32_t(job.images->size()) : 0;
        out.usage.image_encode_ms = *encode_ms[i];  // written before the session began, so before it ended
        out.usage.completion_tokens = res.tokens.size();
        out.usage.cached_tokens = res.n_cached;
        out.drafted = res.spec.drafted;
        out.accepted = res.spec.accepted;
        out.controller = res.spec.controller;
        out.measured_speedup = res.spec.measured_speedup();
        out.cumulative_logprob = *cumulative[i];
        outcomes.push_back(std::move(out));
    }
    return outcomes;
}

}  // namespace tdm::server
