/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/prompt_scorer.h: the prompt tokens' logprobs (completions' "echo" with
// "logprobs", SessionRequest::prompt_logprobs) reduced on a worker thread, so that the
// engine thread keeps stepping every other session while a long prompt is scored. A pass's
// rows are copied into buffers the scorer reuses (the pass's logits live only until the
// next one); each row's O(vocab) log-softmax and top-N (token_logprobs.h) run on the
// worker; the engine takes the finished scores back on its own thread, in submission
// order, and hands them to the session's callback there.
// Not here: which rows are due and when a session waits for its scores (engine/
// batch_session.cpp), nor the reduction itself (engine/token_logprobs.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "engine/token_logprobs.h"

namespace tdm {

class PromptScorer {
public:
    struct Score {
        uint32_t pos = 0;  // of the prompt token scored
        int32_t token = 0;
        TokenLogprobs lp;
    };
    // What the engine is told a score belongs to (a session; never dereferenced here).
    using Key = const void*;

    PromptScorer();
    // Joins the worker; what was not taken is dropped.
    ~PromptScorer();
    PromptScorer(const PromptScorer&) = delete;
    PromptScorer& operator=(const PromptScorer&) = delete;

    // Engine thread: score tokens[i] at position first_pos + i under rows[i] ([n_vocab] raw
    // logits each, copied before this returns), with the n_top most likely tokens.
    void submit(Key key, const float* rows, uint32_t n_vocab, std::span<const int32_t> tokens, uint32_t first_pos,
                uint32_t n_top);
    // Engine thread: hands each score of the work finished so far to `on`, in the order it
    // was submitted; returns at once (nothing finished: nothing is handed).
    void take_done(const std::function<void(Key key, const Score& score)>& on);
    // Submissions of `key` not yet taken back (queued, running or finished).
    size_t queued(Key key) const;
    bool idle() const;  // nothing queued, running or finished but not taken
    // Blocks until some work has finished (returns at once when there is none to wait for).
    void wait_for_one();
    // The session `key` ended: its work is dropped, whatever its state.
    void forget(Key key);
    // For tests: while held, the worker starts nothing, so that a test can count what
    // other sessions do meanwhile (wait_for_one would then wait for ever).
    void hold(bool held);

private:
    struct Job {
        Key key = nullptr;
        std::vector<float> rows;  // [tokens.size()][n_vocab]
        std::vector<int32_t> tokens;
        uint32_t n_vocab = 0, first_pos = 0, n_top = 0;
        std::vector<Score> scores;
        bool dropped = false;  // forgotten while running
    };
    void work();
    void recycle(std::unique_ptr<Job> job);  // under mutex_

    mutable std::mutex mutex_;
    std::condition_variable wake_worker_, finished_;
    std::deque<std::unique_ptr<Job>> queue_;  // not started, in submission order
    std::unique_ptr<Job> running_;
    std::deque<std::unique_ptr<Job>> done_;  // finished, not taken yet
    std::vector<std::vector<float>> spare_rows_;  // buffers of finished jobs, for the next ones
    bool held_ = false, stop_ = false;
    std::thread worker_;
};

}  // namespace tdm
