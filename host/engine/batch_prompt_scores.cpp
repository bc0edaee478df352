// SPDX-License-Identifier: Apache-2.0
// host/engine/batch_prompt_scores.cpp: the engine's side of prompt logprobs (Session-
// Request::prompt_logprobs, completions' "echo" with "logprobs"). A chunk's rows go to the
// scorer (engine/prompt_scorer.h), whose worker reduces each to its token's logprob and top
// tokens while this thread steps every session on; finished scores reach the session's
// callback here, on the engine thread, in prompt order. A session runs at most
// kScoreBacklog chunks ahead of its scores, and its last prompt token (whose pass gives the
// first generated token) only once every score is in: so all of them come before the first
// token, as SessionRequest promises, and the rows held for the worker stay few.
// Not here: the reduction (engine/token_logprobs.h), the chunk sizes (batch_engine.cpp).
#include <algorithm>

#include "engine/batch_engine.h"
#include "engine/batch_session.h"

namespace tdm {
namespace {

// Chunks of one session submitted and not yet scored before it waits for them.
constexpr size_t kScoreBacklog = 2;

}  // namespace

void BatchEngine::hold_prompt_scoring(bool held) {
    scorer_held_ = held;
    if (scorer_) scorer_->hold(held);
}

void BatchEngine::submit_prompt_rows(Session& s, const float* rows, uint32_t n_rows) {
    // Row i (position n_kv + i) predicts the prompt token after it; the last prompt row
    // predicts the first generated token instead. Rows scored before a preemption are not
    // scored again.
    const uint32_t n_prompt = uint32_t(s.req.prompt.size());
    const uint32_t first = std::max(s.n_kv + 1, s.prompt_scored);
    const uint32_t end = std::min(s.n_kv + n_rows + 1, n_prompt);
    if (first >= end) return;
    if (!scorer_) {
        scorer_ = std::make_unique<PromptScorer>();
        scorer_->hold(scorer_held_);
    }
    const uint32_t n_vocab = runner_.model().info().n_vocab;
    scorer_->submit(&s, rows + size_t(first - 1 - s.n_kv) * n_vocab, n_vocab,
                    std::span<const int32_t>(s.req.prompt).subspan(first, end - first), first,
                    uint32_t(s.req.prompt_logprobs));
    s.prompt_scored = end;
}

void BatchEngine::take_prompt_scores() {
    if (!scorer_) return;
    Session* last = nullptr;  // scores come in runs of one session
    scorer_->take_done([&](PromptScorer::Key key, const PromptScorer::Score& score) {
        if (!last || last != key) {
            last = nullptr;
            for (auto& s : active_)
                if (s.get() == key) last = s.get();
            for (auto& s : waiting_)  // preempted since
                if (s.get() == key) last = s.get();
        }
        if (last && last->req.on_prompt_logprob) last->req.on_prompt_logprob(score.pos, score.token, score.lp);
    });
}

bool BatchEngine::awaits_scores(const Session& s) const {
    if (!scorer_ || !s.scores_prompt()) return false;
    const size_t queued = scorer_->queued(&s);
    return queued >= kScoreBacklog || (queued > 0 && s.history.size() - s.n_kv == 1);
}

}  // namespace tdm
