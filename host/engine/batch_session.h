/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/batch_session.h: what the batching engine keeps per session (private to
// batch_engine.cpp, which admits and runs sessions, and batch_session.cpp, which drafts
// for one and settles its rows after a pass).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/log.h"
#include "engine/batch_engine.h"

namespace tdm {

double engine_now_ms();

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
    // the chain this admission uses: drafters, whether each is still on, for shared ones
    // their index in shared_ (-1: the session's own), and their entry in result.spec.drafters
    std::vector<Drafter*> chain;
    std::vector<char> on;
    std::vector<int> shared_index;
    std::vector<size_t> stat;
    std::vector<Drafter*> stat_drafters;  // result.spec.drafters[i] is this drafter's
    AutoTune tune{1};
    int planned_k = -1;              // this pass's drafts from plan_drafts(); -1: its own choice
    int starved = 0;                 // passes in a row plan_drafts() gave it nothing
    double draft_ms_per_token = 0;   // EMA
    int zero_streak = 0;
    bool skip_next = false;
    bool done = false;
    SessionResult result;
    uint32_t n_cached_first = 0;     // resumed at the first admission (progress counts from it)
    double t_admitted = 0, t_first = 0;
    uint64_t rounds = 0;
    // depth 2 (prepare_next): the k decided for the next pass and the chain entry prepared
    int next_k = -1;
    int prepared = -1;
    // this pass
    std::vector<int32_t> drafts;
    int k = 0;
    int winner = -1;
    double draft_ms = 0;
    uint32_t chunk = 0;  // history rows in the pass (drafts not counted)
    // tokens settled this pass, with the output row behind each, until deliver()
    std::vector<std::pair<int32_t, uint32_t>> fresh;

    uint32_t pos() const { return uint32_t(history.size()) - 1; }  // of history.back()
    // The prompt's rows go through the pass with their logits (SessionRequest::logits_all).
    bool all_rows() const { return req.logits_all && result.tokens.empty(); }

    DrafterStats& stats_of(size_t i) { return result.spec.drafters[stat[i]]; }
    void turn_off(size_t i, const Error& e) {
        if (!on[i]) return;
        on[i] = 0;
        stats_of(i).failure = e.message();
        TDM_LOG_WARN("spec", "drafter {} failed and is off for the rest of this request (the output is unchanged): {}",
                     chain[i]->name(), e.message());
    }
};

}  // namespace tdm
