// SPDX-License-Identifier: Apache-2.0
// host/grammar/matcher.cpp: see matcher.h. The expansion of rule references on top of a
// stack runs on an explicit work list (a grammar's rule chains may be long); it ends
// because compile_gbnf refuses left recursion.
#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace tdm {
namespace {

// llama_grammar_match_char: whether the class starting at `pos` matches cp.
bool match_char(const GrammarElement* pos, uint32_t cp) {
    if (pos->type == GrammarSymbol::chr_any) return true;
    bool positive = pos->type == GrammarSymbol::chr;
    do {
        if (pos[1].type == GrammarSymbol::chr_upper) {
            if (pos->value <= cp && cp <= pos[1].value) return positive;
            pos += 2;
        } else {
            if (pos->value == cp) return positive;
            pos += 1;
        }
    } while (pos->type == GrammarSymbol::chr_alt);
    return !positive;
}

// Whether some code point of [lo, hi] may match the class at `pos` (an unfinished UTF-8
// character). Exact: a negated class matches unless its excluded ranges together cover
// [lo, hi], so a lead byte passes only if some character it can start is allowed (else a
// token ending in it would pass the mask and leave the next step no byte at all).
bool match_range(const GrammarElement* pos, uint32_t lo, uint32_t hi) {
    if (pos->type == GrammarSymbol::chr_any) return true;
    bool positive = pos->type == GrammarSymbol::chr;
    thread_local std::vector<std::pair<uint32_t, uint32_t>> excluded;
    excluded.clear();
    do {
        uint32_t a = pos->value, b = pos->value;
        if (pos[1].type == GrammarSymbol::chr_upper) {
            b = pos[1].value;
            pos += 2;
        } else {
            pos += 1;
        }
        if (positive && a <= hi && lo <= b) return true;
        if (!positive) excluded.emplace_back(a, b);
    } while (pos->type == GrammarSymbol::chr_alt);
    if (positive) return false;
    std::sort(excluded.begin(), excluded.end());
    uint32_t next = lo;  // the first code point of [lo, hi] no excluded range has covered yet
    for (const auto& [a, b] : excluded) {
        if (a > next) break;  // `next` is not excluded: it matches
        if (b >= hi) return false;
        if (b >= next) next = b + 1;
    }
    return true;
}

// The position after the character class at `pos`.
uint32_t after_class(const CompiledGrammar& g, uint32_t pos) {
    ++pos;
    while (g.elements[pos].type == GrammarSymbol::chr_upper || g.elements[pos].type == GrammarSymbol::chr_alt)
        ++pos;
    return pos;
}

constexpr size_t kLinearDedup = 16;

uint64_t hash_stack(const uint32_t* stack, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ stack[i]) * 1099511628211ull;
    return h;
}

const uint32_t* stack_begin(const MatchState& s, uint32_t i) {
    return s.positions.data() + (i ? s.ends[i - 1] : 0);
}

uint32_t stack_size(const MatchState& s, uint32_t i) { return s.ends[i] - (i ? s.ends[i - 1] : 0); }

// Places stack i of `set` in the hash table (which has a free slot).
void hash_insert(const MatchState& set, uint32_t i, StackIndex& index) {
    size_t mask = index.slots.size() - 1;
    size_t slot = hash_stack(stack_begin(set, i), stack_size(set, i)) & mask;
    while (index.slots[slot]) slot = (slot + 1) & mask;
    index.slots[slot] = i + 1;
}

void rehash(const MatchState& set, size_t n_slots, StackIndex& index) {
    index.slots.assign(n_slots, 0);
    for (uint32_t i = 0; i < set.ends.size(); ++i) hash_insert(set, i, index);
}

enum class Added { added, present, full };

// Adds one stack to `set` unless it is already there or the set holds `limit` stacks.
Added add_stack(MatchState& set, const uint32_t* stack, size_t n, StackIndex& index, size_t limit) {
    if (!index.hashed) {
        for (uint32_t i = 0; i < set.ends.size(); ++i) {
            if (stack_size(set, i) == n && std::equal(stack, stack + n, stack_begin(set, i))) return Added::present;
        }
    } else {
        size_t mask = index.slots.size() - 1;
        for (size_t slot = hash_stack(stack, n) & mask; index.slots[slot]; slot = (slot + 1) & mask) {
            uint32_t i = index.slots[slot] - 1;
            if (stack_size(set, i) == n && std::equal(stack, stack + n, stack_begin(set, i))) return Added::present;
        }
    }
    if (set.ends.size() >= limit || set.positions.size() + n > kMaxStatePositions) return Added::full;
    set.positions.insert(set.positions.end(), stack, stack + n);
    set.ends.push_back(static_cast<uint32_t>(set.positions.size()));
    if (!index.hashed && set.ends.size() == kLinearDedup) {
        index.hashed = true;
        rehash(set, 4 * kLinearDedup, index);
    } else if (index.hashed) {
        if (2 * set.ends.size() > index.slots.size()) rehash(set, 2 * index.slots.size(), index);
        else hash_insert(set, static_cast<uint32_t>(set.ends.size() - 1), index);
    }
    return Added::added;
}

// Starts a new expansion into an empty state.
void begin_expansion(MatchWorkspace& ws) {
    ws.work_positions.clear();
    ws.work_ends.clear();
    ws.out_index.hashed = false;
    ws.expanded.positions.clear();
    ws.expanded.ends.clear();
    ws.expanded_index.hashed = false;
}

void push_work(MatchWorkspace& ws, const std::vector<uint32_t>& base, size_t n, const uint32_t* extra) {
    ws.work_positions.insert(ws.work_positions.end(), base.begin(), base.begin() + static_cast<ptrdiff_t>(n));
    if (extra) ws.work_positions.push_back(*extra);
    ws.work_ends.push_back(static_cast<uint32_t>(ws.work_positions.size()));
}

// llama_grammar_advance_stack: expands the rule references on top of the stacks in the
// work list until a character class (or nothing) is on top, adding the results to `out`.
// False when the state would hold more than kMaxStacks stacks or the expansion takes more
// than kMaxExpandSteps steps.
bool expand(const CompiledGrammar& g, MatchWorkspace& ws, MatchState& out) {
    for (uint64_t n_steps = 0; !ws.work_ends.empty(); ++n_steps) {
        if (n_steps == kMaxExpandSteps) {
            ws.work_ends.clear();
            ws.work_positions.clear();
            return false;
        }
        ++ws.steps;
        uint32_t end = ws.work_ends.back();
        // a step's cost grows with its stack: count deep stacks into the budgets
        ws.steps += (end - (ws.work_ends.size() > 1 ? ws.work_ends[ws.work_ends.size() - 2] : 0)) / 64;
        ws.work_ends.pop_back();
        uint32_t begin = ws.work_ends.empty() ? 0 : ws.work_ends.back();
        ws.current.assign(ws.work_positions.begin() + begin, ws.work_positions.begin() + end);
        ws.work_positions.resize(begin);
        std::vector<uint32_t>& s = ws.current;
        if (s.size() > kMaxStackDepth) continue;
        bool final = s.empty() || g.elements[s.back()].type != GrammarSymbol::rule_ref;
        Added added = final ? add_stack(out, s.data(), s.size(), ws.out_index, kMaxStacks)
                            : add_stack(ws.expanded, s.data(), s.size(), ws.expanded_index, kMaxExpandSteps);
        if (added == Added::full) {
            ws.work_ends.clear();
            ws.work_positions.clear();
            return false;
        }
        if (final || added == Added::present) continue;
        uint32_t top = s.back();
        uint32_t rule = g.elements[top].value;
        s.pop_back();
        if (!is_end_of_sequence(g.elements[top + 1])) s.push_back(top + 1);
        for (uint32_t a = g.rule_alts[rule]; a < g.rule_alts[rule + 1]; ++a) {
            uint32_t first = g.alt_start[a];
            push_work(ws, s, s.size(), is_end_of_sequence(g.elements[first]) ? nullptr : &first);
        }
    }
    return true;
}

// Takes code point cp on every stack whose top class matches it.
bool advance_cp(const CompiledGrammar& g, const MatchState& in, uint32_t cp, MatchState& out,
                MatchWorkspace& ws) {
    out.positions.clear();
    out.ends.clear();
    out.partial_cp = 0;
    out.partial_left = 0;
    begin_expansion(ws);
    uint32_t begin = 0;
    for (uint32_t end : in.ends) {
        uint32_t b = begin;
        begin = end;
        if (b == end) continue;  // complete: takes no character
        uint32_t top = in.positions[end - 1];
        if (!match_char(&g.elements[top], cp)) continue;
        ws.current.assign(in.positions.begin() + b, in.positions.begin() + end - 1);
        uint32_t next = after_class(g, top);
        push_work(ws, ws.current, ws.current.size(), is_end_of_sequence(g.elements[next]) ? nullptr : &next);
    }
    return expand(g, ws, out) && !out.dead();
}

// Keeps the state while a UTF-8 character is unfinished, if some stack could take it.
// `least` is the smallest code point the whole sequence may encode: after a lead byte the
// bits so far say nothing of the overlong forms (E0 and F0 carry 0), so without it a lone
// E0 would pass where only ASCII may follow, and the next step would find no byte at all.
bool hold_partial(const CompiledGrammar& g, const MatchState& in, uint32_t value, uint8_t left,
                  MatchState& out, uint32_t least = 0) {
    uint32_t lo = std::max(value << (6 * left), least);
    uint32_t hi = std::min((value << (6 * left)) | ((1u << (6 * left)) - 1), 0x10FFFFu);
    if (lo > hi) return false;
    bool any = false;
    uint32_t begin = 0;
    for (uint32_t end : in.ends) {
        if (end != begin && match_range(&g.elements[in.positions[end - 1]], lo, hi)) {
            any = true;
            break;
        }
        begin = end;
    }
    if (!any) return false;
    out.positions = in.positions;
    out.ends = in.ends;
    out.partial_cp = value;
    out.partial_left = left;
    return true;
}

}  // namespace

bool initial_match_state(const CompiledGrammar& g, MatchWorkspace& ws, MatchState& out) {
    out = MatchState();
    begin_expansion(ws);
    ws.current.clear();
    for (uint32_t a = g.rule_alts[g.root]; a < g.rule_alts[g.root + 1]; ++a) {
        uint32_t first = g.alt_start[a];
        push_work(ws, ws.current, 0, is_end_of_sequence(g.elements[first]) ? nullptr : &first);
    }
    if (expand(g, ws, out)) return true;
    out = MatchState();
    return false;
}

bool advance_byte(const CompiledGrammar& g, const MatchState& in, uint8_t byte, MatchState& out,
                  MatchWorkspace& ws) {
    if (in.partial_left == 0) {
        if (byte < 0x80) return advance_cp(g, in, byte, out, ws);
        if (byte >= 0xC2 && byte <= 0xDF) return hold_partial(g, in, byte & 0x1Fu, 1, out, 0x80);
        if (byte >= 0xE0 && byte <= 0xEF) return hold_partial(g, in, byte & 0x0Fu, 2, out, 0x800);
        if (byte >= 0xF0 && byte <= 0xF4) return hold_partial(g, in, byte & 0x07u, 3, out, 0x10000);
        return false;  // a continuation byte or a byte no UTF-8 text contains
    }
    if ((byte & 0xC0) != 0x80) return false;
    // The second byte of a 3- or 4-byte sequence rules out overlong forms, surrogates and
    // code points above U+10FFFF (strict UTF-8, as unicode::decode).
    if (in.partial_left == 2 && in.partial_cp == 0x0 && byte < 0xA0) return false;
    if (in.partial_left == 2 && in.partial_cp == 0xD && byte >= 0xA0) return false;
    if (in.partial_left == 3 && in.partial_cp == 0x0 && byte < 0x90) return false;
    if (in.partial_left == 3 && in.partial_cp == 0x4 && byte >= 0x90) return false;
    uint32_t value = (in.partial_cp << 6) | (byte & 0x3Fu);
    uint8_t left = static_cast<uint8_t>(in.partial_left - 1);
    if (left == 0) return advance_cp(g, in, value, out, ws);
    return hold_partial(g, in, value, left, out);
}

bool accepts_end(const MatchState& s) {
    if (s.partial_left != 0) return false;
    uint32_t begin = 0;
    for (uint32_t end : s.ends) {
        if (end == begin) return true;
        begin = end;
    }
    return false;
}

bool only_end(const MatchState& s) {
    return s.partial_left == 0 && !s.ends.empty() && s.ends.back() == 0;
}

void state_key(const MatchState& s, std::string& out) {
    out.resize(4 * (s.positions.size() + s.ends.size()) + 5);
    char* p = out.data();
    // an empty vector's data() may be null, which memcpy must not see even for 0 bytes
    if (!s.positions.empty()) std::memcpy(p, s.positions.data(), 4 * s.positions.size());
    p += 4 * s.positions.size();
    if (!s.ends.empty()) std::memcpy(p, s.ends.data(), 4 * s.ends.size());
    p += 4 * s.ends.size();
    std::memcpy(p, &s.partial_cp, 4);
    p[4] = static_cast<char>(s.partial_left);
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)) {
    initial_match_state(*grammar_, ws_, state_);  // compile_gbnf checked that it fits
}

bool GrammarMatcher::feed(std::string_view bytes) {
    const MatchState* in = &state_;
    int which = 0;
    for (char c : bytes) {
        MatchState& out = scratch_[which];
        if (!advance_byte(*grammar_, *in, static_cast<uint8_t>(c), out, ws_)) return false;
        in = &out;
        which ^= 1;
    }
    if (in != &state_) state_ = *in;
    return true;
}

}  // namespace tdm
