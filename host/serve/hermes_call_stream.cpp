// SPDX-License-Identifier: Apache-2.0
// host/serve/hermes_call_stream.cpp
#include "serve/hermes_call_stream.h"

#include <nlohmann/json.hpp>

namespace tdm::server {

namespace {

bool json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A JSON string token as written ("a\"b") decoded; "" when it is not one.
std::string decoded_string(const std::string& token) {
    const nlohmann::json v = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
    return v.is_string() ? v.get<std::string>() : std::string();
}

// Reads one string token's next character into `token`; true when the token has closed.
bool string_token_char(std::string& token, bool& escaped, char c) {
    token += c;
    if (escaped) escaped = false;
    else if (c == '\\') escaped = true;
    else if (c == '"') return true;
    return false;
}

}  // namespace

void HermesCallStream::feed(std::string_view part) {
    for (char c : part) {
        if (state_ == State::done || state_ == State::declined) return;
        step(c);
    }
}

std::string HermesCallStream::take_new_arguments() {
    std::string out = arguments_.substr(taken_);
    taken_ = arguments_.size();
    return out;
}

void HermesCallStream::step(char c) {
    switch (state_) {
        case State::open:
            if (json_space(c)) return;
            state_ = c == '{' ? State::key : State::declined;
            return;
        case State::key:
            if (key_.empty() && json_space(c)) return;
            if (key_.empty() && c != '"') {
                state_ = State::declined;
                return;
            }
            if (key_.empty()) {
                key_ = "\"";
                return;
            }
            if (string_token_char(key_, escaped_, c)) state_ = State::colon;
            return;
        case State::colon:
            if (json_space(c)) return;
            state_ = c == ':' ? State::value : State::declined;
            return;
        case State::value: {
            if (json_space(c)) return;
            const std::string key = decoded_string(key_);
            if (key == "arguments") {
                if (!have_name_ || c != '{') {
                    state_ = State::declined;
                    return;
                }
                state_ = State::arguments;
                depth_ = 1;
                arguments_ += c;
                return;
            }
            if (c == '"') {
                token_ = "\"";
                state_ = State::string_value;
            } else if (key == "name" || c == '{' || c == '[') {
                state_ = State::declined;  // a name that is not a string, or a member holding an object
            } else {
                state_ = State::scalar_value;
            }
            return;
        }
        case State::string_value:
            if (!string_token_char(token_, escaped_, c)) return;
            if (decoded_string(key_) == "name") {
                name_ = decoded_string(token_);
                have_name_ = true;
            }
            state_ = State::after_value;
            return;
        case State::scalar_value:
            if (c != ',' && c != '}' && !json_space(c)) return;
            state_ = State::after_value;
            return step(c);
        case State::after_value:
            if (json_space(c)) return;
            if (c == ',') {
                key_.clear();
                state_ = State::key;
            } else {
                state_ = State::declined;  // the object ended without arguments, or is not JSON
            }
            return;
        case State::arguments: step_arguments(c); return;
        case State::done:
        case State::declined: return;
    }
}

void HermesCallStream::step_arguments(char c) {
    if (in_string_) {
        arguments_ += c;
        if (escaped_) escaped_ = false;
        else if (c == '\\') escaped_ = true;
        else if (c == '"') in_string_ = false;
        return;
    }
    if (json_space(c)) return;
    arguments_ += c;
    if (c == '"') in_string_ = true;
    else if (c == '{' || c == '[') ++depth_;
    else if ((c == '}' || c == ']') && --depth_ == 0) state_ = State::done;
}

}  // namespace tdm::server
