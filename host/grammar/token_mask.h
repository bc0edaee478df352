/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/token_mask.h: the set of tokens a grammar state allows, found by walking
// the token trie and the matcher together: a byte the state cannot take cuts the whole
// subtree below it, and each shared prefix is matched once.
// Not here: end-of-generation tokens and caching (grammar_constraint.cpp).
#pragma once

#include "grammar/matcher.h"
#include "grammar/token_trie.h"

#include <cstdint>
#include <vector>

namespace tdm {

// One bit per token id: bit (id % 64) of word id / 64.
using TokenBitset = std::vector<uint64_t>;

inline bool test_bit(const TokenBitset& b, int32_t id) {
    return (b[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u;
}

// Scratch for the walk: one state per trie depth, reused across masks.
struct MaskWorkspace {
    MatchWorkspace match;
    std::vector<MatchState> levels;
};

// The tokens of `trie` whose bytes `state` can take, whole.
void compute_token_mask(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                        MaskWorkspace& ws, TokenBitset& out);

// Whether `state` can take all of token id's bytes (false for tokens not in the trie).
bool token_allowed(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                   int32_t id, MatchWorkspace& ws);

}  // namespace tdm
