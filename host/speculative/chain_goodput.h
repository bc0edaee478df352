/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/chain_goodput.h: the goodput controller of a sequence's chain of drafters
// (`--spec-type ngram-simple,mtp`): which drafter to ask this round, and for how many tokens.
//
// Each drafter has its own GoodputController (goodput.h): its acceptance per position, its
// draft cost, its probes. The target's costs (a plain step, a verify per width) are the same
// whichever drafter drafted, so every controller sees every round's timing; only the drafter
// whose drafts were verified hears how many were accepted. A drafter that proposed nothing
// (an n-gram drafter without a match) or was not asked loses no acceptance credit.
//
// Per round the drafters still on are ranked and asked in that order until one proposes
// (propose_ranked): first those that never drafted (in the chain's order), those whose probe
// is due (drafting is off for them: k = 1, with their controller's back-off) and those passed
// over for a while (a revisit: an outranked drafter whose text became predictable is found
// again; the same back-off); then the others by the speedup each offers at its own best
// length, best first. A drafter whose best length pays nothing is switched off as its
// controller would alone. So a drafter whose drafts are never accepted stops being asked
// within a few rounds while the others keep drafting, and a cheap drafter that often has
// nothing to propose (n-gram) is asked before a head whenever its drafts, when it has them,
// pay more: when it has none, the head is asked next in the same round.
//
// One drafter alone: exactly its controller (ranking, promotions and revisits need two).
// Many sequences in one pass (allocate_drafts, batch_budget.h): the plan weighs the drafts of
// the best-ranked drafter that is not being probed, revisited or tried first (planner()).
// Not here: how a controller estimates (goodput.h), what a proposal is (round.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "speculative/goodput.h"
#include "speculative/round.h"

namespace tdm {

class ChainGoodput {
public:
    ChainGoodput() = default;
    // k_max: the longest draft (SpecParams::draft_max); history: what earlier sequences'
    // controllers learned, per drafter (null: nothing).
    ChainGoodput(int k_max, const GoodputHistory* history);

    // Gives each drafter of the chain not met before a controller of its kind, started from
    // that drafter's history (keyed by ChainedDrafter::stat, which outlives a preemption), and
    // forgets the round's ranking.
    // Call whenever the chain is built (again).
    void meet(std::span<const ChainedDrafter> chain);

    // Ranks the drafters still on for the round whose first token sits at `pos` (once per
    // round: a no-op when that round is ranked already).
    void rank(std::span<const ChainedDrafter> chain, int k_cap, uint32_t pos);
    // The round decided by this sequence alone: ranks, and the first drafter's controller
    // chooses its length (0: a plain step).
    int choose(std::span<const ChainedDrafter> chain, int k_cap, uint32_t pos);
    // The chain's indices in the order to ask them this round (after rank or choose).
    std::span<const size_t> order() const { return order_; }
    // The length to ask drafter `d` for, within the round's k (0: do not ask it). The first
    // drafter's length is the round's; one asked after it chooses its own.
    int ask(const ChainedDrafter& d, int k);

    // The controller whose estimates plan a batched pass (allocate_drafts), and what the plan
    // gave the sequence (its first drafter's length, unless that one is being probed).
    const GoodputController& planner() const;
    // The history name (Drafter::history_name) of the drafter planner() plans for: the pass's
    // other sequences drafting with it have measured what this one's drafts cost.
    const std::string& planner_drafter() const;
    void planned(int k);
    bool probe_when_starved(uint32_t probers, uint32_t sequences);  // of the planner
    void probe_dropped();  // GoodputController::probe_dropped, of the planner

    void observe_plain(double ms, bool alone = true);  // GoodputController::observe_plain
    // A verified round: the drafter whose drafts these were is the one whose statistics entry
    // (ChainedDrafter::stat) is `winner`.
    void observe_round(size_t winner, int k, int accepted, double draft_ms, double verify_ms);
    void observe_tree_round(size_t winner, int depth, int rows, int accepted, double verify_ms);
    void observe_cut(size_t winner, int position);

    bool off() const;  // every drafter's controller has stopped drafting (probes only)
    double predicted_speedup(int k) const;  // of the drafter ranked first
    ControllerStats report() const;
    // Hands what each drafter's controller learned to the engine's history (by drafter): one
    // that never drafted in a chain adds nothing, unless it is off and counting plain steps
    // toward its next probe (that count goes on in the next sequence).
    void teach(GoodputHistory& history) const;
    // The controller of the drafter whose statistics entry is `stat` (null: not met).
    const GoodputController* controller(size_t stat) const {
        const Member* m = find(stat);
        return m ? &m->tune : nullptr;
    }

private:
    struct Member {
        size_t stat = 0;
        std::string drafter;  // its history's name (Drafter::history_name)
        GoodputController tune;
        GoodputOffer offer;    // this round's
        int passed = 0;        // rounds another drafter drafted while this one offered a length
        int revisit_after = 0;
        bool promoted = false;   // this round it goes first: never drafted, a probe or a revisit
        bool asked_now = false;  // asked this round
        bool revisiting = false;
    };
    Member* find(size_t stat);
    const Member* find(size_t stat) const;
    void asked(Member& m);
    void judge_revisits(std::span<const ChainedDrafter> chain, std::span<const size_t> on);
    // The round's timing for the drafters whose drafts were not verified, and their count of
    // rounds passed over.
    void passed_over(size_t winner, int k, double verify_ms);

    int k_max_ = 1;
    const GoodputHistory* history_ = nullptr;
    std::vector<Member> members_;
    std::vector<size_t> order_;       // chain indices
    std::vector<size_t> order_stat_;  // the same drafters' statistics entries
    int64_t ranked_for_ = -1;         // the round's position, -1: not ranked
    size_t planner_ = 0;              // statistics entry
    int64_t decided_ = -1;            // the drafter whose length is the round's (statistics entry)
    int decided_k_ = 0;
    uint64_t off_steps_ = 0;          // plain steps the chain chose
};

// The round's proposal (round.h: propose), the drafters asked in the controller's order,
// each for its own length (ChainGoodput::ask) within req.max.
Proposal propose_ranked(ChainGoodput& tune, std::span<ChainedDrafter> chain, SpecStats& stats, DraftRequest req,
                        int draft_min, uint32_t n_vocab);

}  // namespace tdm
