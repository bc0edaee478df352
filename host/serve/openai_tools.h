/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/openai_tools.h: the tool-calling fields of a chat request, read and checked
// for serve/openai_request.cpp: "tools", "tool_choice", "parallel_tool_calls", and an
// assistant message's "tool_calls". Not the rendering of tools into a prompt
// (tokenizer/chat_template_tools.cpp) nor the parsing of calls out of the output
// (serve/tool_call_parser.h).
#pragma once

#include "serve/api_error.h"
#include "serve/openai_request.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

// Reads the request-level tool fields of `doc` (the parsed `body`) into `out`. The tools
// keep the client's key order (they are printed into the prompt), so they are read again
// from `body` in order. The legacy "functions" / "function_call" become tools and a
// tool_choice (GenerationRequest::legacy_functions); either beside its modern form is a 400.
std::optional<ApiError> read_tool_fields(const nlohmann::json& doc, std::string_view body, const RequestLimits& limits,
                                         GenerationRequest& out);

// An assistant message's "tool_calls": [{"id", "type": "function", "function": {"name",
// "arguments": "<a JSON object as a string>"}}]; `at` is the field's path for errors.
std::optional<ApiError> read_tool_calls(const nlohmann::json& calls, const std::string& at, std::vector<ToolCall>& out);

// An assistant message's deprecated "function_call": {"name", "arguments"}, one call (with
// no id) appended to `out`.
std::optional<ApiError> read_function_call(const nlohmann::json& call, const std::string& at, std::vector<ToolCall>& out);

}  // namespace tdm::server
