/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/serve_backend.h: the model behind `tandem serve` (server/backend.h), on the
// engine of `tandem run` and `tandem chat`: one sequence, requests one at a time.
//
// Each request's prompt (a chat rendered with the model's template and tokenized as
// `tandem run -p TEXT` would, or a completion prompt) resumes from the longest prefix the
// KV already holds (engine/continuation.h): a conversation's next turn, or any request
// repeating the system prompt of the one before, prefills only what is new. Batch
// invariance makes the tokens those of a fresh `tandem run` on the same prompt.
#pragma once

#include "cli/end_of_turn.h"
#include "engine/generate.h"
#include "engine/runner.h"
#include "server/backend.h"
#include "speculative/scheduler.h"
#include "tokenizer/chat_template.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tdm::cli {

class ServeBackend final : public server::Backend {
public:
    struct Setup {
        std::string model_id;
        Runner* runner = nullptr;
        const Tokenizer* tokenizer = nullptr;
        std::optional<ChatTemplate> chat_template;  // unset: /v1/chat/completions is refused
        std::vector<Drafter*> drafters;             // empty: plain decoding
        SpecParams spec;
        GenerateParams defaults;  // sampling, n_batch, max_tokens (-1: to the end of the context)
    };
    // Fails without a tokenizer or a free sequence in the KV.
    static Result<std::unique_ptr<ServeBackend>> create(Setup setup);

    const std::string& model_id() const override { return setup_.model_id; }
    server::ApiResult<server::Job> prepare(server::GenerationRequest request) const override;
    server::ApiResult<std::vector<int32_t>> tokenize(const server::TokenizeRequest& request) const override;
    std::string token_piece(int32_t id) const override;
    server::ApiResult<std::string> detokenize(const server::DetokenizeRequest& request) const override;
    server::ApiResult<server::Outcome> run(const server::Job& job,
                                           const std::function<bool(std::string_view)>& on_text) override;

    uint32_t context_tokens() const;

private:
    explicit ServeBackend(Setup setup) : setup_(std::move(setup)) {}
    server::ApiResult<GenerateParams> generate_params(const server::GenerationRequest& r) const;
    bool speculate(const server::GenerationRequest& r) const;

    Setup setup_;
    int seq_ = -1;
    std::vector<int32_t> kv_tokens_;                // what the sequence's KV holds
    EndOfTurnPieces end_of_turn_pieces_;
};

}  // namespace tdm::cli
