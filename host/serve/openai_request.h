/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/openai_request.h: the bodies of the server's requests, parsed and checked:
// POST /v1/chat/completions and /v1/completions (OpenAI's API as its official clients send
// it, plus the extensions of vLLM and llama-server that users expect), and llama-server's
// /tokenize and /detokenize.
//
// Everything here is about the request alone: a body that parses is well formed and every
// value is in its range. What depends on the served model (the model name, the context
// length, token ids inside the vocabulary, which drafters exist) is checked by the server.
// Fields the server does not implement are refused by name when they would change the
// result (tools, echo, best_of other than n), never silently ignored; fields that change nothing (user, metadata, store) are ignored, as
// OpenAI's own server ignores what it does not know.
#pragma once

#include "serve/api_error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::server {

enum class Endpoint { chat_completions, completions };

// Bounds on what one request may ask for, so that a request's size decides nothing but its
// own refusal (the HTTP layer bounds the body itself).
struct RequestLimits {
    size_t max_prompt_bytes = size_t(4) << 20;   // a text prompt, or all messages together
    size_t max_prompt_tokens = size_t(1) << 20;  // a prompt given as token ids
    size_t max_messages = 4096;
    size_t max_stop = 16;            // stop strings
    size_t max_stop_bytes = 1024;    // bytes of each stop string
    uint32_t max_choices = 16;       // n
    size_t max_logit_bias = 1024;    // logit_bias entries
    uint32_t max_top_logprobs = 20;  // alternatives reported per token
    int max_depth = 64;              // JSON nesting
};

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant" (OpenAI's "developer" becomes "system")
    std::string content;
};

// tandem's extension: the drafter of this request ("speculative": {"type": "mtp",
// "draft_max": 4, "fixed": true}); the server's configuration gives the defaults.
struct SpeculativeChoice {
    std::string type;                  // a --spec-type name; "" = the server's default; "none" = off
    std::optional<uint32_t> draft_max;  // the controller's limit (the length itself when fixed); 0 = off
    std::optional<bool> fixed;         // true: draft draft_max every round; false: the goodput controller
};

struct GenerationRequest {
    Endpoint endpoint = Endpoint::chat_completions;
    std::string model;  // "" = whatever the server serves

    std::vector<ChatMessage> messages;   // chat_completions
    std::string prompt;                  // completions, as text
    std::vector<int32_t> prompt_tokens;  // completions, as token ids
    bool prompt_is_tokens = false;

    // Unset: the server's defaults. max_tokens unset: until the end of generation or of
    // the context. top_k 0 = off.
    std::optional<uint64_t> max_tokens;
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;
    std::optional<uint64_t> seed;  // unset (or -1 in the request): a random seed
    std::optional<double> presence_penalty, frequency_penalty;  // OpenAI's, -2 .. 2
    std::vector<std::pair<int32_t, double>> logit_bias;         // token id, bias -100 .. 100; ids unchecked here
    // Choices to generate from the one prompt (best_of, when given, must equal it).
    uint32_t n = 1;
    std::vector<std::string> stop;

    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
    bool logprobs = false;
    uint32_t top_logprobs = 0;
    // vLLM and llama-server: generate past end-of-generation tokens; unset: the server's
    // --ignore-eos.
    std::optional<bool> ignore_eos;
    std::optional<SpeculativeChoice> speculative;
};

ApiResult<GenerationRequest> parse_generation_request(Endpoint endpoint, std::string_view body,
                                                      const RequestLimits& limits = {});

// llama-server's POST /tokenize: {"content": "...", "add_special": false,
// "parse_special": true, "with_pieces": false}.
struct TokenizeRequest {
    std::string content;
    bool add_special = false;
    bool parse_special = true;
    bool with_pieces = false;
};

ApiResult<TokenizeRequest> parse_tokenize_request(std::string_view body, const RequestLimits& limits = {});

// llama-server's POST /detokenize: {"tokens": [1, 2, 3]}.
struct DetokenizeRequest {
    std::vector<int32_t> tokens;
};

ApiResult<DetokenizeRequest> parse_detokenize_request(std::string_view body, const RequestLimits& limits = {});

}  // namespace tdm::server
