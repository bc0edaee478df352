/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/batch_session.h: what the batching engine keeps per session (private to
// batch_engine.cpp, which admits and runs sessions, and batch_session.cpp, which drafts
// for one and settles its rows after a pass with the steps of speculative/round.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/batch_engine.h"
#include "speculative/chain_goodput.h"
#include "speculative/constrained_round.h"
#include "speculative/tree_choice.h"

namespace tdm {

struct BatchEngine::Session {
    SessionRequest req;
    std::vector<int32_t> history;  // prompt + emitted; history.back() is not in the KV yet
    uint32_t n_kv = 0;             // tokens of history whose rows are in the slot's KV
    Slot* slot = nullptr;
    uint64_t admitted_at = 0;
    std::optional<Sampler> sampler;
    bool greedy = true;
    std::optional<StreamDecoder> stream;
    StopRule stop;
    // Its own clone of params.constraint, in its state after the tokens so far; null: none.
    std::unique_ptr<TokenConstraint> constraint;
    // the chain this admission uses (ChainedDrafter::shared: the index in shared_)
    std::vector<ChainedDrafter> chain;
    std::vector<Drafter*> stat_drafters;  // result.spec.drafters[i] is this drafter's
    ChainGoodput tune;  // which drafter to ask and its length (auto_k; met in start_drafters)
    TreeChoice tree_choice;  // this round: a tree or a chain of as many rows (tree_choice.h)
    bool tree_chosen = false;  // this round's proposal went through tree_choice
    int planned_k = -1;              // this pass's drafts from plan_drafts(); -1: its own choice
    double draft_ms_per_token = 0;   // EMA
    int zero_streak = 0;
    bool skip_next = false;
    bool done = false;
    SessionResult result;
    uint32_t n_cached_first = 0;     // resumed at the first admission (progress counts from it)
    // The next prompt position whose logprobs are due (prompt_logprobs): a prompt computed
    // again after a preemption does not report those it reported already.
    uint32_t prompt_scored = 1;
    double t_admitted = 0, t_first = 0;
    uint64_t rounds = 0;
    // depth 2 (prepare_next): the k decided for the next pass and the chain entry prepared
    int next_k = -1;
    int prepared = -1;
    // this pass
    Proposal proposal;  // the drafts in its rows and the chain entry that proposed them
    DraftStates draft_states;  // with a constraint: its state after each draft (constrained_round.h)
    int cut_at = -1;           // this round: where the constraint cut the draft (-1: it did not)
    MaskedRows masked;         // with a constraint: this round's rows as it masks them
    int k = 0;
    double draft_ms = 0;
    uint32_t chunk = 0;  // history rows in the pass (drafts not counted)
    // tokens settled this pass, with the output row behind each, until deliver()
    std::vector<std::pair<int32_t, uint32_t>> fresh;

    uint32_t pos() const { return uint32_t(history.size()) - 1; }  // of history.back()
    // The prompt's logprobs are due (SessionRequest::prompt_logprobs): its whole prompt runs.
    bool scores_prompt() const { return req.prompt_logprobs >= 0 && result.tokens.empty(); }
    // The prompt's rows go through the pass with their logits (SessionRequest::logits_all, or
    // for their logprobs).
    bool all_rows() const { return (req.logits_all && result.tokens.empty()) || scores_prompt(); }
    // Whether the host reads its logits: a sampler at T > 0 (or with bias or penalties), a
    // constraint's masks, logprobs, a logits sink. A greedy session needs only the argmax.
    bool reads_logits() const {
        return !greedy || constraint || req.logits_sink || req.logprobs >= 0 || scores_prompt();
    }

    // The drafter asked first this round: the goodput controller's first (chain_goodput.h,
    // after it ranked the round), with fixed k the chain's first still on.
    ChainedDrafter* opener() {
        if (req.spec.auto_k)
            for (size_t i : tune.order())
                if (chain[i].on) return &chain[i];
        return first_on(chain);
    }

    DrafterStats& stats_of(const ChainedDrafter& d) { return result.spec.drafters[d.stat]; }
    void turn_off(ChainedDrafter& d, const Error& e) { tdm::turn_off(d, result.spec, e); }
};

}  // namespace tdm
