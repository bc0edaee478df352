/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/stop_reason.h: why a request's generation ended. Inside the runtime it is an
// enum; it becomes text only at the edges (the CLI's JSON and summary lines, logs), always
// through to_string(), so that the words users and scripts read stay exactly these.
// Not here: the server's OpenAI finish_reason ("stop", "length"), which is derived from it.
#pragma once

#include <string_view>

namespace tdm {

enum class StopReason {
    length,      // max_tokens generated
    eog,         // an end-of-generation token of the tokenizer
    stop_token,  // one of the request's stop tokens
    context,     // the context is full
    cancelled,   // the caller or the client asked it to stop
    error,       // the request failed (the error says why)
    // The output's constraint (a grammar, a JSON schema: sampling/token_constraint.h) is
    // complete: nothing but an end-of-generation token could follow. Unlike eog and
    // stop_token, the last token is part of the output.
    constraint,
};

// "length", "eog", "stop_token", "context", "cancelled", "error", "constraint"
std::string_view to_string(StopReason reason);

}  // namespace tdm
