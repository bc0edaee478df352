/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/tool_call_parser.h: finding a model family's tool calls in generated text and
// turning them into OpenAI's (name, JSON arguments), whole or as the text streams in.
//
// A call is the family's open marker, a body, and its close marker (tokenizer/tool_calls.h
// lists the syntaxes). A block whose body does not parse, names a function the request did
// not offer, or never closes is given back as plain text: free-form output never fails a
// request. While streaming, text that may be the start of an open marker is held back
// until the next text decides it, and a call is reported once its close marker arrives;
// or, when the parser streams arguments, a Hermes JSON call (Qwen3) is reported as soon as
// its name is read and its arguments as they are written (serve/hermes_call_stream.h).
// Not the rendering of calls into a prompt (tokenizer/chat_template_tools.cpp).
#pragma once

#include "serve/hermes_call_stream.h"
#include "tokenizer/tool_calls.h"

#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

struct ParsedToolCall {
    std::string name;
    std::string arguments;  // a JSON object, compact, keys in the model's order
};

// One piece of output, in order: text (the content), a whole call, or a call streamed: its
// beginning (the name), then pieces of its arguments, which add up to the JSON object.
struct ToolStreamPiece {
    enum class Kind { text, call, call_begin, call_arguments };
    Kind kind = Kind::text;
    std::string text;     // text: the content; call_arguments: the next piece of the open call's arguments
    ParsedToolCall call;  // call: the call; call_begin: its name
};

class ToolCallParser {
public:
    // `tools` are the request's offered functions: a call must name one of them, and their
    // parameter schemas decide whether an XML-style value is a string or JSON.
    //
    // `stream_arguments`: a Hermes JSON call is reported as call_begin once its name (an
    // offered one) is read and its arguments object opens, then as call_arguments pieces.
    // From there it is a call: if the body then breaks off (max_tokens, a malformed or
    // unclosed block) the call ends with the arguments written so far, where the whole
    // output (parse_tool_calls) would give the block back as text. A well-formed call gives
    // the same name and arguments either way. The other forms are reported whole: an XML or
    // Gemma value's JSON type depends on its schema and on its complete text.
    ToolCallParser(ToolCallFormat format, const std::vector<ToolDefinition>& tools, bool stream_arguments = false);

    // The pieces `text` completes; text that may still become a call is held back.
    std::vector<ToolStreamPiece> feed(std::string_view text);
    // The end of the output: whatever is held back, as text (an unclosed call is text).
    std::vector<ToolStreamPiece> finish();

    size_t calls() const { return calls_; }

private:
    void emit_text(std::string_view text, std::vector<ToolStreamPiece>& out);
    void close_block(std::string_view body, std::vector<ToolStreamPiece>& out);
    const std::string* offered(const std::string& name) const;
    // stream_arguments: reads the block's body up to `end` (bytes of buffer_).
    void scan_body(size_t end, std::vector<ToolStreamPiece>& out);
    void start_call();

    ToolCallFormat format_;
    std::string open_, close_;
    std::vector<std::pair<std::string, std::string>> tools_;  // name, function JSON
    std::string buffer_;
    bool inside_ = false;
    std::string held_space_;  // whitespace next to a call: dropped if a call follows it
    bool after_call_ = false;
    size_t calls_ = 0;
    const bool stream_arguments_;
    HermesCallStream scan_;  // the open block's body, read as it comes (stream_arguments)
    size_t scanned_ = 0;     // bytes of buffer_ read into scan_
    bool streaming_ = false;  // the open block is a call being streamed
};

// The whole output at once: the content (null-worthy when empty) and the calls.
struct ParsedOutput {
    std::string content;
    std::vector<ParsedToolCall> calls;
};
ParsedOutput parse_tool_calls(ToolCallFormat format, const std::vector<ToolDefinition>& tools, std::string_view text);

}  // namespace tdm::server
