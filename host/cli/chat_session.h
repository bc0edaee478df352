/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/chat_session.h: the engine side of `tandem chat`: a conversation
// whose turns resume from the KV the previous turns left behind.
//
// Each turn renders the whole conversation with the chat template (generation
// prompt open), tokenizes it exactly as `tandem run -p TEXT` would, keeps the
// longest prefix the sequence's KV (and every drafter) already holds
// (engine/continuation.h), and generates the rest: plain, or speculative with
// drafters that live as long as the session. Batch invariance makes a turn's
// tokens those of one `run` on the rendered text.
//
// The assistant message stored for a turn is what the model saw of its own
// turn after the assistant role header: the tail of the generation prompt that
// the assistant format does not repeat (chatml-thinking's "<think>\n"), then
// the reply without its end-of-turn token (the template's assistant suffix
// writes that). The next rendering thus continues the tokens in the KV.
//
// The Conversation (messages + the tokens the KV holds) is the state a saved
// session needs beside the KV itself.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/generate.h"
#include "engine/state_file.h"
#include "model/runner.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/end_of_turn.h"

namespace tdm::cli {

struct Conversation {
    std::vector<ChatMessage> messages;  // the system message (if any), then user/assistant turns
    std::vector<int32_t> kv_tokens;     // what the sequence's KV holds: position i holds kv_tokens[i]
};

struct TurnResult {
    std::vector<int32_t> prompt;  // the rendered conversation's tokens
    GenerateResult gen;           // tokens, text (end-of-turn token included), stop_reason, timings, n_kv
    std::optional<SpecStats> spec;
    std::string reply;            // the assistant message's content as stored
};

// The session so far, for /stats.
struct SessionTotals {
    uint32_t turns = 0;
    uint64_t prompt_tokens = 0, cached_tokens = 0, generated_tokens = 0;
    uint64_t prefilled_tokens = 0;  // run by prefills (an interrupted one stops short)
    double prefill_ms = 0, decode_ms = 0;
    std::optional<SpecStats> spec;  // summed over the speculative turns
};

// Adds a turn's speculative counters and times to a running total (drafters by position).
void accumulate(SpecStats& total, const SpecStats& turn);

class ChatSession {
public:
    struct Setup {
        Runner* runner = nullptr;
        const Tokenizer* tokenizer = nullptr;
        std::vector<Drafter*> drafters;  // empty: plain decoding
        GenerateParams generate;         // max_tokens per reply, sampling, n_batch, ignore_eog
        SpecParams spec;
        std::optional<std::string> system_prompt;
    };
    // Fails without a tokenizer (a chat is text) or a free sequence in the KV.
    static Result<ChatSession> create(Setup setup, ChatTemplate chat_template);

    // One turn: the user's message, the reply (streamed to on_text without the
    // end-of-turn token's text). A set `cancel` stops the reply: the partial
    // reply stays in the conversation (a turn with no token is dropped) and the
    // KV keeps what it computed. A conversation that no longer fits the context
    // is an error that suggests /clear; the conversation is then unchanged.
    // `on_progress` reports a long prefill (a fresh hook per turn).
    Result<TurnResult> turn(const std::string& user_text, const std::atomic<bool>* cancel,
                            const std::function<void(const std::string&)>& on_text, ProgressHook on_progress = {});

    // Forgets the conversation (the system prompt stays) and the KV.
    Status clear();

    // /save FILE: the conversation (as the file's extra JSON) and the KV state
    // of its tokens (engine/state_file.h), so /load FILE, in this or a later
    // session of the same model, continues it without prefilling it again.
    Result<SavedStateInfo> save(const std::string& path);
    // /load FILE: replaces the conversation and the KV. A file of another model,
    // KV type or a corrupt one is refused, and so is a conversation this session
    // cannot continue (a role the template lacks, more than the context holds); the
    // conversation stays as it was (when the file's KV was read before the refusal,
    // the next turn computes the conversation's KV again).
    Status load(const std::string& path);

    const Conversation& conversation() const { return conv_; }
    const SessionTotals& totals() const { return totals_; }
    bool speculative() const { return !setup_.drafters.empty(); }
    uint32_t context_tokens() const;  // the sequence's capacity

private:
    ChatSession(Setup setup, ChatTemplate chat_template);
    Result<std::vector<int32_t>> render(const std::vector<ChatMessage>& messages) const;
    // The messages of a saved file's extra string, if this session can continue them.
    Result<std::vector<ChatMessage>> saved_conversation(const std::string& extra) const;
    std::string reply_content(const GenerateResult& gen) const;

    Setup setup_;
    ChatTemplate template_;
    EndOfTurnPieces end_of_turn_pieces_;
    std::string assistant_opening_;  // what the generation prompt adds after the assistant header
    int seq_ = -1;
    Conversation conv_;
    SessionTotals totals_;
};

}  // namespace tdm::cli
