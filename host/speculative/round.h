/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/round.h: the speculative round, the one home of speculative decoding.
//
// Per round: drafters are asked in order until one proposes up to k tokens (propose; under
// the goodput controller in its order, each for its own length: chain_goodput.h);
// the target runs [last, d1..dk] in ONE batched pass (positions pos..pos+k); the longest
// prefix of drafts the target agrees with is accepted (greedy: its argmax; sampling: the
// rejection rule of Leviathan et al. 2023 with the sampler's exact distributions), plus
// the target's own next token (verify); the target's KV is truncated to the accepted
// length and drafters fed by the target's hidden states see the kept rows (rollback);
// every drafter of the chain hears the result and the statistics count it (accept,
// tally). No accepted token is ever recomputed: the verify pass's logits are the decode
// logits, bit for bit, because the kernels are batch-invariant (DESIGN invariant 1), so
// greedy output equals plain decoding's.
//
// Never slower: the goodput controller (goodput.h, the default of every front end) picks k
// each round from measured acceptance and costs, within --draft-max/--draft-min, and stops
// drafting when it does not pay; with fixed k (--spec-fixed) k is draft_max and a skip
// streak inserts a plain step after N rounds with nothing accepted. Depth 2: the next round's first
// drafter is prepared (device work submitted) before the host streams text, updates
// statistics and writes the trace.
//
// Who runs rounds: the batching engine (engine/batch_engine.h), for many sessions per pass
// or for one request alone (engine/solo.h), so a request's tokens do not depend on whether
// it runs alone or in a server. This file knows no session, slot or pass: it is given a
// chain, the target's rows and the statistics to update. Dependencies run one way:
// engine -> speculative -> model, sampling; nothing here includes engine/.
// Tree rounds (draft_tree.h): a drafter that grows trees proposes one when the request
// allows it (SpecParams::tree), the Proposal then carries each draft's parent, verify walks
// the tree (greedy: accept_greedy; sampling: tree_sampling.h) and the RoundResult carries
// the accepted path, whose K/V rollback makes consecutive; the engine passes the tree's rows
// and calls the same steps.
// Under a token constraint (a grammar), the proposal is cut and the rows masked before
// verify sees them (constrained_round.h).
// Not here: choosing k and the drafter (goodput.h, chain_goodput.h, batch_budget.h), the
// drafters themselves (drafter.h and its implementations), sessions, scheduling and delivery
// (engine/).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_pool.h"
#include "sampling/sampler.h"
#include "speculative/draft_tree.h"
#include "speculative/drafter.h"
#include "speculative/stats.h"

namespace tdm {

class GoodputHistory;  // goodput_history.h

struct SpecParams {
    int draft_max = 16;     // most drafts per round
    int draft_min = 0;      // a shorter proposal is not verified (plain step instead)
    int skip_streak = 0;    // rounds with nothing accepted before one plain step; 0 = off
    // The goodput controller chooses k (goodput.h). Off here, the engine's own default, so
    // that tests and sweeps that count rounds get fixed k; every front end (run, chat,
    // serve, bench) sets it from the configuration, whose default is on
    // (serve/generation_settings.h: spec_params).
    bool auto_k = false;
    // Draft trees (draft_tree.h): a drafter that grows trees proposes one of this shape,
    // others a chain; at most kKvTreeMaxNodes nodes, and never more rows than the chain
    // of k drafts the round would verify. nodes <= 1: chains only. Greedy and sampling
    // alike (sampling: recursive rejection sampling over siblings, tree_sampling.h).
    TreeShape tree;
    std::string trace_path; // NDJSON, one line per round
    // What earlier sequences' goodput controllers learned (goodput_history.h), for front ends
    // that run one engine after another (chat turns, bench prompts); null: the engine's own,
    // which a server's requests share.
    std::shared_ptr<GoodputHistory> history;
};

// One drafter of a request's chain (asked in order each round).
struct ChainedDrafter {
    Drafter* drafter = nullptr;
    bool on = true;    // false once it failed (off for the rest of the request) or was handed on
    size_t stat = 0;   // its entry in SpecStats::drafters (which outlives a preemption)
    int shared = -1;   // a drafter the engine shares among sessions: its index there; -1: the request's own
};

// Turns a drafter off for the rest of the request (the output is unchanged: only the
// drafts stop): its failure goes into its statistics and the log.
void turn_off(ChainedDrafter& d, SpecStats& stats, const Error& e);
bool any_on(std::span<const ChainedDrafter> chain);
// The first drafter still on, or null.
ChainedDrafter* first_on(std::span<ChainedDrafter> chain);
// Whether a drafter still on reads the target's hidden states (is shown its rows).
bool any_reads_hidden(std::span<const ChainedDrafter> chain);

// What the target verifies this round.
struct Proposal {
    std::vector<int32_t> drafts;  // empty: a plain step
    int winner = -1;              // the chain's index of the drafter that proposed them
    // A tree (draft_tree.h): drafts[i] is node i + 1, its parent node parents[i] (0: the
    // round's first token). Empty: a chain.
    std::vector<int32_t> parents;
    // A tree whose drafter drew some children at random: by node, the distribution node i's
    // children were drawn from (DraftTree::children_drawn_from). Empty: deterministic.
    std::vector<TokenDistribution> drawn_from;
    bool tree() const { return !parents.empty(); }
};
// The proposal's tree with `root` (the round's first token) as node 0; a chain's is one
// branch of at most kKvTreeMaxNodes nodes (DraftTree::chain).
DraftTree tree_of(const Proposal& p, int32_t root);

// The target's output rows for the round's [last, d1..dk]: row i's logits at
// logits + i * n_vocab and its argmax at argmax[i].
struct VerifyRows {
    const float* logits = nullptr;
    const int32_t* argmax = nullptr;
    uint32_t n_vocab = 0;
};

struct RoundResult {
    uint32_t drafted = 0;   // drafts verified (0: a plain step)
    uint32_t accepted = 0;  // the longest prefix of them the target agrees with
    int32_t next = -1;      // the target's own token after the accepted drafts
    int winner = -1;        // the chain's index of the drafter whose drafts these were
    // A tree round: the accepted nodes from the root (accepted + 1 of them). Empty: a chain.
    std::vector<uint32_t> path;
};
// The round's i-th accepted draft (i < accepted), and the verify row whose choice the
// round's i-th token was (i <= accepted: row i of a chain, the path's i-th node of a tree).
int32_t accepted_draft(const Proposal& p, const RoundResult& r, uint32_t i);
uint32_t accepted_row(const RoundResult& r, uint32_t i);

// The first drafter of the chain (those still on, in order) that proposes at least
// draft_min tokens (and at least one) wins; its proposal is cut to req.max. A drafter that
// fails or proposes a token outside the vocabulary is turned off.
Proposal propose(std::span<ChainedDrafter> chain, SpecStats& stats, const DraftRequest& req, int draft_min,
                 uint32_t n_vocab);

// The target's decision on the proposal. `history` ends with the token the pass ran first;
// with sampling the penalty window sees the accepted drafts.
RoundResult verify(const Proposal& proposal, const VerifyRows& rows, Sampler& sampler, bool greedy,
                   std::span<const int32_t> history);

// The target's KV (and recurrent-state checkpoint) keeps `n_kv` tokens: the history and
// the accepted drafts (a tree's accepted path moved to consecutive positions first). A
// plain step wrote no row past them: nothing to roll back.
Status rollback(KvPool& kv, int seq, uint32_t n_kv, const RoundResult& round);

// Shows the rows the target committed (prompt chunks, the kept rows of a round) to the
// drafters that read its hidden states.
void show_rows(std::span<ChainedDrafter> chain, SpecStats& stats, const TargetRows& rows);

// Every drafter still on hears the round: the winner how many of its drafts were accepted,
// the others that they drafted nothing. `history` ends with the round's tokens.
void accept(std::span<ChainedDrafter> chain, SpecStats& stats, std::span<const int32_t> history,
            const RoundResult& round);

// The round's statistics (a verified round; plain steps are counted by their runner).
void tally(std::span<const ChainedDrafter> chain, SpecStats& stats, const RoundResult& round, double verify_ms);

// One round (a verify pass, or a plain decode step of a request with drafters) as the
// speculative trace records it (SpecParams::trace_path).
struct RoundRecord {
    uint64_t round = 0;
    uint32_t pos = 0;            // of the token verified first
    std::string drafter;         // the winner, "" when nothing was drafted
    int k = 0;                   // drafts asked for
    std::vector<int32_t> drafted;
    std::vector<int32_t> parents;  // a tree round: Proposal::parents
    // Where the tree-or-chain choice was made (tree_choice.h): "tree" or "chain" (what was
    // verified: a tree that came out as one branch is a chain); "" elsewhere.
    std::string tree_choice;
    uint32_t accepted = 0;
    int32_t next = -1;           // the target's own token
    double draft_ms = 0, verify_ms = 0, accept_ms = 0;
    // The goodput controller after the round (goodput.h); absent with fixed k.
    bool controller = false;
    bool drafting_off = false;      // it has stopped drafting (probes only)
    double estimated_speedup = 0;   // of the length it would choose now
};

}  // namespace tdm
