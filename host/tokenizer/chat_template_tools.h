/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/chat_template_tools.h: the built-in templates' rendering of a conversation
// that offers tools or holds tool turns, one function per family syntax (ToolCallFormat).
// Used by ChatTemplate::apply; not a public interface of its own, and not the parsing of
// calls out of generated text (serve/tool_call_parser.h).
#pragma once

#include "common/error.h"
#include "tokenizer/chat_template.h"

#include <string>
#include <string_view>
#include <vector>

namespace tdm {

// Python's str.strip(): Unicode whitespace plus the ASCII separators U+001C..U+001F (Jinja's
// "| trim"). Defined in chat_template.cpp.
std::string python_strip(std::string_view s);

// Renders the whole conversation as the family's own template does with `tools`
// (parts.tool_format must not be none). Fails on a role the family has no turn for and on
// tool-call arguments that are not a JSON object.
Result<std::string> render_tool_conversation(const ChatTemplateParts& parts, const std::vector<ChatMessage>& messages,
                                             const std::vector<ToolDefinition>& tools, bool add_generation_prompt);

}  // namespace tdm
