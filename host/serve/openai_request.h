/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/openai_request.h: the bodies of the server's requests, parsed and checked:
// POST /v1/chat/completions and /v1/completions (OpenAI's API as its official clients send
// it, plus the extensions of vLLM and llama-server that users expect), and llama-server's
// /tokenize and /detokenize.
//
// Everything here is about the request alone: a body that parses is well formed and every
// value is in its range. What depends on the served model (the model name, the context
// length, token ids inside the vocabulary, which drafters exist) is checked by the server.
// Tool definitions, tool_choice and tool turns are read in openai_tools.cpp.
// Fields the server does not implement are refused by name when they would change the
// result (suffix), never silently ignored; fields that change nothing
// (user, metadata, store) are ignored, as OpenAI's own server ignores what it does not know.
#pragma once

#include "config/config.h"
#include "image/image.h"
#include "serve/api_error.h"
#include "serve/constraint_spec.h"
#include "tokenizer/tool_calls.h"

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
    // image_url content parts (serve/image_url.h) and the pages of file parts
    // (serve/file_part.h): how many images in one request, their bytes in all (after
    // base64), and the image reader's limits (pixels, from the header)
    size_t max_images = 16;
    size_t max_image_bytes = size_t(20) << 20;
    ImageLimits image;
    double pdf_dpi = 200;  // file parts' PDF pages are rendered at this resolution (ocr.pdf_dpi)
    size_t max_constraint_bytes = size_t(1) << 20;  // a grammar, or a JSON schema as text
    size_t max_tools = 128;                    // functions in "tools"
    size_t max_tools_bytes = size_t(1) << 20;  // all of "tools" as JSON text
};

// An image of a user message (an image_url content part, or a page of a file part), decoded.
struct MessageImage {
    size_t offset = 0;  // where it sits in the message's text: before content[offset]
    Image image;
};

struct ChatMessage {
    // "system", "user", "assistant" or "tool" ("developer" becomes "system", the deprecated
    // "function" a "tool" result with its name)
    std::string role;
    std::string content;
    std::vector<MessageImage> images;  // in order of their offsets
    std::vector<ToolCall> tool_calls{};  // assistant: the calls it made (content may be null)
    std::string tool_call_id{};          // tool: the call this result answers
    std::string name{};                  // tool: the function's name, when given
};

// tool_choice: "none" (tools are neither shown to the model nor parsed), "auto" (the
// model may call), "required" (it must call one), or one function by name.
enum class ToolChoiceMode { none, automatic, required, named };
struct ToolChoice {
    ToolChoiceMode mode = ToolChoiceMode::automatic;
    std::string name;  // named
};

// tandem's extension: the drafter of this request ("speculative": {"type": "mtp",
// "draft_max": 4, "fixed": true, "draft_tree": "4,3,12"}); the server's configuration gives
// the defaults.
struct SpeculativeChoice {
    std::string type;  // --spec-type names, comma-separated; "" = the server's default; "none" = off
    std::optional<uint32_t> draft_max;  // the controller's limit (the length itself when fixed); 0 = off
    std::optional<bool> fixed;         // true: draft draft_max every round; false: the goodput controller
    // Draft trees for this request ("STEPS,TOPK,NODES" or {steps, topk, nodes}; "none":
    // chains); nodes 0 = chains.
    std::optional<DraftTreeSetting> draft_tree;
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
    // Choices to generate from the one prompt.
    uint32_t n = 1;
    // completions: sequences to generate, of which the n with the highest cumulative
    // log-probability are returned (never streamed); 0: n. chat: only n is accepted.
    uint32_t best_of = 0;
    // completions: the prompt's text comes before each choice's text (and with logprobs, the
    // prompt tokens' logprobs before the generated ones')
    bool echo = false;
    std::vector<std::string> stop;

    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
    bool logprobs = false;
    uint32_t top_logprobs = 0;
    // vLLM and llama-server: generate past end-of-generation tokens; unset: the server's
    // --ignore-eos.
    std::optional<bool> ignore_eos;
    std::optional<SpeculativeChoice> speculative;
    // response_format json_object/json_schema, or llama-server's grammar or json_schema
    // (serve/constraint_request.h); the server builds it with its grammar engine.
    ConstraintSpec constraint;

    std::vector<ToolDefinition> tools;  // chat_completions: the functions offered
    ToolChoice tool_choice;
    bool parallel_tool_calls = true;  // false: at most one call per reply
    // The deprecated "functions" / "function_call" stood for tools / tool_choice: the reply
    // has OpenAI's legacy shape (message.function_call, finish_reason "function_call").
    bool legacy_functions = false;
};

// The sequences a request generates: n, or best_of when it asks for more.
inline uint32_t generated_sequences(const GenerationRequest& r) { return r.best_of > r.n ? r.best_of : r.n; }

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
