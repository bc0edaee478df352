// SPDX-License-Identifier: Apache-2.0
// host/grammar/gbnf_parser.cpp: GBNF text -> CompiledGrammar (compile_gbnf of grammar.h).
// The language and the expansion of repetitions into helper rules follow llama.cpp's
// src/llama-grammar.cpp (llama_grammar_parser), so grammars written for llama-server read
// the same here. Every input is untrusted: limits (grammar.h) bound the text, the rules,
// the symbols, the group nesting and the repetition counts, and recursion in this parser
// is bounded by the nesting limit.
// Not here: the checks on the whole grammar (grammar_checks.cpp), matching (matcher.cpp).
#include "grammar/grammar.h"
#include "grammar/grammar_checks.h"
#include "grammar/grammar_rules.h"
#include "grammar/matcher.h"
#include "tokenizer/unicode.h"

#include <fmt/format.h>

#include <map>
#include <optional>

namespace tdm {
namespace {

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

class GbnfParser {
public:
    GbnfParser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

    Result<CompiledGrammar> parse() {
        if (text_.size() > limits_.max_text_bytes)
            return Error::format("grammar is {} bytes; the limit is {}", text_.size(),
                                 limits_.max_text_bytes);
        skip_space(true);
        while (!eof()) {
            TDM_TRY(parse_rule());
            skip_space(true);
        }
        return finish();
    }

private:
    bool eof() const { return pos_ >= text_.size(); }
    char cur() const { return eof() ? '\0' : text_[pos_]; }

    Error error_at(size_t offset, std::string_view what) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < offset && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        return Error::format("grammar: line {}, column {}: {}", line, column, what);
    }

    // Spaces, tabs and comments; newlines too when `newline_ok` (inside groups, after ::=
    // and |), as llama.cpp's parse_space.
    void skip_space(bool newline_ok) {
        while (!eof()) {
            char c = cur();
            if (c == '#') {
                while (!eof() && cur() != '\n') ++pos_;
            } else if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newline_ok)) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    // Where the next line continues the rule: a line that starts with `|` (llama.cpp wants
    // the `|` at the end of the previous line; this accepts both).
    std::optional<size_t> continuation_bar() const {
        size_t i = pos_;
        while (i < text_.size()) {
            char c = text_[i];
            if (c == '#') {
                while (i < text_.size() && text_[i] != '\n') ++i;
            } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                ++i;
            } else {
                break;
            }
        }
        if (i < text_.size() && text_[i] == '|') return i;
        return std::nullopt;
    }

    Result<uint32_t> symbol_id(std::string_view name, size_t offset) {
        auto it = ids_.find(std::string(name));
        if (it != ids_.end()) return it->second;
        if (names_.size() >= limits_.max_rules)
            return error_at(offset, fmt::format("more than {} rules", limits_.max_rules));
        uint32_t id = static_cast<uint32_t>(names_.size());
        ids_.emplace(std::string(name), id);
        names_.emplace_back(name);
        rules_.emplace_back();
        defined_.push_back(false);
        first_use_.push_back(offset);
        return id;
    }

    // A helper rule for a group or a repetition inside rule `base`: "<base>_<n>".
    Result<uint32_t> helper_id(const std::string& base) {
        for (;;) {
            std::string name = fmt::format("{}_{}", base, ++helper_counter_);
            if (!ids_.count(name)) {
                uint32_t id = TDM_TRY(symbol_id(name, pos_));
                return id;
            }
        }
    }

    Status add_rule(uint32_t id, std::vector<GrammarElement> rule) {
        n_elements_ += rule.size();
        if (n_elements_ > limits_.max_elements)
            return error_at(pos_, fmt::format("the grammar expands to more than {} symbols",
                                              limits_.max_elements));
        rules_[id] = std::move(rule);
        defined_[id] = true;
        return {};
    }

    Status check_growth(const std::vector<GrammarElement>& seq) const {
        if (n_elements_ + seq.size() > limits_.max_elements)
            return error_at(pos_, fmt::format("the grammar expands to more than {} symbols",
                                              limits_.max_elements));
        return {};
    }

    Status parse_rule() {
        size_t start = pos_;
        std::string_view name = parse_name();
        if (name.empty())
            return error_at(start, fmt::format("expected a rule name, found '{}'", cur()));
        skip_space(false);
        if (text_.substr(pos_, 3) != "::=")
            return error_at(pos_, fmt::format("expected '::=' after the rule name '{}'", name));
        pos_ += 3;
        skip_space(true);
        uint32_t id = TDM_TRY(symbol_id(name, start));
        if (defined_[id]) return error_at(start, fmt::format("rule '{}' is defined twice", name));
        defined_[id] = true;  // set again by add_rule; marks it against a second definition now
        TDM_TRY(parse_alternates(std::string(name), id, /*nested=*/false));
        skip_space(false);
        if (!eof() && cur() != '\n' && cur() != '\r')
            return error_at(pos_, fmt::format("unexpected '{}' in rule '{}'", cur(), name));
        return {};
    }

    std::string_view parse_name() {
        size_t start = pos_;
        while (!eof() && is_name_char(cur())) ++pos_;
        return text_.substr(start, pos_ - start);
    }

    Status parse_alternates(const std::string& rule_name, uint32_t id, bool nested) {
        std::vector<GrammarElement> rule;
        TDM_TRY(parse_sequence(rule_name, rule, nested));
        for (;;) {
            if (cur() != '|') {
                std::optional<size_t> bar = nested ? std::nullopt : continuation_bar();
                if (!bar) break;
                pos_ = *bar;
            }
            ++pos_;
            skip_space(true);
            rule.push_back({GrammarSymbol::alt, 0});
            TDM_TRY(parse_sequence(rule_name, rule, nested));
        }
        rule.push_back({GrammarSymbol::end, 0});
        return add_rule(id, std::move(rule));
    }

    Result<uint32_t> parse_hex(int n_digits) {
        size_t start = pos_;
        uint32_t v = 0;
        for (int i = 0; i < n_digits; ++i) {
            char c = cur();
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0) return error_at(start, fmt::format("expected {} hex digits", n_digits));
            v = v * 16 + static_cast<uint32_t>(d);
            ++pos_;
        }
        if (v > 0x10FFFF) return error_at(start, fmt::format("code point {:X} is above U+10FFFF", v));
        return v;
    }

    // One character of a literal or a class: an escape or one UTF-8 code point.
    Result<uint32_t> parse_char() {
        size_t start = pos_;
        if (cur() == '\\') {
            ++pos_;
            char c = cur();
            ++pos_;
            switch (c) {
                case 'x': return parse_hex(2);
                case 'u': return parse_hex(4);
                case 'U': return parse_hex(8);
                case 't': return uint32_t{'\t'};
                case 'r': return uint32_t{'\r'};
                case 'n': return uint32_t{'\n'};
                case '\\': case '"': case '[': case ']': case '-': case '^': case '/':
                    return static_cast<uint32_t>(c);
                default:
                    return error_at(start, fmt::format("unknown escape '\\{}'", c));
            }
        }
        uint32_t cp = 0;
        if (!unicode::decode(text_, pos_, cp)) return error_at(start, "invalid UTF-8");
        return cp;
    }

    Result<int> parse_count() {
        size_t start = pos_;
        int64_t v = 0;
        while (!eof() && cur() >= '0' && cur() <= '9') {
            v = v * 10 + (cur() - '0');
            if (v > limits_.max_repetition)
                return error_at(start, fmt::format("repetition count above the limit {}",
                                                   limits_.max_repetition));
            ++pos_;
        }
        if (pos_ == start) return -1;
        return static_cast<int>(v);
    }

    Status parse_sequence(const std::string& rule_name, std::vector<GrammarElement>& out,
                          bool nested) {
        size_t last_sym_start = out.size();
        while (!eof()) {
            size_t start = pos_;
            char c = cur();
            if (c == '"') {
                ++pos_;
                last_sym_start = out.size();
                while (cur() != '"') {
                    if (eof()) return error_at(start, "unterminated string literal");
                    uint32_t cp = TDM_TRY(parse_char());
                    out.push_back({GrammarSymbol::chr, cp});
                }
                ++pos_;
            } else if (c == '[') {
                ++pos_;
                GrammarSymbol first = GrammarSymbol::chr;
                if (cur() == '^') {
                    ++pos_;
                    first = GrammarSymbol::chr_not;
                }
                last_sym_start = out.size();
                if (cur() == ']') return error_at(start, "empty character class");
                while (cur() != ']') {
                    if (eof()) return error_at(start, "unterminated character class");
                    uint32_t lo = TDM_TRY(parse_char());
                    out.push_back({out.size() == last_sym_start ? first : GrammarSymbol::chr_alt, lo});
                    if (cur() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
                        ++pos_;
                        size_t hi_at = pos_;
                        uint32_t hi = TDM_TRY(parse_char());
                        if (hi < lo) return error_at(hi_at, "character range ends below its start");
                        out.push_back({GrammarSymbol::chr_upper, hi});
                    }
                }
                ++pos_;
            } else if (is_name_char(c)) {
                last_sym_start = out.size();
                std::string_view name = parse_name();
                uint32_t id = TDM_TRY(symbol_id(name, start));
                out.push_back({GrammarSymbol::rule_ref, id});
            } else if (c == '(') {
                ++pos_;
                if (++depth_ > limits_.max_nesting)
                    return error_at(start, fmt::format("groups nested deeper than {}", limits_.max_nesting));
                skip_space(true);
                uint32_t sub = TDM_TRY(helper_id(rule_name));
                TDM_TRY(parse_alternates(rule_name, sub, /*nested=*/true));
                --depth_;
                if (cur() != ')') return error_at(pos_, "expected ')' to close the group");
                ++pos_;
                last_sym_start = out.size();
                out.push_back({GrammarSymbol::rule_ref, sub});
            } else if (c == '.') {
                ++pos_;
                last_sym_start = out.size();
                out.push_back({GrammarSymbol::chr_any, 0});
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (last_sym_start == out.size())
                    return error_at(start, fmt::format("'{}' has nothing to repeat", c));
                ++pos_;
                int min = 0, max = -1;
                if (c == '+') min = 1;
                if (c == '?') max = 1;
                if (c == '{') {
                    skip_space(nested);
                    min = TDM_TRY(parse_count());
                    if (min < 0) min = 0;
                    skip_space(nested);
                    if (cur() == ',') {
                        ++pos_;
                        skip_space(nested);
                        max = TDM_TRY(parse_count());
                    } else {
                        max = min;
                    }
                    skip_space(nested);
                    if (cur() != '}') return error_at(pos_, "expected '}' to close the repetition");
                    ++pos_;
                    if (max >= 0 && max < min)
                        return error_at(start, fmt::format("repetition {{{},{}}} has its maximum below its minimum", min, max));
                }
                TDM_TRY(expand_repetition(rule_name, out, last_sym_start, min, max));
                last_sym_start = out.size();
            } else {
                break;
            }
            skip_space(nested);
        }
        return {};
    }

    // x{min,max} (max -1: unbounded) as llama.cpp's handle_repetitions: min copies of x,
    // then helper rules r1 ::= x | , r2 ::= x r1 | , ... (or r ::= x r | when unbounded).
    Status expand_repetition(const std::string& rule_name, std::vector<GrammarElement>& out,
                             size_t last_sym_start, int min, int max) {
        std::vector<GrammarElement> item(out.begin() + static_cast<ptrdiff_t>(last_sym_start), out.end());
        if (min == 0) out.resize(last_sym_start);
        for (int i = 1; i < min; ++i) {
            out.insert(out.end(), item.begin(), item.end());
            TDM_TRY(check_growth(out));
        }
        int n_optional = max < 0 ? 1 : max - min;
        uint32_t last_rule = 0;
        for (int i = 0; i < n_optional; ++i) {
            uint32_t id = TDM_TRY(helper_id(rule_name));
            std::vector<GrammarElement> rule = item;
            if (i > 0 || max < 0) rule.push_back({GrammarSymbol::rule_ref, max < 0 ? id : last_rule});
            rule.push_back({GrammarSymbol::alt, 0});
            rule.push_back({GrammarSymbol::end, 0});
            TDM_TRY(add_rule(id, std::move(rule)));
            last_rule = id;
        }
        if (n_optional > 0) out.push_back({GrammarSymbol::rule_ref, last_rule});
        return {};
    }

    Result<CompiledGrammar> finish() {
        for (size_t id = 0; id < names_.size(); ++id) {
            if (!defined_[id])
                return error_at(first_use_[id], fmt::format("undefined rule '{}'", names_[id]));
        }
        auto root = ids_.find("root");
        if (root == ids_.end()) return Error("grammar: no rule named 'root'");
        CompiledGrammar g;
        g.root = root->second;
        g.rule_names = names_;
        g.elements.reserve(n_elements_);
        for (auto& rule : rules_) {
            g.rule_start.push_back(static_cast<uint32_t>(g.elements.size()));
            g.elements.insert(g.elements.end(), rule.begin(), rule.end());
        }
        for (size_t r = 0; r < rules_.size(); ++r) {
            g.rule_alts.push_back(static_cast<uint32_t>(g.alt_start.size()));
            uint32_t p = g.rule_start[r];
            g.alt_start.push_back(p);
            for (; g.elements[p].type != GrammarSymbol::end; ++p) {
                if (g.elements[p].type == GrammarSymbol::alt) g.alt_start.push_back(p + 1);
            }
        }
        g.rule_alts.push_back(static_cast<uint32_t>(g.alt_start.size()));
        TDM_TRY(check_no_left_recursion(g));
        MatchWorkspace ws;
        MatchState start;
        if (!initial_match_state(g, ws, start))
            return Error::format("grammar: too ambiguous: more than {} parses (or {} expansion steps, or {} stack "
                                 "positions) at the start",
                                 kMaxStacks, kMaxExpandSteps, kMaxStatePositions);
        return g;
    }

    std::string_view text_;
    const GrammarLimits& limits_;
    size_t pos_ = 0;
    int depth_ = 0;
    int helper_counter_ = 0;
    size_t n_elements_ = 0;
    std::map<std::string, uint32_t> ids_;
    std::vector<std::string> names_;
    std::vector<std::vector<GrammarElement>> rules_;
    std::vector<bool> defined_;
    std::vector<size_t> first_use_;
};

}  // namespace

Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text,
                                                            const GrammarLimits& limits) {
    GbnfParser parser(text, limits);
    CompiledGrammar g = TDM_TRY(parser.parse());
    return std::shared_ptr<const CompiledGrammar>(std::make_shared<CompiledGrammar>(std::move(g)));
}

}  // namespace tdm
