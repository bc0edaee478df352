// SPDX-License-Identifier: Apache-2.0
// host/cli/serve_backend.cpp
#include "cli/serve_backend.h"

#include "engine/continuation.h"
#include "server/stop_strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <limits>

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

std::string finish_reason(const std::string& stop_reason) {
    return stop_reason == "length" || stop_reason == "context" ? "length" : "stop";
}

}  // namespace

Result<std::unique_ptr<ServeBackend>> ServeBackend::create(Setup setup) {
    if (!setup.runner) return Error("serve: no model");
    if (!setup.tokenizer) return Error("serve needs a model with a tokenizer");
    std::unique_ptr<ServeBackend> b(new ServeBackend(std::move(setup)));
    b->end_of_turn_pieces_ = EndOfTurnPieces(*b->setup_.tokenizer);
    b->seq_ = TDM_TRY(b->setup_.runner->kv().add_sequence());
    return b;
}

uint32_t ServeBackend::context_tokens() const { return setup_.runner->kv().capacity_tokens(); }

ApiResult<server::Job> ServeBackend::prepare(server::GenerationRequest request) const {
    const Tokenizer& tok = *setup_.tokenizer;
    // The engine does not hand out per-token distributions yet: refused, not ignored.
    if (request.logprobs) return ApiError::invalid("logprobs", "log-probabilities are not implemented by this server yet");
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

ApiResult<server::Outcome> ServeBackend::run(const server::Job& job,
                                             const std::function<bool(std::string_view)>& on_text) {
    auto params = generate_params(job.request);
    if (!params.ok()) return params.error();
    GenerateParams gp = std::move(*params);

    KvPool& kv = setup_.runner->kv();
    const bool spec = speculate(job.request);
    std::vector<Drafter*> drafters;
    if (spec) {
        const std::string& only = job.request.speculative ? job.request.speculative->type : std::string();
        for (Drafter* d : setup_.drafters)
            if (only.empty() || d->name() == only) drafters.push_back(d);
    }
    const uint32_t n_cached = resumable_prefix(kv, seq_, kv_tokens_, job.prompt, drafters);
    // Until generation returns, the KV holds no more than a later request may rely on.
    kv_tokens_.resize(n_cached);
    if (Status st = kv.truncate(seq_, n_cached); !st.ok()) return server_error(st.error());
    gp.n_cached = n_cached;

    std::atomic<bool> stop{false};
    gp.cancel = &stop;
    server::StopMatcher stops(job.request.stop);
    bool client_gone = false;
    const auto show = [&](std::string_view text) {
        if (text.empty() || client_gone) return;
        if (!on_text(text)) {
            client_gone = true;
            stop = true;
        }
    };
    // End-of-turn tokens close the reply; clients do not read them (as OpenAI's API).
    auto piece_out = [&](const std::string& piece) {
        if (stops.stopped()) return;
        if (!gp.ignore_eog && end_of_turn_pieces_.contains(piece)) return;
        show(stops.push(piece));
        if (stops.stopped()) stop = true;
    };

    GenerateResult gen;
    server::Outcome out;
    if (!spec) {
        auto r = generate(*setup_.runner, setup_.tokenizer, seq_, job.prompt, gp, piece_out);
        if (!r.ok()) return server_error(r.error());
        gen = std::move(*r);
    } else {
        SpecParams sp = setup_.spec;
        if (job.request.speculative && job.request.speculative->draft_max)
            sp.draft_max = int(*job.request.speculative->draft_max);
        auto r = generate_speculative(*setup_.runner, setup_.tokenizer, seq_, job.prompt, gp, drafters, sp, piece_out);
        if (!r.ok()) return server_error(r.error());
        gen = std::move(r->gen);
        out.drafted = r->stats.drafted;
        out.accepted = r->stats.accepted;
    }
    if (!stops.stopped()) show(stops.flush());

    std::vector<int32_t> all = job.prompt;
    all.insert(all.end(), gen.tokens.begin(), gen.tokens.end());
    all.resize(std::min<size_t>(all.size(), gen.n_kv));
    kv_tokens_ = std::move(all);

    out.finish_reason = stops.stopped() ? "stop" : finish_reason(gen.stop_reason);
    out.usage.prompt_tokens = job.prompt.size();
    out.usage.completion_tokens = gen.tokens.size();
    out.usage.cached_tokens = n_cached;
    return out;
}

}  // namespace tdm::cli
