/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/chat_template.h: turning a conversation into prompt text, with a few
// built-in formats and per-role prefix/suffix overrides (how a TOML config replaces a
// template). Not a Jinja interpreter: the built-ins reproduce what the models' own
// templates render for text messages, tools and tool turns (chat_template_tools.cpp); no
// images.
//
// The output contains special-token text ("<|im_start|>") and no BOS: encode it with
// Tokenizer::encode(text, /*add_special=*/true, /*parse_special=*/true), which adds BOS
// where the vocabulary wants one (Gemma) - the Jinja templates' {{ bos_token }}.
#pragma once

#include "common/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tool_calls.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tdm {

struct ChatMessage {
    std::string role;  // "system", "user", "assistant", "tool", or a role the template defines
    std::string content;
    // ({} initializers: {role, content} stays a complete initializer for plain turns)
    std::vector<ToolCall> tool_calls{};  // assistant: the calls it made (content may be empty)
    std::string tool_call_id{};          // tool: the call this result answers
    std::string name{};                  // tool: the function's name, when the client says it
};

// A template as data. Each role's format holds exactly one "{content}" placeholder,
// e.g. "<|im_start|>user\n{content}<|im_end|>\n".
struct ChatTemplateParts {
    std::string prefix;                        // once, before the first message ("[gMASK]<sop>")
    std::map<std::string, std::string> roles;  // role -> format
    std::string generation_prompt;             // appended when add_generation_prompt is set
    // Gemma: a leading system message is not a turn; its content + "\n\n" is put in front
    // of the next message's content.
    bool fold_system_into_first_turn = false;
    // Gemma: message content is stripped of surrounding whitespace (Jinja "| trim").
    bool trim_content = false;
    // Gemma 4: past model turns lose their thinking, every `strip_open` ... `strip_close`
    // span (an unclosed one to the end), before trimming: the template's strip_thinking.
    std::string strip_open, strip_close;
    // How the family's own template renders tools and tool turns; none: it cannot.
    ToolCallFormat tool_format = ToolCallFormat::none;
};

class ChatTemplate {
public:
    // Built-in names:
    //   "chatml"             Qwen2/2.5/3 ChatML
    //   "chatml-thinking"    ChatML, generation prompt opens a <think> block (Qwen3.5 default)
    //   "chatml-no-thinking" ChatML, generation prompt holds an empty <think></think> block
    //                        (Qwen3/Qwen3.5 with enable_thinking=false)
    //   "gemma"              Gemma 2/3 <start_of_turn>role ... <end_of_turn>
    //   "gemma4"             Gemma 4 <|turn>role ... <turn|>, system as a turn of its own
    //   "glm4"               GLM-4 / GLM-OCR: [gMASK]<sop><|role|>\n...
    //   "llama3"             Llama 3.x <|start_header_id|>role<|end_header_id|>\n\n ... <|eot_id|>
    static Result<ChatTemplate> builtin(std::string_view name);
    static std::vector<std::string_view> builtin_names();

    // Checks the parts: every role format has exactly one {content}, role names are not
    // empty, there is a "user" role.
    static Result<ChatTemplate> from_parts(ChatTemplateParts parts, std::string name = "custom");

    // Fails on a role the template has no format for, naming the role and the template.
    // With tools, or with tool turns in the history (role "tool", assistant tool_calls), the
    // family's tool rendering is used (parts().tool_format); a template without one fails.
    Result<std::string> apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const std::vector<ToolDefinition>& tools = {}) const;

    const std::string& name() const { return name_; }
    const ChatTemplateParts& parts() const { return parts_; }

private:
    struct Role {
        std::string before, after;  // the format split at {content}
    };
    ChatTemplate() = default;
    std::string strip_spans(std::string_view s) const;
    std::string name_;
    ChatTemplateParts parts_;
    std::map<std::string, Role, std::less<>> roles_;
};

// The built-in template for a GGUF general.architecture or HF model_type: "qwen35*" ->
// chatml-thinking, other "qwen*" -> chatml, "gemma4*" -> gemma4, other "gemma*" -> gemma,
// "glm*"/"chatglm*" -> glm4, "llama" -> llama3.
Result<std::string> builtin_template_for_architecture(std::string_view arch);

// The built-in template a model's own Jinja chat template (GGUF tokenizer.chat_template, HF
// tokenizer_config.json chat_template or chat_template.jinja) renders like, by its markers:
// <|turn> -> gemma4, <start_of_turn> -> gemma, [gMASK] -> glm4, <|im_start|> -> chatml.
Result<std::string> builtin_template_for_jinja(std::string_view jinja);

// The built-in template whose marker tokens the vocabulary has: <|im_start|> -> chatml,
// <|turn> -> gemma4, <start_of_turn> -> gemma, [gMASK] -> glm4.
Result<std::string> builtin_template_for_tokenizer(const Tokenizer& tok);

}  // namespace tdm
