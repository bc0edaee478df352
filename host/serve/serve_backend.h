/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/serve_backend.h: the model behind `tandem serve` (serve/backend.h): the
// continuous-batching engine (engine/batch_engine.h) on a thread of its own, which runs
// one forward pass per step over every request in progress (one per KV slot, --parallel).
// Not the HTTP side (serve/http_server.h) nor what passes between the engine thread and
// one request's worker (serve/request_channel.h).
//
// run() is called by the HTTP workers, one per request; each hands its session to the
// engine thread and streams what comes back. A prompt (a chat rendered with the model's
// template and tokenized as `tandem run -p TEXT` would, or a completion prompt) resumes
// from the idle slot sharing its longest prefix: a conversation's next turn, or any
// request repeating a system prompt, prefills only what is new (but a completion asking for
// its prompt's logprobs, "echo" with "logprobs", computes its whole prompt: rows resumed from
// the KV have no logits). Batch invariance makes the
// tokens those of a fresh `tandem run` on the same prompt, whatever runs beside it. A chat
// request's images (serve/request_images.h) are encoded on the engine thread, which owns the
// device, just before their session joins the batch.
//
// n choices (GenerationRequest::n; best_of of them when a completion ranks its sequences,
// each then summing its tokens' logprobs) are n sessions of the one prompt, choice i
// sampling with seed + i. Choices past the first reach the engine once the first has its
// prompt in the KV (its first token), so that they share its whole blocks (kv/kv_pool.h
// share_prefix) rather than prefill the prompt n times; where the pool cannot share (sliding
// windows, recurrent state) each prefills its own copy, which is slower and as exact. Each
// choice's images are encoded for it as it joins. An echoed prompt leads each choice's text;
// its tokens' logprobs, when asked, are computed once, by the first choice's prefill.
#pragma once

#include "engine/batch_engine.h"
#include "engine/generate.h"
#include "model/runner.h"
#include "serve/backend.h"
#include "serve/constraint_factory.h"
#include "serve/drafter_chain.h"
#include "serve/request_images.h"
#include "speculative/round.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/end_of_turn.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tdm::server {

class ServeBackend final : public Backend {
public:
    struct Setup {
        std::string model_id;
        Runner* runner = nullptr;
        const Tokenizer* tokenizer = nullptr;
        std::optional<ChatTemplate> chat_template;  // unset: /v1/chat/completions is refused
        std::vector<Drafter*> drafters;             // the chain, in order; empty: plain decoding
        // Per drafter of the chain: how to make one for each request (drafters that rebuild
        // from tokens, such as the n-gram ones), or null: that one drafter is shared, and
        // serves one request at a time (a draft model, an MTP head).
        std::vector<DrafterFactory> per_request;
        // Per drafter of the chain: the names a request's speculative.type may pick it by
        // besides its own (DrafterChain::types).
        std::vector<std::vector<std::string>> drafter_types;
        SpecParams spec;
        BatchEngineOptions engine;
        GenerateParams defaults;  // sampling, n_batch, max_tokens (-1: to the end of the context), ignore_eog
        ImageSupport images;      // the image encoder (image_url parts), or why there is none
        // Builds a request's output constraint (response_format, grammar, json_schema);
        // empty: requests asking for one are refused with a 400.
        ConstraintFactory constraints;
    };
    // Fails without a tokenizer or a free sequence in the KV. Starts the engine thread.
    static Result<std::unique_ptr<ServeBackend>> create(Setup setup);
    ~ServeBackend() override;

    const std::string& model_id() const override { return setup_.model_id; }
    ApiResult<Job> prepare(GenerationRequest request) const override;
    ApiResult<std::vector<int32_t>> tokenize(const TokenizeRequest& request) const override;
    std::string token_piece(int32_t id) const override;
    ApiResult<std::string> detokenize(const DetokenizeRequest& request) const override;
    ApiResult<std::vector<Outcome>> run(const Job& job, const ChoiceSink& on_text) override;

    uint32_t parallel() const override { return slots_; }
    uint32_t context_tokens() const;
    EngineGauges gauges() const override;

private:
    explicit ServeBackend(Setup setup) : setup_(std::move(setup)) {}
    ApiResult<GenerateParams> generate_params(const GenerationRequest& r) const;
    bool speculate(const GenerationRequest& r) const;
    Result<std::vector<DrafterSlot>> drafters_for(const GenerationRequest& r) const;
    void loop();

    // A session for the engine thread, with the images it encodes before the session starts.
    struct Arrival {
        SessionRequest session;
        std::shared_ptr<const std::vector<ImagePatches>> images;  // null: none
        std::shared_ptr<double> encode_ms;                        // written by the engine thread
    };
    void admit(Arrival& a);
    // Hands sessions to the engine thread (or, once it is quitting, ends them).
    void submit(std::vector<Arrival> arrivals);

    Setup setup_;
    EndOfTurnPieces end_of_turn_pieces_;
    std::unique_ptr<BatchEngine> engine_;  // touched by the engine thread only
    uint32_t slots_ = 1;
    // the engine thread's inbox
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Arrival> inbox_;
    bool quit_ = false;
    EngineGauges gauges_;  // under mutex_, refreshed after every step
    std::thread thread_;
};

}  // namespace tdm::server
