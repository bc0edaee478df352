/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/hermes_call_stream.h: the body of a Hermes-style tool call (Qwen3's
// {"name": "f", "arguments": {...}}) read as it streams in, so that a stream can send the
// call's name as soon as it is known and its arguments in pieces as they are written.
//
// The arguments come out minified: the model's text without the whitespace outside JSON
// strings, every other byte as written. A character-level reading makes the result a
// function of the body alone, however it is split, so the pieces a stream sends add up to
// what the whole body gives (serve/tool_call_parser.h uses this for both).
//
// Only the form Qwen's template writes is read this way: "name" (a string) before
// "arguments" (an object), other scalar members allowed between. Anything else (the
// arguments first, as a JSON string, or an object member before them) is declined and read
// whole. Not the finding of call markers nor the checking of names (serve/tool_call_parser.h).
#pragma once

#include <string>
#include <string_view>

namespace tdm::server {

class HermesCallStream {
public:
    // Reads the next part of the body.
    void feed(std::string_view part);

    // The name is read and the arguments object has begun.
    bool started() const { return state_ == State::arguments || state_ == State::done; }
    // The arguments object has closed (what follows in the body is not read).
    bool done() const { return state_ == State::done; }
    // The body is not in the streamable form.
    bool declined() const { return state_ == State::declined; }

    const std::string& name() const { return name_; }
    // The arguments read so far, minified.
    const std::string& arguments() const { return arguments_; }
    // The arguments read since the last call.
    std::string take_new_arguments();

private:
    enum class State { open, key, colon, value, string_value, scalar_value, after_value, arguments, done, declined };
    void step(char c);
    void step_arguments(char c);

    State state_ = State::open;
    std::string key_;         // the member being read: its JSON string token as written
    std::string token_;       // the value being read (a string token as written)
    bool escaped_ = false;    // in a string, after a backslash
    bool have_name_ = false;
    std::string name_;
    std::string arguments_;
    size_t taken_ = 0;        // bytes of arguments_ given out by take_new_arguments
    int depth_ = 0;           // of the arguments' objects and arrays
    bool in_string_ = false;  // in a string of the arguments
};

}  // namespace tdm::server
