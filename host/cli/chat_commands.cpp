// SPDX-License-Identifier: Apache-2.0
// host/cli/chat_commands.cpp
#include "cli/chat_commands.h"

#include <algorithm>

namespace tdm::cli {
namespace {

std::string_view trim_blanks(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// "/name rest" -> {"/name", "rest"}
std::pair<std::string_view, std::string_view> split(std::string_view line) {
    line = trim_blanks(line);
    const size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos) return {line, {}};
    return {line.substr(0, sp), trim_blanks(line.substr(sp))};
}

}  // namespace

bool ChatCommands::is_command(std::string_view line) {
    line = trim_blanks(line);
    return !line.empty() && line.front() == '/';
}

std::string_view ChatCommands::name_of(std::string_view line) { return split(line).first; }

const ChatCommand* ChatCommands::find(std::string_view line) const {
    const std::string_view name = split(line).first;
    for (const ChatCommand& c : commands_)
        if (std::find(c.names.begin(), c.names.end(), name) != c.names.end()) return &c;
    return nullptr;
}

Result<CommandOutcome> ChatCommands::run(std::string_view line) const {
    const auto [name, argument] = split(line);
    const ChatCommand* c = find(line);
    if (!c) return Error::format("unknown command {} (/help lists the commands)", name);
    if (c->argument.empty() && !argument.empty())
        return Error::format("{} takes no argument (got '{}')", name, argument);
    if (!c->argument.empty() && argument.empty())
        return Error::format("{} needs {}: {} {}", name, c->argument, name, c->argument);
    return c->run(argument);
}

std::string ChatCommands::help() const {
    std::string out;
    for (const ChatCommand& c : commands_) {
        std::string usage;
        for (const std::string& n : c.names) usage += (usage.empty() ? "" : ", ") + n;
        if (!c.argument.empty()) usage += " " + c.argument;
        if (usage.size() < 18) usage.resize(18, ' ');
        out += "  " + usage + " " + c.help + "\n";
    }
    return out;
}

}  // namespace tdm::cli
