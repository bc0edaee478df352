/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/line_reader.h: the input side of `tandem chat`: one message (or
// command) at a time from standard input.
//
// A line ending in '\' continues on the next (the backslash is dropped, the
// newline kept). On a terminal the reader prompts and, when tandem is built
// with libedit (BSD-licensed; pkg-config libedit), offers line editing and a
// history kept in history_file; otherwise it reads plain lines. Reading stops
// with `interrupted` when SIGINT arrives (see interrupt.h) and with `eof`
// at the end of the input; a last line without a newline still counts.
#pragma once

#include <atomic>
#include <memory>
#include <string>

namespace tdm::cli {

class LineReader {
public:
    enum class Status { line, eof, interrupted };
    struct Input {
        Status status = Status::eof;
        std::string text;  // the logical line, continuations joined by '\n'
    };

    // terminal: prompt and edit (stdin and stdout are terminals). history_file
    // "" = no history. `interrupted` is the flag SIGINT sets.
    static std::unique_ptr<LineReader> create(bool terminal, std::string history_file,
                                              const std::atomic<bool>* interrupted);
    virtual ~LineReader() = default;

    Input read(const std::string& prompt, const std::string& continuation_prompt);
    // Whether line editing is on (libedit on a terminal).
    virtual bool editing() const { return false; }

protected:
    // One physical line without its newline.
    virtual Input read_physical(const std::string& prompt) = 0;
};

// Where the chat history lives: $XDG_STATE_HOME/tandem/chat_history, or
// $HOME/.local/state/tandem/chat_history; "" when neither is set.
std::string default_history_file();

}  // namespace tdm::cli
