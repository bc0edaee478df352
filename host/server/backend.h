/* SPDX-License-Identifier: Apache-2.0 */
// host/server/backend.h: what the HTTP server (server/http_server.h) asks of the model it
// serves. The server owns HTTP: routing, authentication, limits, admission, streaming,
// metrics; a Backend owns the model: templates, tokenization, generation. Keeping the two
// apart lets the server be tested with a scripted backend and lets the engine behind it
// change (one sequence at a time today; many sequences per step is issue 13's engine).
#pragma once

#include "server/openai_request.h"
#include "server/openai_response.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

// A request made ready to run: its prompt as token ids, checked against the context.
struct Job {
    GenerationRequest request;
    std::vector<int32_t> prompt;
};

struct Outcome {
    std::string finish_reason;  // "stop" (end of turn or a stop string) or "length"
    Usage usage;
    uint64_t drafted = 0, accepted = 0;  // speculative decoding: tokens proposed and kept
};

class Backend {
public:
    virtual ~Backend() = default;

    // The id /v1/models lists and responses carry; requests naming another are refused.
    virtual const std::string& model_id() const = 0;

    // Tokenization is immutable and may run on any thread, beside a generation.
    virtual ApiResult<Job> prepare(GenerationRequest request) const = 0;
    virtual ApiResult<std::vector<int32_t>> tokenize(const TokenizeRequest& request) const = 0;
    virtual std::string token_piece(int32_t id) const = 0;
    virtual ApiResult<std::string> detokenize(const DetokenizeRequest& request) const = 0;

    // Generates for a prepared job, giving text as it becomes final (stop strings already
    // applied); on_text returns false when nobody wants more (the client has gone), which
    // ends the generation early. One call at a time: the server serializes them.
    virtual ApiResult<Outcome> run(const Job& job, const std::function<bool(std::string_view)>& on_text) = 0;
};

}  // namespace tdm::server
