/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/request_channel.h: what passes between the engine thread and the HTTP worker of
// one request. On the engine's side, each token becomes text for the client: end-of-turn
// tokens close the reply unseen (as OpenAI's API), stop strings hold text back
// (serve/stop_strings.h), and logprobs travel with the text their tokens released. On the
// worker's side, that text is streamed at the client's pace (its writes never hold up the
// engine), within the request's time limit, and the session is cancelled when the client
// hangs up. A completion's echoed prompt leads the text, with its tokens' logprobs when asked.
// Not the engine thread or its inbox (serve/serve_backend.h).
#pragma once

#include "engine/batch_engine.h"
#include "serve/backend.h"
#include "serve/stop_strings.h"
#include "tokenizer/end_of_turn.h"
#include "tokenizer/tokenizer.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tdm::server {

// A token's logprobs as the response reports them: token ids become their texts.
TokenLogprob response_logprob(const Tokenizer& tokenizer, int32_t id, const TokenLogprobs& lp);

class RequestChannel {
public:
    // `stop`: the request's stop strings; `ignore_eog`: end-of-turn tokens are text like any
    // other. The tokenizer and the pieces outlive the channel (the backend owns them).
    RequestChannel(std::vector<std::string> stop, bool ignore_eog, const Tokenizer& tokenizer,
                   const EndOfTurnPieces& end_of_turn);

    // The engine thread's side: sets the session's on_token, on_done and cancel, which keep
    // the channel alive as long as the engine holds the session.
    static void connect(const std::shared_ptr<RequestChannel>& channel, SessionRequest& session);
    // Text that comes before the session's own (completions' "echo"), with the logprobs of its
    // tokens (null: none asked). It goes out ahead of the first token's text, or at the end
    // when no token came (max_tokens 0), so that logprobs the engine thread writes into
    // `logprobs` during the prefill travel with it. Called before the session reaches the engine.
    void lead_with(std::string text, std::shared_ptr<const std::vector<TokenLogprob>> logprobs);

    struct Ended {
        SessionResult result;
        bool stopped = false;    // by a stop string
        bool timed_out = false;  // past the time limit, and cancelled there
    };
    // The worker's side, once the session is in the engine's inbox: hands each piece of text
    // to on_text (with its logprobs when `want_logprobs`) until the session is over. Past
    // `time_limit_s` (0: none), when on_text returns false, or when `client_gone` (asked
    // between pieces and every 100 ms while none comes, as during a prefill) says true, the
    // session is cancelled and `wake_engine` called, so that a sleeping engine thread ends it
    // at its next step.
    Ended stream(const TextSink& on_text, bool want_logprobs, uint32_t time_limit_s,
                 const std::function<bool()>& client_gone, const std::function<void()>& wake_engine);

private:
    using Piece = std::pair<std::string, std::vector<TokenLogprob>>;

    // engine thread
    bool on_token(int32_t id, std::string_view piece, const TokenLogprobs* lp);
    void on_done(const SessionResult& result);
    void deliver(std::string text, std::vector<TokenLogprob> lp);
    void deliver_lead();

    StopMatcher stops_;                    // engine thread; read by the worker once the result is in
    std::vector<TokenLogprob> pending_lp_;  // engine thread: logprobs of text held back
    std::optional<std::string> lead_;       // engine thread, once lead_with() is done: not yet delivered
    std::shared_ptr<const std::vector<TokenLogprob>> lead_lp_;
    const bool ignore_eog_;
    const Tokenizer& tokenizer_;
    const EndOfTurnPieces& end_of_turn_;

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Piece> pieces_;             // under mutex_
    std::optional<SessionResult> result_;  // under mutex_
    std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace tdm::server
