// SPDX-License-Identifier: Apache-2.0
// host/cli/prompt.cpp
#include "cli/prompt.h"

#include "common/file_read.h"
#include "tokenizer/chat_template.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace tdm::cli {
namespace {

// The model's own Jinja chat template: GGUF tokenizer.chat_template; for an HF directory
// chat_template.jinja, else tokenizer_config.json's "chat_template" string. "" when there is none
// (or it cannot be read: the caller then falls back to the vocabulary's markers).
std::string model_jinja_template(const ModelSource& src) {
    if (const GgufFile* g = src.gguf()) {
        auto t = g->get_string_or("tokenizer.chat_template", "");
        return t.ok() ? *t : std::string();
    }
    if (!src.safetensors()) return {};
    constexpr uint64_t kMaxTemplateFileBytes = 64ull << 20;
    const std::filesystem::path dir = std::filesystem::path(src.safetensors()->config_path()).parent_path();
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / "chat_template.jinja", ec)) {
        auto t = read_regular_file((dir / "chat_template.jinja").string(), kMaxTemplateFileBytes, "chat template");
        if (t.ok()) return *t;
    }
    if (!std::filesystem::is_regular_file(dir / "tokenizer_config.json", ec)) return {};
    auto text = read_regular_file((dir / "tokenizer_config.json").string(), kMaxTemplateFileBytes, "tokenizer config");
    if (!text.ok()) return {};
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return {};
    auto it = j.find("chat_template");
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<ChatTemplate> chat_template_for(const Config& config, const Model& model) {
    std::string name = config.model.chat_template;
    if (name.empty()) {
        auto by_arch = builtin_template_for_architecture(model.source().architecture());
        const std::string jinja = by_arch.ok() ? std::string() : model_jinja_template(model.source());
        auto by_jinja = jinja.empty() ? Result<std::string>(Error("no chat template in the model's files"))
                                      : builtin_template_for_jinja(jinja);
        if (by_arch.ok())
            name = *by_arch;
        else if (by_jinja.ok())
            name = *by_jinja;
        else if (model.tokenizer())
            name = TDM_TRY_CTX(builtin_template_for_tokenizer(*model.tokenizer()),
                               "no chat template for this model; pick one with --chat-template");
        else
            return by_arch.take_error();
    }
    ChatTemplate t = TDM_TRY(ChatTemplate::builtin(name));
    const ChatTemplateConfig& o = config.chat_template;
    if (o.empty()) return t;
    ChatTemplateParts parts = t.parts();
    auto override_role = [&](const char* role, const std::optional<std::string>& pre,
                             const std::optional<std::string>& post) -> Status {
        if (!pre && !post) return {};
        std::string fmt = parts.roles.count(role) ? parts.roles[role] : std::string("{content}");
        const size_t at = fmt.find("{content}");
        if (at == std::string::npos) return Error::format("chat template role {} has no {{content}}", role);
        const std::string before = pre ? *pre : fmt.substr(0, at);
        const std::string after = post ? *post : fmt.substr(at + 9);
        parts.roles[role] = before + "{content}" + after;
        return {};
    };
    TDM_TRY(override_role("system", o.system_prefix, o.system_suffix));
    TDM_TRY(override_role("user", o.user_prefix, o.user_suffix));
    TDM_TRY(override_role("assistant", o.assistant_prefix, o.assistant_suffix));
    if (o.generation_prompt) parts.generation_prompt = *o.generation_prompt;
    return ChatTemplate::from_parts(parts, t.name() + " (customised by [chat_template])");
}

Result<std::string> prompt_text(const ParsedArgs& args) {
    if (auto p = args.get_string("prompt")) return *p;
    if (auto f = args.get_string("file")) {
        // Far beyond any context window; the limit keeps a wrong path (a disk image, a
        // log) from being read into memory before the tokenizer could say it is too long.
        constexpr uint64_t kMaxPromptFileBytes = 256ull << 20;
        return read_regular_file(*f, kMaxPromptFileBytes, "prompt file");
    }
    return Error("no prompt: give -p TEXT, -f FILE or --prompt-tokens IDS");
}

Result<std::vector<int32_t>> prompt_tokens(const ParsedArgs& args, const Config& config, const Model& model) {
    const uint32_t n_vocab = model.info().n_vocab;
    if (auto ids = args.get_sizes("prompt-tokens")) {
        std::vector<int32_t> out;
        for (int64_t id : *ids) {
            if (id >= int64_t(n_vocab))
                return Error::format("--prompt-tokens: id {} is outside the vocabulary of {}", id, n_vocab);
            out.push_back(int32_t(id));
        }
        if (out.empty()) return Error("--prompt-tokens: no ids given");
        return out;
    }
    std::string text = TDM_TRY(prompt_text(args));
    const Tokenizer* tok = model.tokenizer();
    if (!tok)
        return Error::format("the model has no usable tokenizer ({}); give the prompt as --prompt-tokens",
                             model.tokenizer_error());
    if (config.model.chat) {
        ChatTemplate t = TDM_TRY(chat_template_for(config, model));
        std::vector<ChatMessage> msgs;
        if (auto sys = args.get_string("system-prompt")) msgs.push_back({"system", *sys});
        msgs.push_back({"user", text});
        text = TDM_TRY(t.apply(msgs, true));
    }
    std::vector<int32_t> ids = tok->encode(text, true);
    if (ids.empty()) return Error("the prompt is empty after tokenization");
    return ids;
}

}  // namespace tdm::cli
