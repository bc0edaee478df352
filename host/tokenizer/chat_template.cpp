// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/chat_template.cpp: the built-in chat formats and their rendering.
// Sources: the Qwen3 and Gemma 3 chat_template fields of the fixtures' tokenizer_config
// .json (rendered with Jinja in the tests' expectations), docs/models/qwen35.md §5 for the
// <think> variants, docs/models/glm-ocr.md §4 for GLM, docs/models/gemma4.md §4 for Gemma 4,
// docs/models/llama.md §5 for Llama 3. Tools and tool turns render in chat_template_tools.cpp.
#include "tokenizer/chat_template.h"

#include "tokenizer/chat_template_tools.h"
#include "tokenizer/unicode.h"

#include <algorithm>

namespace tdm {
namespace {

constexpr std::string_view kPlaceholder = "{content}";

ChatTemplateParts chatml(std::string generation_prompt, ToolCallFormat tools) {
    ChatTemplateParts p;
    for (const char* role : {"system", "user", "assistant"})
        p.roles[role] = std::string("<|im_start|>") + role + "\n{content}<|im_end|>\n";
    p.generation_prompt = std::move(generation_prompt);
    p.tool_format = tools;
    return p;
}

ChatTemplateParts gemma() {
    ChatTemplateParts p;
    p.roles["user"] = "<start_of_turn>user\n{content}<end_of_turn>\n";
    p.roles["assistant"] = "<start_of_turn>model\n{content}<end_of_turn>\n";  // Gemma calls it "model"
    p.generation_prompt = "<start_of_turn>model\n";
    p.fold_system_into_first_turn = true;
    p.trim_content = true;
    return p;
}

// Gemma 4: system is a turn of its own (no folding); turn markers <|turn> / <turn|> are special
// tokens; content is trimmed (the template's "| trim"; past model turns are trimmed by its
// strip_thinking macro too).
ChatTemplateParts gemma4() {
    ChatTemplateParts p;
    p.roles["system"] = "<|turn>system\n{content}<turn|>\n";
    p.roles["user"] = "<|turn>user\n{content}<turn|>\n";
    p.roles["assistant"] = "<|turn>model\n{content}<turn|>\n";
    p.generation_prompt = "<|turn>model\n";
    p.trim_content = true;
    p.strip_open = "<|channel>";
    p.strip_close = "<channel|>";
    p.tool_format = ToolCallFormat::gemma4;
    return p;
}

// Llama 3: <|start_header_id|>role<|end_header_id|>\n\n content <|eot_id|>, content trimmed
// (the template's "| trim"); BOS (<|begin_of_text|>) comes from the tokenizer, as for Gemma.
ChatTemplateParts llama3() {
    ChatTemplateParts p;
    for (const char* role : {"system", "user", "assistant"})
        p.roles[role] = std::string("<|start_header_id|>") + role + "<|end_header_id|>\n\n{content}<|eot_id|>";
    p.generation_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n";
    p.trim_content = true;
    return p;
}

ChatTemplateParts glm4() {
    ChatTemplateParts p;
    p.prefix = "[gMASK]<sop>";
    for (const char* role : {"system", "user", "assistant"})
        p.roles[role] = std::string("<|") + role + "|>\n{content}";
    p.generation_prompt = "<|assistant|>\n";
    p.tool_format = ToolCallFormat::glm;
    return p;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

// Python str.strip(): Unicode whitespace plus the ASCII separators U+001C..U+001F.
std::string python_strip(std::string_view s) {
    auto is_space_at = [&](size_t pos, size_t& len) {
        size_t p = pos;
        uint32_t cp;
        if (!unicode::decode(s, p, cp)) return false;
        len = p - pos;
        return unicode::is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F);
    };
    size_t b = 0, len = 0;
    while (b < s.size() && is_space_at(b, len)) b += len;
    size_t e = s.size();
    while (e > b) {
        size_t start = e - 1;  // back up to the start of the last character
        while (start > b && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
        if (!is_space_at(start, len) || start + len != e) break;
        e = start;
    }
    return std::string(s.substr(b, e - b));
}

std::vector<std::string_view> ChatTemplate::builtin_names() {
    return {"chatml", "chatml-thinking", "chatml-no-thinking", "gemma", "gemma4", "glm4", "llama3"};
}

Result<ChatTemplate> ChatTemplate::builtin(std::string_view name) {
    // Qwen3's template writes Hermes JSON calls, Qwen3.5's the XML form (docs/SERVER.md);
    // chatml-no-thinking serves both and renders Hermes (the parser reads either).
    if (name == "chatml") return from_parts(chatml("<|im_start|>assistant\n", ToolCallFormat::hermes), "chatml");
    if (name == "chatml-thinking")
        return from_parts(chatml("<|im_start|>assistant\n<think>\n", ToolCallFormat::qwen_xml), "chatml-thinking");
    if (name == "chatml-no-thinking")
        return from_parts(chatml("<|im_start|>assistant\n<think>\n\n</think>\n\n", ToolCallFormat::hermes),
                          "chatml-no-thinking");
    if (name == "gemma") return from_parts(gemma(), "gemma");
    if (name == "gemma4") return from_parts(gemma4(), "gemma4");
    if (name == "glm4") return from_parts(glm4(), "glm4");
    if (name == "llama3") return from_parts(llama3(), "llama3");
    return Error::format("unknown built-in chat template '{}' (chatml, chatml-thinking, chatml-no-thinking, "
                         "gemma, gemma4, glm4, llama3)", name);
}

Result<ChatTemplate> ChatTemplate::from_parts(ChatTemplateParts parts, std::string name) {
    ChatTemplate t;
    t.name_ = std::move(name);
    for (const auto& [role, format] : parts.roles) {
        if (role.empty()) return Error::format("chat template '{}': a role has an empty name", t.name_);
        size_t at = format.find(kPlaceholder);
        if (at == std::string::npos)
            return Error::format("chat template '{}': the part for role '{}' has no {{content}} placeholder: '{}'",
                                 t.name_, role, format);
        if (format.find(kPlaceholder, at + 1) != std::string::npos)
            return Error::format("chat template '{}': the part for role '{}' has more than one {{content}}: '{}'",
                                 t.name_, role, format);
        t.roles_[role] = Role{format.substr(0, at), format.substr(at + kPlaceholder.size())};
    }
    if (!t.roles_.count("user")) return Error::format("chat template '{}' has no part for role 'user'", t.name_);
    t.parts_ = std::move(parts);
    return t;
}

std::string ChatTemplate::strip_spans(std::string_view s) const {
    std::string out;
    size_t at = 0;
    while (at < s.size()) {
        const size_t open = s.find(parts_.strip_open, at);
        if (open == std::string_view::npos) break;
        out.append(s.substr(at, open - at));
        const size_t close = s.find(parts_.strip_close, open + parts_.strip_open.size());
        at = close == std::string_view::npos ? s.size() : close + parts_.strip_close.size();
    }
    if (at < s.size()) out.append(s.substr(at));
    return out;
}

Result<std::string> ChatTemplate::apply(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                        const std::vector<ToolDefinition>& tools) const {
    const bool tool_turns = std::any_of(messages.begin(), messages.end(), [](const ChatMessage& m) {
        return m.role == "tool" || !m.tool_calls.empty();
    });
    if (!tools.empty() || tool_turns) {
        if (parts_.tool_format == ToolCallFormat::none)
            return Error::format("chat template '{}' does not render tools or tool turns (the built-in chatml, "
                                 "chatml-thinking, chatml-no-thinking, gemma4 and glm4 do)", name_);
        return render_tool_conversation(parts_, messages, tools, add_generation_prompt);
    }
    std::string out = parts_.prefix;
    size_t first = 0;
    std::string folded;  // Gemma: system text waiting for the first turn
    if (parts_.fold_system_into_first_turn && !messages.empty() && messages[0].role == "system") {
        folded = messages[0].content + "\n\n";
        first = 1;
    }
    for (size_t i = first; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        auto it = roles_.find(m.role);
        if (it == roles_.end())
            return Error::format("chat template '{}' has no part for role '{}' (message {})", name_, m.role, i);
        out += it->second.before;
        if (i == first) out += folded;
        const std::string content =
            m.role == "assistant" && !parts_.strip_open.empty() ? strip_spans(m.content) : m.content;
        out += parts_.trim_content ? python_strip(content) : content;
        out += it->second.after;
    }
    if (first == 1 && messages.size() == 1) {
        // Gemma renders a lone system message as nothing at all; say so rather than drop it.
        return Error::format("chat template '{}': a system message needs a following turn to be folded into",
                             name_);
    }
    if (add_generation_prompt) out += parts_.generation_prompt;
    return out;
}

Result<std::string> builtin_template_for_architecture(std::string_view arch) {
    if (starts_with(arch, "qwen35") || starts_with(arch, "qwen3_5")) return std::string("chatml-thinking");
    if (starts_with(arch, "qwen")) return std::string("chatml");
    if (starts_with(arch, "gemma4")) return std::string("gemma4");
    if (starts_with(arch, "gemma")) return std::string("gemma");
    if (starts_with(arch, "glm") || starts_with(arch, "chatglm")) return std::string("glm4");
    if (arch == "llama") return std::string("llama3");
    return Error::format("no built-in chat template for architecture '{}' (qwen*, gemma4*, gemma*, glm*, llama)", arch);
}

Result<std::string> builtin_template_for_jinja(std::string_view jinja) {
    auto has = [&](std::string_view marker) { return jinja.find(marker) != std::string_view::npos; };
    if (has("<|turn>")) return std::string("gemma4");  // before <start_of_turn>: says more
    if (has("<start_of_turn>")) return std::string("gemma");
    if (has("[gMASK]")) return std::string("glm4");
    if (has("<|im_start|>")) return std::string("chatml");
    if (has("<|start_header_id|>")) return std::string("llama3");
    return Error::format("the model's chat template has none of <|turn>, <start_of_turn>, [gMASK], <|im_start|>, "
                         "<|start_header_id|>; no built-in chat template fits");
}

Result<std::string> builtin_template_for_tokenizer(const Tokenizer& tok) {
    if (tok.token_id("<|im_start|>") >= 0) return std::string("chatml");
    if (tok.token_id("<|turn>") >= 0) return std::string("gemma4");  // Gemma 4 before Gemma 2/3
    if (tok.token_id("<start_of_turn>") >= 0) return std::string("gemma");
    if (tok.token_id("[gMASK]") >= 0) return std::string("glm4");
    if (tok.token_id("<|start_header_id|>") >= 0) return std::string("llama3");
    return Error::format("{}: the vocabulary has none of <|im_start|>, <|turn>, <start_of_turn>, [gMASK], "
                         "<|start_header_id|>; no built-in chat template fits", tok.vocab().source);
}

}  // namespace tdm
