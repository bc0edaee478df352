/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/batch_engine.h: continuous batching. Many requests (sessions) share one
// model; each step() runs ONE forward pass over the rows of every active session:
// [last, d1..dk] for a decoding session (k drafts from its own chain, or none), a chunk of
// the prompt for one that is prefilling. Then each session's rows settle as a speculative
// round (speculative/round.h: verify with its own sampler and RNG, rollback of its KV, its
// drafters' accept) and it streams its tokens. The engine schedules (admission, slots, who
// runs, the pass) and delivers; what a round decides is round.h's, which knows no engine:
// engine -> speculative -> model, never back.
//
// Exactness: the kernels are batch-invariant (DESIGN invariant 1) and attention reads
// only the rows of a row's own sequence, so a session's logits, and with them its greedy
// or seeded tokens, do not depend on which other sessions share its passes.
//
// KV slots (sequences of the pool) outlive their sessions: a finished session leaves its
// tokens in its slot, and a new request takes the idle slot sharing the longest prefix
// with its prompt (a system prompt, a conversation's earlier turns) and prefills only the
// rest: llama-server's slot reuse. Admission waits while the pool lacks the blocks a
// prompt needs (idle slots are emptied first); a pass that finds no free block preempts
// the most recently admitted session, which later recomputes its tokens (exact again,
// by batch invariance) and loses nothing.
//
// Drafters: a session's own (n-gram drafters; a draft head's sequence, DraftHeadDrafter::
// another(), whose head batches all sessions' drafts in one graph, DraftBatcher), and
// shared ones (a draft model: one sequence of state), which a session uses when no other
// session holds them. Models with recurrent state (Qwen3.5's Gated DeltaNet) batch
// sequences too when their plugin declares TDM_MODEL_BATCHED_STATES: each sequence's rows
// are a segment that reads and checkpoints its own state (graph/graph.h, StateBinding);
// otherwise the sessions take turns, one per pass.
//
// An output constraint (GenerateParams::constraint: a grammar, a JSON schema) is the
// session's own clone: it masks every row the session's token comes from (a plain step's, each
// verify row's in its state after the drafts before it) and cuts drafts at a token it forbids
// (speculative/constrained_round.h); the session ends once it is complete.
//
// The CLI runs the same engine with one session on one sequence (engine/solo.h): plain and
// speculative generation are this code path, with what a single request adds (logits
// dumps, prefill progress and the prompt cache's pause, per-round traces, the depth-2
// overlap: while one session runs alone, its next draft is prepared before its text is
// delivered).
// Files: batch_engine.cpp (sessions, slots, the step and its pass), batch_session.cpp (one
// session's drafts before the pass and its settle after it), batch_session.h (the session).
// Not thread-safe: one thread calls add() and step() (serve/serve_backend.h wraps it).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generate.h"
#include "engine/prompt_images.h"
#include "engine/prompt_scorer.h"
#include "engine/token_logprobs.h"
#include "model/runner.h"
#include "sampling/sampler.h"
#include "speculative/goodput.h"
#include "speculative/batch_budget.h"
#include "speculative/drafter.h"
#include "speculative/round.h"
#include "speculative/stats.h"
#include "tokenizer/stream.h"

namespace tdm {

// One drafter of a session's chain: its own, or one the engine shares (see above).
struct DrafterSlot {
    std::unique_ptr<Drafter> owned;
    Drafter* shared = nullptr;
    Drafter* get() const { return owned ? owned.get() : shared; }
};

struct SessionResult {
    std::vector<int32_t> tokens;  // generated
    StopReason stop_reason = StopReason::length;  // as GenerateResult's; error with `error` set
    std::string error;
    uint32_t n_prompt = 0;
    uint32_t n_cached = 0;        // prompt tokens resumed from a slot's KV
    // Prompt tokens in the KV when the session ended, n_cached included: n_prompt once its
    // prefill finished, fewer when it was cancelled (or failed) before.
    uint32_t n_prompt_done = 0;
    uint32_t preempted = 0;       // times the session gave its KV back and recomputed
    bool admitted = false;        // it had a slot at some point (else the KV was never touched)
    // The slot's KV holds the first n_kv tokens of prompt + tokens (all but the last
    // generated token, normally); 0 after an error.
    uint32_t n_kv = 0;
    double prefill_ms = 0, decode_ms = 0;  // first admission to first token; first token to the end
    SpecStats spec;               // per drafter of its chain, rounds, acceptance by position
};

struct SessionRequest {
    std::vector<int32_t> prompt;
    // The prompt's images (tdm.encoder): their rows replace the placeholder tokens' embeddings
    // and their rotary positions shift what follows (engine/prompt_images.h). A slot's KV is
    // reused only up to the first image row: placeholder tokens do not say which image.
    std::shared_ptr<const PromptImages> images;
    GenerateParams params;  // max_tokens, sampling, ignore_eog, stop_tokens, constraint
    SpecParams spec;        // draft_max, draft_min, auto_k
    std::vector<DrafterSlot> drafters;
    // -1: no logprobs; n >= 0: each token's, and the n most likely tokens (on_token's `lp`).
    int32_t logprobs = -1;
    // -1: none; n >= 0: the prompt's tokens' logprobs too (completions' "echo" with
    // "logprobs"): each token's given the tokens before it, with the n most likely tokens
    // there, through on_prompt_logprob in prompt order (positions 1 .. prompt size - 1:
    // nothing predicts the first), on the engine thread as the worker that reduces each
    // chunk's rows (engine/prompt_scorer.h) hands them back, all before the first generated
    // token. Such a session computes its whole prompt, resuming no slot's KV and
    // sharing no other slot's blocks, since rows taken from the KV have no logits; its KV is
    // still left for later requests to resume.
    int32_t prompt_logprobs = -1;
    std::function<void(uint32_t pos, int32_t token, const TokenLogprobs& lp)> on_prompt_logprob;
    // Engine thread: each emitted token with the text that became complete (may be "") and,
    // when asked, its logprobs. Returning false ends the session (StopReason::cancelled).
    std::function<bool(int32_t token, std::string_view piece, const TokenLogprobs* lp)> on_token;
    // Engine thread, once: the session is over. The result's text tail (held-back UTF-8
    // bytes) came through on_token(-1, tail, nullptr) just before.
    std::function<void(const SessionResult&)> on_done;
    // Set from any thread: the session ends at its next step.
    std::shared_ptr<const std::atomic<bool>> cancel;
    // What a single request adds (engine/solo.h), all optional. logits_sink gets the logits
    // row behind each emitted token; with logits_all, every prompt row's first (the last
    // one is the first token's). on_progress after each prompt chunk; on_prefix once the
    // KV holds all of the prompt but its last token (chunks stop there; an error ends the
    // session). on_round after every round but the prompt's.
    LogitsSink logits_sink;
    bool logits_all = false;
    ProgressHook on_progress;
    std::function<Status(uint32_t n_kv)> on_prefix;
    std::function<void(const RoundRecord&)> on_round;
};

struct BatchEngineOptions {
    uint32_t n_batch = 256;        // prompt rows of one session per pass
    uint32_t max_batch_rows = 512; // rows of one pass (decode rows always fit)
    bool reuse_slots = true;       // the prefix cache
    // The pool's sequences to use as slots; empty: every sequence the pool can still add.
    std::vector<int> seqs;
    // The target hidden state the sessions' own drafters read (shared drafters say theirs).
    tdm_hidden_point hidden_point = TDM_HIDDEN_NONE;
};

struct BatchEngineStats {
    uint64_t steps = 0, rows = 0;
    uint64_t prefix_hits = 0, cached_tokens = 0;
    uint64_t shared_prefixes = 0;  // prefix hits that share another slot's blocks
    uint64_t preemptions = 0;
    uint64_t failed_passes = 0;  // passes that failed and were run again one session at a time
    uint64_t drafted = 0, accepted = 0;
    std::vector<uint64_t> accepted_at;  // [i]: rounds whose draft i was accepted
    std::vector<uint64_t> drafted_at;   // [i]: rounds with at least i + 1 drafts
};

class BatchEngine {
public:
    // Every sequence slot of the runner's pool becomes a slot of this engine.
    static Result<std::unique_ptr<BatchEngine>> create(Runner& runner, const Tokenizer* tokenizer,
                                                       BatchEngineOptions options,
                                                       std::vector<Drafter*> shared_drafters = {});
    ~BatchEngine();

    // Queues a request (checked when it is admitted; a bad one ends through on_done).
    void add(SessionRequest request);
    // The caller vouches that the KV of the slot on pool sequence `seq` holds `tokens`
    // (position i: tokens[i]) and that every shared drafter's state follows it: a request
    // with that prefix resumes there (a chat's next turn, a restored prompt cache).
    void assume_slot_holds(int seq, std::span<const int32_t> tokens);
    // Admits what fits, runs one pass, delivers tokens. False when there was nothing to do.
    // An error of the pass ends the sessions in it (on_done with StopReason::error); the engine stays usable.
    bool step();
    // Ends every session, running or waiting, with StopReason::error and this message
    // (on_done is called for each): the engine is being shut down.
    void abort_all(const std::string& error);

    uint32_t running() const { return uint32_t(active_.size()); }
    uint32_t waiting() const { return uint32_t(waiting_.size()); }
    uint32_t slots() const { return uint32_t(slots_.size()); }
    const BatchEngineStats& stats() const { return stats_; }
    uint32_t kv_blocks_free() const;
    uint32_t kv_blocks_total() const;
    uint32_t kv_blocks_shared() const;
    // For tests: hold the worker that scores prompts (engine/prompt_scorer.h) or let it go
    // on, so that a test can count what other sessions do while a prompt waits for its
    // scores. While held, a step in which only such sessions could run waits for ever.
    void hold_prompt_scoring(bool held);

private:
    struct Session;
    struct Slot {
        int seq = -1;
        std::vector<int32_t> tokens;  // idle: what its KV holds (position i: tokens[i]); see kv_tokens()
        Session* user = nullptr;
        uint64_t last_used = 0;
        // The last request's own drafters fed by the target's hidden rows (a draft head's
        // sequence): they hold pairs for this KV, which a fresh one never saw, so the next
        // request resuming it drafts with them (start_drafters)
        std::vector<std::unique_ptr<Drafter>> kept;
    };
    BatchEngine(Runner& runner, const Tokenizer* tokenizer, BatchEngineOptions options);

    bool admit(std::unique_ptr<Session>& s);
    Slot* choose_slot(const Session& s, uint32_t* n_cached);
    // What a slot's KV holds: an idle slot's record, a busy slot's session's committed rows.
    std::span<const int32_t> kv_tokens(const Slot& slot) const;
    // Whether the session may resume a slot's KV or share another's blocks (the prefix cache).
    bool reuse(const Session& s) const;
    // Whether each of the session's own drafters fed by the target's hidden rows can start
    // after n_cached rows it did not compute: a fresh one has seen no rows, the slot's kept
    // one (start_drafters takes it over) those of the slot's last request. Resuming where
    // one cannot would leave it off for the whole request (a head picked by a request after
    // a plain one on the same prefix), so such a session computes its prompt instead.
    bool heads_resume(const Session& s, const Slot* slot, uint32_t n_cached) const;
    // The prompt tokens before a session's first image row: what may be reused or shared.
    static uint32_t text_prefix(const Session& s);
    bool make_room(uint32_t blocks, const Slot* keep);
    void preempt(Session& s);
    void finish(Session& s, StopReason reason, std::string error = {});
    // Ends the waiting session at the front with this error when nothing runs that could free
    // what it waits for.
    void refuse_stuck(std::string why);
    void start_drafters(Session& s, Slot& slot, uint32_t n_cached);
    // The session's draft length this pass; cap_only: its limits alone (no tuning).
    int decide_k(Session& s, bool cap_only = false) const;
    void plan_drafts(std::span<Session* const> part);
    Proposal draft(Session& s, int k);
    // The draft tree this round may verify (no nodes: a chain), for k chain drafts.
    TreeShape tree_shape(const Session& s, int k) const;
    // The k to draft this pass, and the drafter prepared for it cancelled if k differs.
    int pass_k(Session& s);
    // Sessions whose first drafter batches with others' (a draft head) start their drafts
    // in one graph per batcher.
    void prepare_batches(std::span<Session* const> part);
    // Each drafting session's time this pass, for its controller and its statistics (the
    // sessions that run it). The sessions of one batch drafted in one graph, whose cost fell on
    // whichever waited for it first: it is shared out among those that run by the drafts
    // the graph computed for them.
    void share_draft_time(std::span<Session* const> run);
    // After the pass: a prompt chunk, or a round. The round's steps, in order:
    void settle(Session& s, const ForwardOutput& out, uint32_t row0, uint32_t out0, double pass_ms);
    // logits_all: the chunk's rows to the sink; prompt_logprobs: their tokens' logprobs out;
    // returns the output row of its last token
    uint32_t sink_prompt_logits(Session& s, const ForwardOutput& out, uint32_t out0);
    // a prompt chunk but its last: the KV grows, the drafters reading hidden rows see them
    void settle_chunk(Session& s, const ForwardOutput& out, uint32_t row0);
    // the KV keeps the history and the accepted drafts; false: the session ended
    bool keep_accepted(Session& s, const ForwardOutput& out, uint32_t row0, const RoundResult& round);
    // the rows [first_pos, first_pos + n_rows) of the pass to the drafters that read hidden states
    // (after a tree round: the rows of its accepted path, tree_path)
    void show_target_rows(Session& s, const ForwardOutput& out, uint32_t row0, uint32_t first_pos, uint32_t n_rows,
                          std::span<const uint32_t> tree_path = {});
    // the prompt's end: its first token comes; false: the session ended
    bool start_decoding(Session& s);
    // the session's and the engine's statistics, auto-tuning and the skip streak
    void count_round(Session& s, const RoundResult& round, bool first_token, double pass_ms);
    // the round's tokens into the history, the drafters' accept; false once it must stop
    bool commit(Session& s, const RoundResult& round, bool first_token);
    // timings, the trace's record, and the end of a session that stopped
    void end_round(Session& s, const RoundResult& round, bool first_token, uint32_t pos, double pass_ms,
                   double accept_ms, bool running);
    // After the prompt's chunk (not its last): progress and the on_prefix pause; false: the
    // session ended.
    bool after_chunk(Session& s);
    // While the session runs alone: its next k decided and its first drafter prepared.
    void prepare_next(Session& s);
    // Hands the tokens settled this pass to the session's callbacks; false: it wants no more.
    bool deliver(Session& s, const ForwardOutput& out, uint32_t out0, bool first_row_sunk);
    static std::vector<KvTreeRow> kv_tree_rows(std::span<Session* const> run, std::span<const uint32_t> row0,
                                               size_t n_rows);
    // Runs one forward pass over the sessions' rows and settles each; false if it failed.
    // device_rows: the drafters may read the pass's hidden rows on the device (false when
    // passes run back to back before the sessions draft again: each overwrites them)
    bool pass(std::span<Session* const> run, bool device_rows = true);
    // Appends a token to the session; false once it must stop (the reason is set).
    bool record(Session& s, int32_t tok, uint32_t logits_row);
    // Prompt logprobs (batch_prompt_scores.cpp): the chunk's rows that are due go to the
    // scorer; the scores finished so far go to their sessions' callbacks; a session waits
    // (runs no rows) while its scores lag too far behind, or before its first token.
    void submit_prompt_rows(Session& s, const float* rows, uint32_t n_rows);
    void take_prompt_scores();
    bool awaits_scores(const Session& s) const;

    Runner& runner_;
    const Tokenizer* tokenizer_;
    BatchEngineOptions options_;
    std::vector<Drafter*> shared_;
    std::vector<Session*> shared_user_;  // per shared drafter: the session holding it
    std::vector<int> shared_slot_;       // per shared drafter: the slot it last followed
    std::vector<Slot> slots_;
    std::deque<std::unique_ptr<Session>> waiting_;
    std::vector<std::unique_ptr<Session>> active_;  // admission order
    uint64_t clock_ = 0;
    tdm_hidden_point hidden_point_ = TDM_HIDDEN_NONE;
    // When the model's recurrent states take one sequence per pass (Model::batches_sequences),
    // the sessions take turns: the index in active_ of the next one
    size_t next_single_ = 0;
    BatchEngineStats stats_;
    PassCostModel cost_;
    // What the sessions' goodput controllers learned, for the next ones (SpecParams::history
    // when the front end keeps its own across engines).
    GoodputHistory history_;
    GoodputHistory& history_of(const Session& s);
    // Reduces prompt rows to their logprobs off this thread; made at the first scored prompt.
    std::unique_ptr<PromptScorer> scorer_;
    bool scorer_held_ = false;
    size_t pass_sequences_ = 0;  // sequences in the pass being settled
    // This pass's batches of drafts (prepare_batches): their sessions, and what starting
    // the batch took (the catch-ups of those not ready, the graph's recording and submission).
    struct DraftBatch {
        std::vector<Session*> members;
        double start_ms = 0;
    };
    std::vector<DraftBatch> draft_batches_;
};

}  // namespace tdm
