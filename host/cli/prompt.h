/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/prompt.h: turning -p/-f/--prompt-tokens/--chat into prompt token ids.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"
#include "tokenizer/chat_template.h"

namespace tdm::cli {

// The chat template for a model: --chat-template / [model] chat_template, or
// the one for its architecture or vocabulary, with [chat_template] parts applied.
Result<ChatTemplate> chat_template_for(const Config& config, const Model& model);

// The prompt text of -p or -f.
Result<std::string> prompt_text(const ParsedArgs& args);

// Prompt ids from the command line; errors name what is missing (a tokenizer
// for text, a prompt at all) or out of range (ids beyond the vocabulary).
Result<std::vector<int32_t>> prompt_tokens(const ParsedArgs& args, const Config& config, const Model& model);

}  // namespace tdm::cli
