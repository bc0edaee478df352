// SPDX-License-Identifier: Apache-2.0
// host/grammar/grammar_checks.cpp: see grammar_checks.h. Iterative (no native recursion):
// a hostile grammar may chain thousands of rules.
#include "grammar/grammar_checks.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace tdm {
namespace {

// Rules that can match the empty string (a fixpoint over the alternatives).
std::vector<bool> nullable_rules(const CompiledGrammar& g) {
    size_t n = g.rule_start.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
            if (nullable[r]) continue;
            for (uint32_t a = g.rule_alts[r]; a < g.rule_alts[r + 1] && !nullable[r]; ++a) {
                bool all = true;
                for (uint32_t p = g.alt_start[a]; !is_end_of_sequence(g.elements[p]); ++p) {
                    const GrammarElement& e = g.elements[p];
                    if (e.type == GrammarSymbol::chr_upper || e.type == GrammarSymbol::chr_alt) continue;
                    if (e.type != GrammarSymbol::rule_ref || !nullable[e.value]) {
                        all = false;
                        break;
                    }
                }
                if (all) {
                    nullable[r] = true;
                    changed = true;
                }
            }
        }
    }
    return nullable;
}

}  // namespace

Status check_no_left_recursion(const CompiledGrammar& g) {
    size_t n = g.rule_start.size();
    std::vector<bool> nullable = nullable_rules(g);
    // left[r]: the rules r can start with (before consuming any character).
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r) {
        for (uint32_t a = g.rule_alts[r]; a < g.rule_alts[r + 1]; ++a) {
            for (uint32_t p = g.alt_start[a]; !is_end_of_sequence(g.elements[p]); ++p) {
                const GrammarElement& e = g.elements[p];
                if (e.type != GrammarSymbol::rule_ref) break;
                left[r].push_back(e.value);
                if (!nullable[e.value]) break;
            }
        }
    }
    // Depth-first search for a cycle; state 1 = on the current path, 2 = done.
    std::vector<uint8_t> state(n, 0);
    struct Frame { uint32_t rule; size_t next; };
    std::vector<Frame> stack;
    for (uint32_t start = 0; start < n; ++start) {
        if (state[start]) continue;
        stack.push_back({start, 0});
        state[start] = 1;
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.next == left[f.rule].size()) {
                state[f.rule] = 2;
                stack.pop_back();
                continue;
            }
            uint32_t to = left[f.rule][f.next++];
            if (state[to] == 1) {
                std::string cycle = g.rule_names[to];
                for (size_t i = stack.size(); i-- > 0 && stack[i].rule != to;)
                    cycle = g.rule_names[stack[i].rule] + " -> " + cycle;
                cycle = g.rule_names[to] + " -> " + cycle;
                return Error::format(
                    "grammar: rule '{}' is left-recursive ({}): it can reach itself without "
                    "matching a character; write it with right recursion or a repetition",
                    g.rule_names[to], cycle);
            }
            if (state[to] == 0) {
                state[to] = 1;
                stack.push_back({to, 0});
            }
        }
    }
    return {};
}

}  // namespace tdm
