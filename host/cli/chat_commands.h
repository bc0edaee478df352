/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/chat_commands.h: the slash commands of `tandem chat` as a table.
// A line that starts with '/' is a command; each entry names itself, its
// argument, its help line and what it does. Adding a command (/save FILE,
// /load FILE) is one more entry; the handler gets the rest of the line.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace tdm::cli {

// What a command asks of the chat loop.
enum class CommandOutcome { keep_going, exit };

struct ChatCommand {
    std::vector<std::string> names;  // "/exit", "/quit"
    std::string argument;            // "FILE" in the help; "" = none taken
    std::string help;                // one line
    // Gets the text after the name (trimmed); output goes where the loop prints.
    std::function<Result<CommandOutcome>(std::string_view argument)> run;
};

class ChatCommands {
public:
    void add(ChatCommand c) { commands_.push_back(std::move(c)); }

    // Whether a line is a command at all (starts with '/').
    static bool is_command(std::string_view line);
    // A command line's first word ("/save" of "/save notes.bin").
    static std::string_view name_of(std::string_view line);
    // The entry for a line's first word, or nullptr.
    const ChatCommand* find(std::string_view line) const;
    // Runs a command line. An unknown name, or an argument given to a command
    // that takes none, is an error naming it and pointing at /help.
    Result<CommandOutcome> run(std::string_view line) const;

    // "/clear          forget the conversation and the KV cache", one line each.
    std::string help() const;
    const std::vector<ChatCommand>& all() const { return commands_; }

private:
    std::vector<ChatCommand> commands_;
};

}  // namespace tdm::cli
