// SPDX-License-Identifier: Apache-2.0
// host/cli/option_checks.cpp
#include "cli/option_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

namespace tdm::cli {
namespace {

// Command-line options and the config key each one sets (merged_config applies them).
struct OptionKey {
    const char* id;
    const char* key;
};
constexpr OptionKey kOptionKeys[] = {
    {"device", "device.select"},
    {"memory-limit", "device.memory_limit"},
    {"ctx-size", "model.n_ctx"},
    {"kv-memory", "model.kv_memory"},
    {"kv-type", "model.kv_type"},
    {"batch-size", "model.n_batch"},
    {"chat-template", "model.chat_template"},
    {"host-rows", "model.host_rows"},
    {"host-rows-share", "model.host_rows_share"},
    {"int8-matmul", "model.int8_matmul"},
    {"temp", "sampling.temperature"},
    {"top-k", "sampling.top_k"},
    {"top-p", "sampling.top_p"},
    {"min-p", "sampling.min_p"},
    {"repeat-penalty", "sampling.repeat_penalty"},
    {"repeat-last-n", "sampling.repeat_last_n"},
    {"presence-penalty", "sampling.presence_penalty"},
    {"frequency-penalty", "sampling.frequency_penalty"},
    {"logit-bias", "sampling.logit_bias"},
    {"seed", "sampling.seed"},
    {"spec-type", "speculative.type"},
    {"draft-max", "speculative.draft_max"},
    {"draft-min", "speculative.draft_min"},
    {"spec-skip-streak", "speculative.skip_streak"},
    {"spec-ngram-size-n", "speculative.ngram_size_n"},
    {"spec-ngram-size-m", "speculative.ngram_size_m"},
    {"spec-ngram-min-hits", "speculative.ngram_min_hits"},
    {"mtp-hidden", "speculative.mtp_hidden"},
    {"draft-vocab", "speculative.draft_vocab"},
    {"draft-tree", "speculative.draft_tree"},
    {"plugin-path", "plugins.paths"},
    {"plugin-disable", "plugins.disable"},
    {"log-level", "log.level"},
    {"host", "server.host"},
    {"port", "server.port"},
    {"api-key", "server.api_key"},
    {"alias", "server.alias"},
    {"parallel", "server.parallel"},
    {"queue", "server.queue"},
    {"timeout", "server.timeout"},
    {"request-timeout", "server.request_timeout"},
    {"max-body", "server.max_body"},
    {"shutdown-timeout", "server.shutdown_timeout"},
    {"max-connections", "server.max_connections"},
    {"max-connections-per-client", "server.max_connections_per_client"},
    {"max-images", "server.max_images"},
    {"max-image-bytes", "server.max_image_bytes"},
    {"pdf-dpi", "ocr.pdf_dpi"},
};

// ParsedArgs asserts on ids its spec lacks; tests parse against other tables.
bool given(const ParsedArgs& a, std::string_view id) { return a.knows(id) && a.has(id); }

}  // namespace

Status check_option_conflicts(const ParsedArgs& a) {
    std::vector<std::string> prompts;
    for (const char* id : {"prompt", "file", "prompt-tokens"})
        if (given(a, id)) prompts.push_back(a.source_name(id));
    if (prompts.size() > 1)
        return Error::format("{} and {} both give the prompt; use one of them", prompts[0], prompts[1]);
    if (given(a, "ctx-size") && given(a, "kv-memory"))
        return Error::format("{} and {} both size the context; use one of them", a.source_name("ctx-size"),
                             a.source_name("kv-memory"));
    if (given(a, "chat") && given(a, "no-chat"))
        return Error::format("{} and {} contradict each other", a.source_name("chat"), a.source_name("no-chat"));
    if (given(a, "spec-type")) {
        const std::string list = *a.get_string("spec-type");
        if (list.find_first_not_of(" ,") == std::string::npos)
            return Error::format("{}: no drafter named (give drafter names such as ngram-simple, or none; `tandem "
                                 "plugins` lists them)",
                                 a.source_name("spec-type"));
        std::stringstream ss(list);
        for (std::string item; std::getline(ss, item, ',');)
            if (item.find_first_not_of(' ') == std::string::npos)
                return Error::format("{}: '{}' has an empty name in the list", a.source_name("spec-type"), list);
    }
    return {};
}

Status check_plugin_dirs(const ParsedArgs& a, const Config& config) {
    const std::vector<std::string> typed = a.knows("plugin-path") ? a.get_strings("plugin-path")
                                                                  : std::vector<std::string>{};
    for (const std::string& dir : config.plugins.paths) {
        const bool from_command_line = std::find(typed.begin(), typed.end(), dir) != typed.end();
        const std::string who = from_command_line ? "--plugin-path" : "[plugins] paths";
        std::error_code ec;
        const auto st = std::filesystem::status(dir, ec);
        if (!std::filesystem::exists(st)) return Error::format("{}: directory '{}' does not exist", who, dir);
        if (!std::filesystem::is_directory(st)) return Error::format("{}: '{}' is not a directory", who, dir);
    }
    return {};
}

std::string name_command_line_options(const std::string& message, const ParsedArgs& a) {
    std::string out;
    std::stringstream lines(message);
    for (std::string line; std::getline(lines, line);) {
        for (const OptionKey& ok : kOptionKeys) {
            const std::string prefix = std::string(ok.key) + ":";
            if (line.rfind(prefix, 0) == 0 && given(a, ok.id)) {
                line = fmt::format("{} ({}){}", a.source_name(ok.id), ok.key, line.substr(prefix.size() - 1));
                break;
            }
        }
        out += (out.empty() ? "" : "\n") + line;
    }
    return out;
}

std::string unknown_disabled_plugins(const std::vector<std::string>& disabled, const std::vector<std::string>& found) {
    std::vector<std::string> unknown;
    for (const std::string& name : disabled)
        if (std::find(found.begin(), found.end(), name) == found.end()) unknown.push_back(name);
    if (unknown.empty()) return {};
    std::vector<std::string> names = found;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return fmt::format("--plugin-disable / [plugins] disable: no plugin named {} was found (plugins found: {})",
                       fmt::format("'{}'", fmt::join(unknown, "', '")),
                       names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
}

}  // namespace tdm::cli
