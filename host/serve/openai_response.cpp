// SPDX-License-Identifier: Apache-2.0
// host/serve/openai_response.cpp
#include "serve/openai_response.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace tdm::server {

using json = nlohmann::json;

namespace {

// JSON has no -inf; OpenAI reports a token the distribution excludes as -9999.
double finite_logprob(double lp) { return std::isfinite(lp) ? std::max(lp, -9999.0) : -9999.0; }

json byte_values(std::string_view s) {
    json bytes = json::array();
    for (char c : s) bytes.push_back(int(static_cast<unsigned char>(c)));
    return bytes;
}

json chat_logprobs(const std::vector<TokenLogprob>& tokens) {
    json content = json::array();
    for (const TokenLogprob& t : tokens) {
        json top = json::array();
        for (const TopLogprob& alt : t.top)
            top.push_back({{"token", alt.token}, {"logprob", finite_logprob(alt.logprob)}, {"bytes", byte_values(alt.token)}});
        content.push_back({{"token", t.token},
                           {"logprob", finite_logprob(t.logprob)},
                           {"bytes", byte_values(t.token)},
                           {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}};
}

// The legacy completions form: parallel arrays, alternatives as {token: logprob} maps.
json completion_logprobs(const std::vector<TokenLogprob>& tokens, size_t text_offset) {
    json text = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenLogprob& t : tokens) {
        text.push_back(t.token);
        if (t.unpredicted) {
            lps.push_back(nullptr);
            tops.push_back(nullptr);
        } else {
            lps.push_back(finite_logprob(t.logprob));
            json top = json::object();
            for (const TopLogprob& alt : t.top) top[alt.token] = finite_logprob(alt.logprob);
            tops.push_back(std::move(top));
        }
        offsets.push_back(text_offset);
        text_offset += t.token.size();
    }
    return {{"tokens", std::move(text)}, {"token_logprobs", std::move(lps)}, {"top_logprobs", std::move(tops)},
            {"text_offset", std::move(offsets)}};
}

json logprobs_field(Endpoint endpoint, const ChoiceText& choice) {
    if (!choice.logprobs) return nullptr;
    return endpoint == Endpoint::chat_completions ? chat_logprobs(*choice.logprobs)
                                                  : completion_logprobs(*choice.logprobs, choice.text_offset);
}

json finish_field(std::string_view reason) { return reason.empty() ? json(nullptr) : json(reason); }

json usage_field(const Usage& u) {
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

// llama-server's "timings" beside the usage: here what a request's images cost.
json timings_field(const Usage& u) { return {{"images", u.images}, {"image_encode_ms", u.image_encode_ms}}; }

json envelope(Endpoint endpoint, const ResponseMeta& meta, bool chunk) {
    const char* object = endpoint == Endpoint::completions ? "text_completion"
                         : chunk                           ? "chat.completion.chunk"
                                                           : "chat.completion";
    return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string completion_body(Endpoint endpoint, const ResponseMeta& meta, const ChoiceText& choice,
                            const Usage& usage) {
    return completion_body(endpoint, meta, std::span<const ChoiceText>(&choice, 1), usage);
}

std::string completion_body(Endpoint endpoint, const ResponseMeta& meta, std::span<const ChoiceText> choices,
                            const Usage& usage) {
    json list = json::array();
    for (const ChoiceText& choice : choices) {
        json c = {{"index", choice.index},
                  {"logprobs", logprobs_field(endpoint, choice)},
                  {"finish_reason", finish_field(choice.finish_reason)}};
        if (endpoint == Endpoint::chat_completions) {
            const bool calls = choice.tool_calls && !choice.tool_calls->empty();
            c["message"] = {{"role", "assistant"},
                            {"content", calls && choice.text.empty() ? json(nullptr) : json(choice.text)}};
            if (calls && choice.function_call) {
                const ToolCallOut& call = choice.tool_calls->front();
                c["message"]["function_call"] = {{"name", call.name}, {"arguments", call.arguments}};
            } else if (calls) {
                json tool_calls = json::array();
                for (const ToolCallOut& call : *choice.tool_calls)
                    tool_calls.push_back({{"id", call.id},
                                          {"type", "function"},
                                          {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
                c["message"]["tool_calls"] = std::move(tool_calls);
            }
        } else {
            c["text"] = choice.text;
        }
        list.push_back(std::move(c));
    }
    json body = envelope(endpoint, meta, false);
    body["choices"] = std::move(list);
    body["usage"] = usage_field(usage);
    if (usage.images) body["timings"] = timings_field(usage);
    return dump(body);
}

std::string chunk_body(Endpoint endpoint, const ResponseMeta& meta, const ChoiceText& choice, bool first) {
    json c = {{"index", choice.index}, {"logprobs", logprobs_field(endpoint, choice)}, {"finish_reason", finish_field(choice.finish_reason)}};
    if (endpoint == Endpoint::chat_completions) {
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!choice.text.empty() || choice.finish_reason.empty()) delta["content"] = choice.text;
        c["delta"] = std::move(delta);
    } else {
        c["text"] = choice.text;
    }
    json body = envelope(endpoint, meta, true);
    body["choices"] = json::array({std::move(c)});
    return dump(body);
}

std::string tool_call_chunk_body(const ResponseMeta& meta, uint32_t choice, size_t index, const ToolCallOut* header,
                                 std::string_view arguments, bool first) {
    json call = {{"index", index}};
    if (header) {
        call["id"] = header->id;
        call["type"] = "function";
        call["function"] = {{"name", header->name}, {"arguments", arguments}};
    } else {
        call["function"] = {{"arguments", arguments}};
    }
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    delta["tool_calls"] = json::array({std::move(call)});
    json body = envelope(Endpoint::chat_completions, meta, true);
    body["choices"] =
        json::array({{{"index", choice}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
    return dump(body);
}

std::string function_call_chunk_body(const ResponseMeta& meta, uint32_t choice, const std::string* name,
                                     std::string_view arguments, bool first) {
    json call = json::object();
    if (name) call["name"] = *name;
    call["arguments"] = arguments;
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (name) delta["content"] = nullptr;
    delta["function_call"] = std::move(call);
    json body = envelope(Endpoint::chat_completions, meta, true);
    body["choices"] =
        json::array({{{"index", choice}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
    return dump(body);
}

std::string usage_chunk_body(Endpoint endpoint, const ResponseMeta& meta, const Usage& usage) {
    json body = envelope(endpoint, meta, true);
    body["choices"] = json::array();
    body["usage"] = usage_field(usage);
    if (usage.images) body["timings"] = timings_field(usage);
    return dump(body);
}

std::string sse_event(std::string_view json_text) {
    std::string out;
    out.reserve(json_text.size() + 8);
    out += "data: ";
    out += json_text;
    out += "\n\n";
    return out;
}

}  // namespace tdm::server
