/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/openai_response.h: the bodies the server answers with, in the shapes OpenAI's
// clients parse: chat.completion and chat.completion.chunk, text_completion (whole and
// streamed), usage, logprobs in both the chat form and the legacy completions form, and
// the server-sent-events framing of a stream ("data: {...}\n\n" ... "data: [DONE]\n\n").
//
// Token texts may be pieces of a UTF-8 character (byte-fallback tokens); JSON strings
// cannot hold those, so a token's text replaces them with U+FFFD and its "bytes" field
// carries the exact bytes, as OpenAI does.
#pragma once

#include "serve/openai_request.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

// What every response of one request repeats.
struct ResponseMeta {
    std::string id;       // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;  // Unix seconds
    std::string model;
};

struct Usage {
    uint64_t prompt_tokens = 0;
    uint64_t completion_tokens = 0;
    uint64_t cached_tokens = 0;  // prompt tokens resumed from the KV (prompt_tokens_details)
    // The prompt's images (their rows count as prompt tokens) and the encoder's time on them;
    // with images, the response carries "timings": {"images": N, "image_encode_ms": T}, as
    // llama-server reports its timings beside the usage.
    uint32_t images = 0;
    double image_encode_ms = 0;
};

struct TopLogprob {
    std::string token;  // the token's bytes (any; see the file comment)
    double logprob = 0;
};

struct TokenLogprob {
    std::string token;
    double logprob = 0;
    std::vector<TopLogprob> top;  // the most likely tokens at this position, best first
    // The prompt's first token (an echoed prompt's logprobs): nothing predicts it, so its
    // logprob and its alternatives are null in the response.
    bool unpredicted = false;
};

// A tool call the reply made, as OpenAI reports it: {"id", "type": "function",
// "function": {"name", "arguments"}}.
struct ToolCallOut {
    std::string id;  // "call_..."
    std::string name;
    std::string arguments;  // a JSON object as text
};

// One choice's text and how it ended; finish_reason "" = not ended (a stream's chunk).
struct ChoiceText {
    std::string_view text;
    std::string_view finish_reason;  // "stop", "length", "tool_calls", "function_call", or "" while streaming
    const std::vector<TokenLogprob>* logprobs = nullptr;  // null: the request did not ask
    size_t text_offset = 0;  // completions logprobs: where `text` starts in the whole output
    // chat: the calls of a whole reply; with calls, empty text is "content": null.
    const std::vector<ToolCallOut>* tool_calls = nullptr;
    // chat: the request sent the deprecated "functions": its one call is
    // message.function_call {"name", "arguments"} rather than message.tool_calls.
    bool function_call = false;
    uint32_t index = 0;      // of the request's n choices
};

// A whole (non-streamed) response: one choice, or all of a request's n (usage summed over
// them, the prompt counted once).
std::string completion_body(Endpoint endpoint, const ResponseMeta& meta, const ChoiceText& choice,
                            const Usage& usage);
std::string completion_body(Endpoint endpoint, const ResponseMeta& meta, std::span<const ChoiceText> choices,
                            const Usage& usage);

// One chunk of a stream. `first` adds the assistant role to a chat delta (OpenAI sends it
// in the first chunk only).
std::string chunk_body(Endpoint endpoint, const ResponseMeta& meta, const ChoiceText& choice, bool first);

// A chat stream's chunk for one tool call, as OpenAI streams them: the call's first chunk
// has its index, id, type and name and empty arguments; the following ones add argument
// text (`header` null). `choice` is the choice's index among the request's n, `index` the
// call's among the choice's calls.
std::string tool_call_chunk_body(const ResponseMeta& meta, uint32_t choice, size_t index, const ToolCallOut* header,
                                 std::string_view arguments, bool first);

// The same for the deprecated "functions": delta.function_call, {"name", "arguments": ""}
// first (`name` set; the delta's content null), then {"arguments": piece}.
std::string function_call_chunk_body(const ResponseMeta& meta, uint32_t choice, const std::string* name,
                                     std::string_view arguments, bool first);

// The last chunk of a stream that asked for stream_options.include_usage: no choices.
std::string usage_chunk_body(Endpoint endpoint, const ResponseMeta& meta, const Usage& usage);

// Server-sent events framing of one body above (single-line JSON, as they all are).
std::string sse_event(std::string_view json);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace tdm::server
