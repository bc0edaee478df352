/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/tool_calls.h: what a conversation says about tools, as the chat templates
// see it: the tools offered (name and JSON declaration), the calls an assistant turn made,
// and which family syntax a template writes calls in. Not the parsing of a model's output
// (serve/tool_call_parser.h) and not the HTTP request's shape (serve/openai_request.h).
#pragma once

#include <string>
#include <string_view>

namespace tdm {

// How a model family writes a tool call (docs/SERVER.md, "Tool calls"):
//   hermes      Qwen3:   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   qwen_xml    Qwen3.5: <tool_call>\n<function=f>\n<parameter=k>\nv\n</parameter>\n</function>\n</tool_call>
//   gemma4      Gemma 4: <|tool_call>call:f{k:<|"|>v<|"|>}<tool_call|>
//   glm         GLM-4.5 and later: <tool_call>f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>
// none: the template renders no tools (a custom template from a config file).
enum class ToolCallFormat { none, hermes, qwen_xml, gemma4, glm };

// The text a model of the family writes after its calls to hand the turn over to the tool
// results, where generation must stop if the vocabulary does not end it: Gemma 4's
// "<|tool_response>", GLM's "<|observation|>"; "" where the turn's end token does it (Qwen).
std::string_view tool_results_marker(ToolCallFormat format);

// One function the client offers. `function_json` is the request's "function" object
// ({"name", "description", "parameters"}) as JSON text with the client's key order: the
// templates print it (Qwen, GLM) or walk it (Gemma 4) and key order shows in the prompt.
struct ToolDefinition {
    std::string name;
    std::string function_json;
};

// One call of an assistant turn. `arguments` is a JSON object as text (OpenAI sends it as
// a string; the request parser checks that it parses to an object).
struct ToolCall {
    std::string id;  // "call_..."; "" when the client sent none
    std::string name;
    std::string arguments;
};

}  // namespace tdm
