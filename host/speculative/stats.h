/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/stats.h: speculative decoding statistics: llama.cpp-style counters
// per drafter, and the round-level numbers of DESIGN §4 (acceptance per draft
// position, mean accepted length, tokens per target pass, verify/draft time).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace tdm {

struct DrafterStats {
    std::string name;
    uint64_t calls_begin = 0, calls_gen = 0, calls_acc = 0;
    uint64_t gen_drafts = 0;  // proposals with at least one token
    uint64_t acc_drafts = 0;  // proposals with at least one token accepted
    uint64_t gen_tokens = 0, acc_tokens = 0;
    double dur_begin_ms = 0, dur_gen_ms = 0, dur_acc_ms = 0;
    std::string failure;  // non-empty: the drafter failed and was turned off for the request

    // "statistics draft: #calls(b,g,a) = 1 16 16, #gen drafts = ..., dur(b,g,a) = ... ms"
    std::string line() const;
    nlohmann::json json() const;
};

// What the goodput controller (goodput.h) chose for a sequence; `on` false: fixed k.
struct ControllerStats {
    bool on = false;
    uint64_t off_steps = 0;      // plain steps it chose (calibrating, drafting off)
    uint64_t probes = 0;         // k = 1 rounds it ran while drafting was off
    uint64_t chosen_rounds = 0;  // rounds it chose to draft
    uint64_t chosen_k_sum = 0;   // their draft lengths, summed
    double predicted_sum = 0;    // the speedup it predicted for each of them, summed
    double plain_ms = 0;         // its estimate of a plain step (the measured speedup's baseline)

    double mean_k() const { return chosen_rounds ? double(chosen_k_sum) / double(chosen_rounds) : 0.0; }
    double predicted_speedup() const { return chosen_rounds ? predicted_sum / double(chosen_rounds) : 1.0; }
    void add(const ControllerStats& o);
};

struct SpecStats {
    std::vector<DrafterStats> drafters;
    uint64_t rounds = 0;          // verify passes
    uint64_t plain_steps = 0;     // single-token target passes (no draft, skipped, or auto-off)
    uint64_t drafted = 0, accepted = 0;
    uint64_t emitted = 0;         // tokens produced in the decode phase (first token included)
    std::vector<uint64_t> drafted_at, accepted_at;  // per draft position (0 = first draft token)
    double draft_ms = 0, verify_ms = 0, accept_ms = 0, plain_ms = 0;
    double plain_accept_ms = 0;   // of accept_ms, the plain steps': settling a token after a pass
    ControllerStats controller;
    // Under a token constraint (constrained_round.h): proposals cut at a draft it forbids,
    // and the drafts cut from them (never verified).
    uint64_t constraint_cuts = 0, constraint_cut_tokens = 0;
    // Tree rounds (draft_tree.h; counted in rounds, drafted and accepted too): the nodes
    // verified, and per depth d the rounds that accepted d drafts.
    uint64_t tree_rounds = 0, tree_nodes = 0;
    std::vector<uint64_t> tree_depths;
    // Rounds that could have verified a tree and verified a chain of as many rows instead
    // (tree_choice.h: a CPU device, or chains measured to pay better).
    uint64_t tree_chains_chosen = 0;

    uint64_t target_passes() const { return rounds + plain_steps; }
    double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
    double mean_accepted_length() const { return rounds ? double(accepted) / double(rounds) : 0.0; }
    double tokens_per_target_pass() const;
    // Decode tokens per ms over the controller's plain step estimate: what speculation gave
    // (0 when there is no estimate).
    double measured_speedup() const;
    void add_round(uint32_t n_drafted, uint32_t n_accepted);
    // A tree of n_nodes (root included) whose accepted path held `depth` drafts.
    void add_tree_round(uint32_t n_nodes, uint32_t depth);

    std::string report() const;  // multi-line, printed after `tandem run`
    nlohmann::json json() const;
};

}  // namespace tdm
