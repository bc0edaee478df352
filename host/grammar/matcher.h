/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/matcher.h: the byte-level pushdown matcher of a compiled grammar: the set
// of parse stacks of llama.cpp's grammar (src/llama-grammar.cpp, llama_grammar_accept),
// fed one byte at a time. Characters are code points: the bytes of an unfinished UTF-8
// character are held in the state and checked against the character classes they could
// still become, so a token may end inside a character.
// Not here: tokens (token_mask.h), the TokenConstraint (grammar_constraint.cpp).
//
// A state is plain data (two vectors and a partial character): copying one is the cheap
// clone the speculative round asks for. A stack is a list of grammar positions, bottom
// first; its top is always a character class. The empty stack means the root is complete.
#pragma once

#include "grammar/grammar_rules.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tdm {

// Bounds that keep a hostile (deeply nested or highly ambiguous) grammar from growing a
// state without limit: stacks deeper than this are dropped, and a state holding more
// stacks than this cannot take the character (docs/GRAMMAR.md, "Limits").
constexpr size_t kMaxStackDepth = 1024;
constexpr size_t kMaxStacks = 32768;
// Positions of all of a state's stacks together (4 MiB): many deep stacks would otherwise
// make one state tens of megabytes, copied at every byte and kept in the mask caches.
constexpr size_t kMaxStatePositions = size_t{1} << 20;
// The rule expansions one character may take: an ambiguous grammar of nested optional
// pairs (a0 ::= (a1 a1)?, a1 ::= (a2 a2)?, ...) opens 2^depth parses, and the work to
// find them grows as fast even where few survive.
constexpr uint64_t kMaxExpandSteps = uint64_t{1} << 18;

struct MatchState {
    std::vector<uint32_t> positions;  // every stack, concatenated, bottom first
    std::vector<uint32_t> ends;       // stack i is positions[ends[i - 1] .. ends[i])
    uint32_t partial_cp = 0;          // bits so far of an unfinished UTF-8 character
    uint8_t partial_left = 0;         // continuation bytes it still needs (0: none)

    size_t n_stacks() const { return ends.size(); }
    bool dead() const { return ends.empty(); }
};

// Finds a stack among those of a MatchState's layout: past a few stacks, through a hash
// table (open addressing, slot = stack index + 1) instead of a linear scan, since a rule
// of 20000 alternatives starts 20000 stacks.
struct StackIndex {
    std::vector<uint32_t> slots;
    bool hashed = false;
};

// Scratch buffers reused across calls (no allocation once warm). One per thread of use.
struct MatchWorkspace {
    std::vector<uint32_t> work_positions;
    std::vector<uint32_t> work_ends;
    std::vector<uint32_t> current;
    StackIndex out_index;  // of the state being built
    // The stacks whose top rule one expansion has already expanded: in an ambiguous
    // grammar many paths reach the same one, and expanding it again only repeats work.
    MatchState expanded;
    StackIndex expanded_index;
    uint64_t steps = 0;  // expansion steps taken, ever (token_mask.cpp budgets a mask with it)
};

// The initial state, or false if the grammar starts more than kMaxStacks parses (or takes
// more than kMaxExpandSteps to find them).
bool initial_match_state(const CompiledGrammar& g, MatchWorkspace& ws, MatchState& out);

// Feeds one byte: writes the state after it to `out` (which must not alias `in`) and
// returns whether any parse survives (false too past kMaxStacks or kMaxExpandSteps: the
// text cannot go on there). On false, `out` is unspecified.
bool advance_byte(const CompiledGrammar& g, const MatchState& in, uint8_t byte, MatchState& out,
                  MatchWorkspace& ws);

// The text so far is a complete sentence (an end token may come).
bool accepts_end(const MatchState& s);
// Nothing but the end can follow.
bool only_end(const MatchState& s);

// The state as bytes, equal for equal states (the key of the mask cache).
void state_key(const MatchState& s, std::string& out);

// A matcher over one grammar: what tests and single-token checks use.
class GrammarMatcher {
public:
    explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

    // Feeds bytes; all or nothing: on false the state is unchanged.
    bool feed(std::string_view bytes);
    bool accepting() const { return accepts_end(state_); }
    bool complete() const { return only_end(state_); }
    const MatchState& state() const { return state_; }
    const CompiledGrammar& grammar() const { return *grammar_; }

private:
    std::shared_ptr<const CompiledGrammar> grammar_;
    MatchState state_;
    MatchState scratch_[2];
    MatchWorkspace ws_;
};

}  // namespace tdm
