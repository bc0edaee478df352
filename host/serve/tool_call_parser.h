/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/tool_call_parser.h: finding a model family's tool calls in generated text and
// turning them into OpenAI's (name, JSON arguments), whole or as the text streams in.
//
// A call is the family's open marker, a body, and its close marker (tokenizer/tool_calls.h
// lists the syntaxes). A block whose body does not parse, names a function the request did
// not offer, or never closes is given back as plain text: free-form output never fails a
// request. While streaming, text that may be the start of an open marker is held back
// until the next text decides it, and a call is reported once its close marker arrives.
// Not the rendering of calls into a prompt (tokenizer/chat_template_tools.cpp).
#pragma once

#include "tokenizer/tool_calls.h"

#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

struct ParsedToolCall {
    std::string name;
    std::string arguments;  // a JSON object, compact, keys in the model's order
};

// One piece of output, in order: text (the content) or a call.
struct ToolStreamPiece {
    bool is_call = false;
    std::string text;     // !is_call
    ParsedToolCall call;  // is_call
};

class ToolCallParser {
public:
    // `tools` are the request's offered functions: a call must name one of them, and their
    // parameter schemas decide whether an XML-style value is a string or JSON.
    ToolCallParser(ToolCallFormat format, const std::vector<ToolDefinition>& tools);

    // The pieces `text` completes; text that may still become a call is held back.
    std::vector<ToolStreamPiece> feed(std::string_view text);
    // The end of the output: whatever is held back, as text (an unclosed call is text).
    std::vector<ToolStreamPiece> finish();

    size_t calls() const { return calls_; }

private:
    void emit_text(std::string_view text, std::vector<ToolStreamPiece>& out);
    void close_block(std::string_view body, std::vector<ToolStreamPiece>& out);

    ToolCallFormat format_;
    std::string open_, close_;
    std::vector<std::pair<std::string, std::string>> tools_;  // name, function JSON
    std::string buffer_;
    bool inside_ = false;
    std::string held_space_;  // whitespace next to a call: dropped if a call follows it
    bool after_call_ = false;
    size_t calls_ = 0;
};

// The whole output at once: the content (null-worthy when empty) and the calls.
struct ParsedOutput {
    std::string content;
    std::vector<ParsedToolCall> calls;
};
ParsedOutput parse_tool_calls(ToolCallFormat format, const std::vector<ToolDefinition>& tools, std::string_view text);

}  // namespace tdm::server
