/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/tree_choice.h: whether a round spends its row budget on a draft tree or
// on a chain of as many rows, per sequence and per round: trees only where they pay.
//
// A tree of N nodes and the chain of N - 1 drafts take the same rows of a verify pass. A
// tree usually gets more tokens out of them (another branch survives a wrong first
// draft); a chain reaches deeper; and a tree pass may cost more than a chain pass of the
// same width. On CPU devices it does (lavapipe: a tree row takes an attention pass of its
// own instead of sharing key fetches with its lane's rows), so there trees are off unless
// forced. Elsewhere the choice measures, for each of the two, the tokens a round yields
// (EMA) and the verify pass's time per width (EMA; a width not measured yet is estimated
// from the nearest measured one, scaled by rows), and picks the one with more tokens per
// millisecond at this round's width. Each kind is first tried kWarmRounds times (their
// first pass at each width only counts for tokens: it builds the graph); then the one not
// chosen is tried again every kRecheckRounds rounds, so that a change of text (branches
// that start or stop agreeing) is followed.
// Forced (fixed draft length, --spec-fixed, and the engine's own default): a tree whenever
// the round can verify one. Not here: which rounds can verify a tree at all (greedy,
// unconstrained, ...: engine/batch_session.cpp), the draft length (goodput.h).
#pragma once

#include <cstdint>
#include <vector>

namespace tdm {

class TreeChoice {
public:
    static constexpr int kWarmRounds = 3;
    static constexpr int kRecheckRounds = 16;

    TreeChoice() = default;
    // cpu_device: the device runs tree rows one attention pass each; forced: always trees.
    TreeChoice(bool cpu_device, bool forced) : cpu_(cpu_device), forced_(forced) {}

    // This round's choice for a budget of `rows` rows (the tree's nodes, root included):
    // true for the tree, false for the chain of rows - 1 drafts. Counted: chains() says
    // how many rounds a chain was chosen instead.
    bool choose(uint32_t rows);
    // A verified round: a tree (or a chain) of `rows` rows gave `tokens` tokens (accepted
    // drafts + the target's own) in a pass of `verify_ms`.
    void observe(bool tree, uint32_t rows, uint32_t tokens, double verify_ms);

    // Expected tokens per ms of each kind at a width (0: not known yet).
    double rate(bool tree, uint32_t rows) const;
    uint64_t chains_chosen() const { return chains_chosen_; }

private:
    struct Kind {
        double tokens = 0;              // EMA of tokens per round
        int rounds = 0;                 // rounds observed
        std::vector<double> ms;         // EMA of the verify pass per width (index rows), 0 = unmeasured
        std::vector<int> seen;          // passes seen per width (the first builds the graph)
        double cost(uint32_t rows) const;
    };
    Kind& kind(bool tree) { return tree ? tree_ : chain_; }
    const Kind& kind(bool tree) const { return tree ? tree_ : chain_; }

    bool cpu_ = false, forced_ = true;
    Kind tree_, chain_;
    uint64_t decisions_ = 0, chains_chosen_ = 0;
};

}  // namespace tdm
