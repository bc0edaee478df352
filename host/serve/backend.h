/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/backend.h: what the HTTP server (serve/http_server.h) asks of the model it
// serves. The server owns HTTP: routing, authentication, limits, admission, streaming,
// metrics; a Backend owns the model: templates, tokenization, generation. Keeping the two
// apart lets the server be tested with a scripted backend and lets the engine behind it
// change.
#pragma once

#include "image/patch_processor.h"
#include "sampling/token_constraint.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "speculative/stats.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::server {

// A request made ready to run: its prompt as token ids, checked against the context.
struct Job {
    GenerationRequest request;  // its messages' images moved out into `images`
    // With images: one place token per image, which the engine thread expands to the
    // image's rows once it has encoded it (serve/image_inputs.h).
    std::vector<int32_t> prompt;
    // The prompt's images preprocessed into patches, in prompt order; null: none.
    std::shared_ptr<const std::vector<ImagePatches>> images;

    // The most seconds the request may spend in the engine, from when it leaves the queue
    // (waiting for KV blocks and prefill count; 0: no limit); past it, it stops and what it
    // made so far is the answer, with finish_reason "length" (llama-server's t_max_predict_ms).
    uint32_t time_limit_s = 0;
    // Whether the client has gone (hung up), asked while the request waits and runs; when
    // it turns true the generation is cancelled at its next step. Empty: never asked.
    std::function<bool()> client_gone;
    // What the output must be (request.constraint, built), in its start state; null: anything.
    std::shared_ptr<const TokenConstraint> constraint;
    // How the reply's tool calls are written (the served template's family); none: the
    // request offers no tools (or tool_choice "none") and the reply is plain content.
    ToolCallFormat tool_format = ToolCallFormat::none;
    // completions with "echo": the prompt's text (token ids detokenized), which run() hands
    // to each choice's sink first, with the prompt tokens' logprobs when the request asks for
    // logprobs.
    std::string echo;
};

struct Outcome {
    std::string finish_reason;  // "stop" (end of turn or a stop string) or "length"
    Usage usage;
    uint64_t drafted = 0, accepted = 0;  // speculative decoding: tokens proposed and kept
    ControllerStats controller;          // what the goodput controller chose (on: false with fixed k)
    double measured_speedup = 0;         // decode tokens per ms over the controller's plain step estimate
    bool timed_out = false;              // stopped by Job::time_limit_s
    // The sum of the generated tokens' logprobs, end-of-turn included; kept when the request
    // ranks its sequences (best_of > n), 0 otherwise.
    double cumulative_logprob = 0;
};

// What the engine behind a backend reports for /metrics.
struct EngineGauges {
    uint32_t running = 0, waiting = 0;  // sessions in passes, sessions waiting for a slot or KV
    uint32_t kv_blocks_used = 0, kv_blocks_free = 0, kv_blocks_shared = 0;
    uint32_t kv_block_size = 0;  // tokens per block
    uint64_t prefix_hits = 0, cached_tokens = 0, preemptions = 0;
    std::vector<uint64_t> drafted_at, accepted_at;  // [i]: rounds with a draft i, rounds accepting it
};

// Output as it becomes final: text (stop strings already applied) and, when the request
// asked for them, the logprobs of the tokens behind it. Returns false when nobody wants
// more (the client has gone), which ends the generation early.
using TextSink = std::function<bool(std::string_view text, const std::vector<TokenLogprob>* logprobs)>;
// The same for the choices of a request (GenerationRequest::n), each by its index; called
// from one thread per choice, possibly at the same time.
using ChoiceSink =
    std::function<bool(uint32_t choice, std::string_view text, const std::vector<TokenLogprob>* logprobs)>;

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

    // Requests that may run at once (the server admits no more than this to run()).
    virtual uint32_t parallel() const { return 1; }
    virtual EngineGauges gauges() const { return {}; }

    // Generates the job's sequences (generated_sequences(): n choices, or best_of to rank);
    // the outcomes in sequence order.
    // Called from several threads at once, up to parallel(). Any choice failing fails the
    // whole request; the client going (Job::client_gone) cancels every choice.
    virtual ApiResult<std::vector<Outcome>> run(const Job& job, const ChoiceSink& on_text) = 0;
};

}  // namespace tdm::server
