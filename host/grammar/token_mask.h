/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/token_mask.h: the set of tokens a grammar state allows, found by walking
// the token trie and the matcher together: a byte the state cannot take cuts the whole
// subtree below it, and each shared prefix is matched once.
// Not here: end-of-generation tokens and caching of whole masks (grammar_constraint.cpp).
//
// Why a lazy DFA: in a free-text state (a JSON string) nearly every one of the ~700k trie
// nodes of a 150k vocabulary is walked, and advancing the stacks costs far more than a
// table lookup. The states met are few (inside a string, a character usually leads back
// to the same state), so each distinct state gets an id and a 256-entry transition row
// filled on first use; a walk is then a lookup per trie node.
#pragma once

#include "grammar/matcher.h"
#include "grammar/token_trie.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tdm {

// One bit per token id: bit (id % 64) of word id / 64.
using TokenBitset = std::vector<uint64_t>;

inline bool test_bit(const TokenBitset& b, int32_t id) {
    return (b[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u;
}

// Matcher states met so far, with their transitions (built lazily, bounded).
class LazyDfa {
public:
    static constexpr size_t kMaxStates = 8192;  // 1 KiB of transitions each
    // and at most this many bytes of states and their keys (a state of deep stacks is large)
    static constexpr size_t kMaxBytes = size_t{64} << 20;
    static constexpr int32_t kDead = -1;        // the byte kills every parse
    static constexpr int32_t kFull = -2;        // no room for another state

    // The id of `s` (kFull if new and there is no room).
    int32_t intern(const MatchState& s);
    // The state after byte b from state id (kDead or kFull possible).
    int32_t step(const CompiledGrammar& g, int32_t id, uint8_t b, MatchWorkspace& ws);
    void clear();
    size_t size() const { return states_.size(); }

private:
    static constexpr int32_t kUnknown = -3;
    std::vector<MatchState> states_;
    std::vector<int32_t> next_;  // 256 per state
    std::unordered_map<std::string, int32_t> ids_;
    std::string key_;
    MatchState scratch_;
    size_t bytes_ = 0;  // of states_ and the keys of ids_
};

// Scratch for the walk: one state per trie depth (the fallback when the DFA is full).
struct MaskWorkspace {
    MatchWorkspace match;
    std::vector<MatchState> levels;
};

// Expansion steps (MatchWorkspace::steps) one mask may take: a JSON mask takes a few
// thousand; only a highly ambiguous grammar comes near (a second or so of CPU).
constexpr uint64_t kMaxMaskSteps = uint64_t{1} << 24;

// The tokens of `trie` whose bytes `state` can take, whole. Uses and grows `dfa`; when it
// would outgrow its bound the DFA is cleared and the walk starts again, then goes state by
// state. Returns false if the walk ran out of kMaxMaskSteps: `out` then holds only the
// tokens found so far (each one allowed, but not all the allowed ones).
bool compute_token_mask(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                        LazyDfa& dfa, MaskWorkspace& ws, TokenBitset& out);

// Whether `state` can take all of token id's bytes (false for tokens not in the trie).
bool token_allowed(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                   int32_t id, MatchWorkspace& ws);

}  // namespace tdm
