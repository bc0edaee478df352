// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/openai_request.cpp: the server's request bodies (serve/openai_request.h) on
// arbitrary bytes: chat completions, completions, /tokenize and /detokenize, the first input
// byte choosing which. A body is either refused with a 400 whose JSON error has a message,
// or accepted with every value inside the range the parser promises.
// Seeds: tests/fuzz/corpus/openai_request/ (bodies as the official clients send them).
#include "fuzz_support.h"
#include "serve/openai_request.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace tdm;
using namespace tdm::server;

namespace {

void check_error(const ApiError& e) {
    FUZZ_CHECK(e.status == 400);
    FUZZ_CHECK(!e.message.empty());
    const auto j = nlohmann::json::parse(e.to_json(), nullptr, false);
    FUZZ_CHECK(!j.is_discarded() && j["error"]["message"].is_string());
}

void check_request(const GenerationRequest& r, const RequestLimits& limits) {
    if (r.endpoint == Endpoint::chat_completions) {
        FUZZ_CHECK(!r.messages.empty() && r.messages.size() <= limits.max_messages);
        size_t bytes = 0;
        for (const ChatMessage& m : r.messages) {
            FUZZ_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant");
            FUZZ_CHECK(fuzz::is_valid_utf8(m.content));
            bytes += m.content.size();
        }
        FUZZ_CHECK(bytes <= limits.max_prompt_bytes);
    } else if (r.prompt_is_tokens) {
        FUZZ_CHECK(!r.prompt_tokens.empty() && r.prompt_tokens.size() <= limits.max_prompt_tokens);
        for (int32_t id : r.prompt_tokens) FUZZ_CHECK(id >= 0);
    } else {
        FUZZ_CHECK(r.prompt.size() <= limits.max_prompt_bytes && fuzz::is_valid_utf8(r.prompt));
    }
    if (r.max_tokens) FUZZ_CHECK(*r.max_tokens >= 1);
    if (r.temperature) FUZZ_CHECK(std::isfinite(*r.temperature) && *r.temperature >= 0);
    if (r.top_p) FUZZ_CHECK(*r.top_p >= 0 && *r.top_p <= 1);
    if (r.min_p) FUZZ_CHECK(*r.min_p >= 0 && *r.min_p <= 1);
    if (r.top_k) FUZZ_CHECK(*r.top_k >= 0);
    if (r.repetition_penalty) FUZZ_CHECK(std::isfinite(*r.repetition_penalty) && *r.repetition_penalty > 0);
    FUZZ_CHECK(r.stop.size() <= limits.max_stop);
    for (const std::string& s : r.stop) FUZZ_CHECK(!s.empty() && s.size() <= limits.max_stop_bytes);
    FUZZ_CHECK(r.top_logprobs <= limits.max_top_logprobs);
    FUZZ_CHECK(r.logprobs || r.top_logprobs == 0);
    FUZZ_CHECK(!r.include_usage || r.stream);
    if (r.speculative && r.speculative->draft_max) FUZZ_CHECK(*r.speculative->draft_max <= 256);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    RequestLimits limits;
    limits.max_prompt_bytes = 4096;  // small, so that the fuzzer reaches the limits
    limits.max_prompt_tokens = 64;
    limits.max_messages = 8;
    limits.max_stop = 4;
    limits.max_stop_bytes = 16;
    const std::string_view body = fuzz::as_text(data + 1, size - 1);
    switch (data[0] % 4) {
        case 0:
        case 1: {
            const Endpoint endpoint = data[0] % 4 == 0 ? Endpoint::chat_completions : Endpoint::completions;
            auto r = parse_generation_request(endpoint, body, limits);
            if (r.ok()) {
                FUZZ_CHECK(r->endpoint == endpoint);
                check_request(*r, limits);
            } else {
                check_error(r.error());
            }
            break;
        }
        case 2: {
            auto r = parse_tokenize_request(body, limits);
            if (r.ok()) FUZZ_CHECK(r->content.size() <= limits.max_prompt_bytes && fuzz::is_valid_utf8(r->content));
            else check_error(r.error());
            break;
        }
        default: {
            auto r = parse_detokenize_request(body, limits);
            if (r.ok()) {
                FUZZ_CHECK(r->tokens.size() <= limits.max_prompt_tokens);
                for (int32_t id : r->tokens) FUZZ_CHECK(id >= 0);
            } else {
                check_error(r.error());
            }
            break;
        }
    }
    return 0;
}
