/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/tool_call_grammar.h: the GBNF grammar that makes a generation a tool call,
// for tool_choice "required" or a named function: the family's call syntax
// (tokenizer/tool_calls.h) around each offered function's parameter schema, one call or,
// when parallel calls are allowed, several.
//
// The JSON schema -> GBNF conversion is not here: the caller passes it in (the grammar
// engine's json_schema_to_gbnf), and it must return rule text that defines `root` and
// names its helper rules `<root>-...`. Not the parsing of the output
// (serve/tool_call_parser.h), which reads what this grammar lets through.
#pragma once

#include "serve/api_error.h"
#include "serve/openai_request.h"

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

// The converter: rule text defining `root` for `schema`, or a 400 naming what it cannot
// convert (its error is passed on as it is).
using SchemaToGbnf = std::function<ApiResult<std::string>(const nlohmann::json& schema, std::string_view root)>;

// The grammar's start rule is `root`. Only the functions the choice allows appear (the
// named one, or all for "required"). Fails with a 400 naming the tool when a parameter
// cannot be written in the family's syntax under a grammar (Gemma 4 arguments that are
// objects or arrays), when the named function is not offered, for choice none/auto (they
// need no grammar), and with the converter's error when it refuses a schema.
ApiResult<std::string> tool_call_grammar_gbnf(const std::vector<ToolDefinition>& tools, const ToolChoice& choice,
                                              bool parallel_tool_calls, ToolCallFormat format,
                                              const SchemaToGbnf& schema_to_gbnf);

}  // namespace tdm::server
