/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/grammar_rules.h: a compiled grammar as the matcher reads it: every rule's
// alternatives as flat symbol arrays, in llama.cpp's llama_grammar_element layout (so the
// two can be compared line by line). Repetitions are already expanded into helper rules.
// Not here: parsing (gbnf_parser.cpp), matching (matcher.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tdm {

enum class GrammarSymbol : uint8_t {
    end,        // end of a rule
    alt,        // start of the rule's next alternative
    rule_ref,   // value: a rule id
    chr,        // value: a code point; starts a character class ([a-z] is chr a, chr_upper z)
    chr_not,    // as chr, negated ([^...])
    chr_upper,  // value: the upper end of a range whose lower end is the previous symbol
    chr_alt,    // value: one more code point (or the lower end of one more range) of the class
    chr_any,    // any code point (`.`)
};

struct GrammarElement {
    GrammarSymbol type;
    uint32_t value;
};

struct CompiledGrammar {
    // All rules' symbols; rule r's alternatives start at elements[rule_start[r]] and its
    // `end` closes the last one. A position (index into elements) is a parser location.
    std::vector<GrammarElement> elements;
    std::vector<uint32_t> rule_start;
    std::vector<std::string> rule_names;  // for messages; helper rules are "<name>_<n>"
    // Rule r's alternatives start at alt_start[rule_alts[r]] .. alt_start[rule_alts[r + 1] - 1]
    // (precomputed: the matcher expands rules at every character).
    std::vector<uint32_t> alt_start;
    std::vector<uint32_t> rule_alts;
    uint32_t root = 0;
};

inline bool is_end_of_sequence(const GrammarElement& e) {
    return e.type == GrammarSymbol::end || e.type == GrammarSymbol::alt;
}

inline bool is_char_symbol(const GrammarElement& e) {
    return e.type == GrammarSymbol::chr || e.type == GrammarSymbol::chr_not ||
           e.type == GrammarSymbol::chr_any;
}

}  // namespace tdm
