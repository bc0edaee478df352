// SPDX-License-Identifier: Apache-2.0
// tests/grammar/gbnf_parser_test.cpp: GBNF grammars accepted (and the texts they match,
// fed byte by byte), refused with a line and column, and hostile ones refused quickly.
// To add a case: a grammar, the texts it must accept and those it must reject.
#include "grammar_test_util.h"


namespace tdm::test {
namespace {

std::string compile_error(const std::string& gbnf, const GrammarLimits& limits = {}) {
    auto g = compile_gbnf(gbnf, limits);
    return g.ok() ? std::string("(compiled)") : g.error().message();
}

TEST(GbnfParser, arithmetic_grammar_matches_expressions_and_refuses_the_rest) {
    auto g = must_compile(R"gbnf(
# an arithmetic expression
root  ::= expr
expr  ::= term ([-+*/] term)*
term  ::= num | "(" ws expr ws ")"
num   ::= [0-9]+
ws    ::= [ \t\n]*
)gbnf");
    EXPECT_TRUE(accepts(g, "1+2*3"));
    EXPECT_TRUE(accepts(g, "(1+2)*(3)"));
    EXPECT_TRUE(accepts(g, "( 12 )"));
    EXPECT_FALSE(accepts(g, "1+"));
    EXPECT_FALSE(accepts(g, "(1"));
    EXPECT_FALSE(accepts(g, "a"));
}

TEST(GbnfParser, literals_take_every_escape) {
    auto g = must_compile(R"(root ::= "\x41\u00e9\U0001F600\t\n\r\\\"" "ok")");
    EXPECT_TRUE(accepts(g, "A\xC3\xA9\xF0\x9F\x98\x80\t\n\r\\\"ok"));
    EXPECT_FALSE(accepts(g, "A\xC3\xA9"));
}

TEST(GbnfParser, character_classes_match_code_points) {
    auto g = must_compile(R"(root ::= [a-z0-9_]+ [^"\\] [α-ω] .)");
    EXPECT_TRUE(accepts(g, "ab_9!\xCE\xB2\xF0\x9F\x98\x80"));  // β, then an emoji for `.`
    EXPECT_TRUE(accepts(g, "x\xC3\xA9\xCF\x89z"));             // é is not " or \, ω
    EXPECT_FALSE(accepts(g, "x\"\xCE\xB2z"));
    EXPECT_FALSE(accepts(g, "xzAz"));  // A is not Greek
}

TEST(GbnfParser, a_partial_utf8_character_is_held_only_if_a_class_could_take_it) {
    auto g = must_compile(R"(root ::= [α-ω]+)");
    GrammarMatcher m(g);
    EXPECT_TRUE(m.feed("\xCE"));  // first byte of α..ο
    EXPECT_FALSE(m.accepting());
    EXPECT_TRUE(m.feed("\xB1"));  // α
    EXPECT_TRUE(m.accepting());
    EXPECT_FALSE(m.feed("\xC3"));  // U+00C0..U+00FF: no Greek letter starts so
    EXPECT_FALSE(m.feed("\xB1"));  // a continuation byte with nothing to continue
    EXPECT_FALSE(m.feed("\xFF"));  // never in UTF-8
    EXPECT_TRUE(m.accepting());    // the failed feeds left the state as it was
}

// E0 and F0 carry no bits of their code point: the range they open starts at U+0800 and
// U+10000, so where only ASCII may follow they are refused at once (a token ending in one
// would otherwise pass the mask and leave the next step no byte at all).
TEST(GbnfParser, a_lead_byte_opens_only_the_code_points_its_length_can_encode) {
    auto g = must_compile(R"(root ::= "{" [ \t\n]* "\"")");
    GrammarMatcher m(g);
    ASSERT_TRUE(m.feed("{"));
    EXPECT_FALSE(m.feed("\xE0"));
    EXPECT_FALSE(m.feed("\xF0"));
    EXPECT_FALSE(m.feed("\xC2"));
    EXPECT_TRUE(m.feed(" \""));
    EXPECT_TRUE(m.accepting());
    auto wide = must_compile(R"(root ::= [\u0800-\u0FFF] [\U00010000-\U0001FFFF])");
    EXPECT_TRUE(accepts(wide, "\xE0\xA0\x80\xF0\x90\x80\x80"));
}

// A negated class whose excluded ranges together cover all a lead byte can start refuses
// that byte, though no single range covers it.
TEST(GbnfParser, a_negated_class_refuses_a_lead_byte_its_ranges_cover_together) {
    auto g = must_compile(R"(root ::= [^\u00C0-\u00DF\u00E0-\u00FF]+)");
    GrammarMatcher m(g);
    EXPECT_FALSE(m.feed("\xC3"));  // U+00C0..U+00FF: all excluded
    EXPECT_TRUE(m.feed("\xC2"));   // U+0080..U+00BF: allowed
    EXPECT_TRUE(m.feed("\xA9"));   // ©
    EXPECT_TRUE(m.accepting());
}

TEST(GbnfParser, any_character_takes_strict_utf8_only) {
    auto g = must_compile(R"(root ::= .+)");
    EXPECT_TRUE(accepts(g, "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF"));
    EXPECT_FALSE(accepts(g, "\xC0\x80"));          // overlong NUL
    EXPECT_FALSE(accepts(g, "\xE0\x80\x80"));      // overlong
    EXPECT_FALSE(accepts(g, "\xED\xA0\x80"));      // a surrogate
    EXPECT_FALSE(accepts(g, "\xF0\x80\x80\x80"));  // overlong
    EXPECT_FALSE(accepts(g, "\xF4\x90\x80\x80"));  // above U+10FFFF
}

TEST(GbnfParser, repetition_counts_are_exact) {
    auto g = must_compile(R"(root ::= "ab"{2,3} "c"{2} "d"{1,} "e"{,2})");
    EXPECT_TRUE(accepts(g, "ababccd"));
    EXPECT_TRUE(accepts(g, "abababccddddee"));
    EXPECT_FALSE(accepts(g, "abccd"));
    EXPECT_FALSE(accepts(g, "abababab" "ccd"));
    EXPECT_FALSE(accepts(g, "ababcd"));
    EXPECT_FALSE(accepts(g, "ababccdeee"));
}

TEST(GbnfParser, alternatives_continue_on_lines_that_start_with_a_bar) {
    auto g = must_compile("root ::= \"a\" |\n  \"b\"\n  | \"c\" # comment\nother ::= \"x\"\n");
    EXPECT_TRUE(accepts(g, "a"));
    EXPECT_TRUE(accepts(g, "b"));
    EXPECT_TRUE(accepts(g, "c"));
    EXPECT_FALSE(accepts(g, "x"));
}

TEST(GbnfParser, groups_span_lines_and_optional_parts_may_be_empty) {
    auto g = must_compile("root ::= (\n  \"a\"\n  \"b\"?\n)\n");
    EXPECT_TRUE(accepts(g, "a"));
    EXPECT_TRUE(accepts(g, "ab"));
    EXPECT_FALSE(accepts(g, "b"));
}

TEST(GbnfParser, errors_name_the_line_and_column) {
    EXPECT_EQ(compile_error("root ::= \"a\"\nfoo = \"b\""),
              "grammar: line 2, column 5: expected '::=' after the rule name 'foo'");
    EXPECT_EQ(compile_error("root ::= \"abc"), "grammar: line 1, column 10: unterminated string literal");
    EXPECT_EQ(compile_error("root ::= \"a\" thing"), "grammar: line 1, column 14: undefined rule 'thing'");
    EXPECT_EQ(compile_error("root ::= \"\\q\""), "grammar: line 1, column 11: unknown escape '\\q'");
    EXPECT_EQ(compile_error("root ::= [a-"), "grammar: line 1, column 10: unterminated character class");
    EXPECT_EQ(compile_error("root ::= [z-a]"), "grammar: line 1, column 13: character range ends below its start");
    EXPECT_EQ(compile_error("root ::= []"), "grammar: line 1, column 10: empty character class");
    EXPECT_EQ(compile_error("root ::= * \"a\""), "grammar: line 1, column 10: '*' has nothing to repeat");
    EXPECT_EQ(compile_error("root ::= \"a\"{3,2}"),
              "grammar: line 1, column 13: repetition {3,2} has its maximum below its minimum");
    EXPECT_EQ(compile_error("root ::= (\"a\""), "grammar: line 1, column 14: expected ')' to close the group");
    EXPECT_EQ(compile_error("root ::= \"a\"\nroot ::= \"b\""), "grammar: line 2, column 1: rule 'root' is defined twice");
    EXPECT_EQ(compile_error("item ::= \"a\""), "grammar: no rule named 'root'");
    EXPECT_EQ(compile_error("root ::= \"a\" ) \"b\""), "grammar: line 1, column 14: unexpected ')' in rule 'root'");
    EXPECT_EQ(compile_error("root ::= \"\\x4\""), "grammar: line 1, column 13: expected 2 hex digits");
}

TEST(GbnfParser, left_recursion_is_refused_with_the_cycle) {
    EXPECT_EQ(compile_error("root ::= root \"a\" | \"a\""),
              "grammar: rule 'root' is left-recursive (root -> root): it can reach itself without "
              "matching a character; write it with right recursion or a repetition");
    // through another rule, past one that can be empty
    std::string e = compile_error("root ::= a\na ::= b? root \"x\"\nb ::= \"b\"");
    EXPECT_NE(e.find("left-recursive (root -> a -> root)"), std::string::npos) << e;
    // a repetition of something that can be empty would loop as well
    e = compile_error("root ::= (\"a\"?)*");
    EXPECT_NE(e.find("left-recursive"), std::string::npos) << e;
    // right recursion is fine
    EXPECT_EQ(compile_error("root ::= \"a\" root | \"a\""), "(compiled)");
}

// Each hostile grammar is refused, the limits checked as it parses (a hang would be ctest's timeout).
TEST(GbnfParser, hostile_grammars_are_refused_quickly) {
    EXPECT_EQ(compile_error("root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')')),
              "grammar: line 1, column 74: groups nested deeper than 64");
    EXPECT_EQ(compile_error("root ::= \"a\"{0,100000}"), "grammar: line 1, column 16: repetition count above the limit 10000");
    EXPECT_EQ(compile_error("root ::= \"a\"{99999999999999999999}"),
              "grammar: line 1, column 14: repetition count above the limit 10000");
    std::string e = compile_error(R"(root ::= (("a"{0,9000}){0,9000}){0,9000})");
    EXPECT_NE(e.find("more than 20000 rules"), std::string::npos) << e;
    e = compile_error(R"(root ::= "abcdefghijklmnopqrstuvwxyz"{10000} "abcdefghijklmnopqrstuvwxyz"{10000} "abcdefghijklmnopqrstuvwxyz"{10000} "abcdefghijklmnopqrstuvwxyz"{10000} "abcdefghijklmnopqrstuvwxyz"{10000})");
    EXPECT_NE(e.find("expands to more than 1048576 symbols"), std::string::npos) << e;
    // nested optional pairs: 2^40 parses at the start
    std::string pairs = "root ::= a0\n";
    for (int i = 0; i < 40; ++i) pairs += "a" + std::to_string(i) + " ::= (a" + std::to_string(i + 1) + " a" + std::to_string(i + 1) + ")?\n";
    EXPECT_EQ(compile_error(pairs + "a40 ::= \"x\"\n"),
              "grammar: too ambiguous: more than 32768 parses (or 262144 expansion steps, or 1048576 stack "
              "positions) at the start");
    // 2^14 parses, each under a chain of 1000 rules: within the parse count, but a state of
    // 16M positions (tens of megabytes, copied at every byte) is refused by its size
    std::string deep = "root ::= d0\n";
    for (int i = 0; i < 1000; ++i) deep += "d" + std::to_string(i) + " ::= d" + std::to_string(i + 1) + " \"a\"\n";
    deep += "d1000 ::= b0\n";
    for (int i = 0; i < 14; ++i)
        deep += "b" + std::to_string(i) + " ::= b" + std::to_string(i + 1) + " \"x\" | b" + std::to_string(i + 1) + " \"y\"\n";
    e = compile_error(deep + "b14 ::= [a-z]+\n");
    EXPECT_NE(e.find("too ambiguous"), std::string::npos) << e;
    std::string alternatives = "root ::= \"a\"";
    while (alternatives.size() < (1u << 20)) alternatives += " | \"a\"";
    EXPECT_EQ(compile_error(alternatives), "grammar is 1048578 bytes; the limit is 524288");
}

TEST(GbnfParser, a_large_grammar_within_the_limits_compiles) {
    std::string alternatives = "root ::= \"k0\"";
    for (int i = 1; i < 20000; ++i) alternatives += " | \"k" + std::to_string(i) + "\"";
    auto g = must_compile(alternatives);
    EXPECT_TRUE(accepts(g, "k19999"));
    EXPECT_FALSE(accepts(g, "k20000"));
}

TEST(GbnfParser, a_grammar_that_never_finishes_never_accepts) {
    auto g = must_compile(R"(root ::= "a" root)");
    GrammarMatcher m(g);
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(m.feed("a"));
        EXPECT_FALSE(m.accepting());
        EXPECT_FALSE(m.complete());
    }
}

TEST(GbnfParser, complete_means_nothing_but_the_end_can_follow) {
    auto g = must_compile(R"(root ::= "a" "b"?)");
    GrammarMatcher m(g);
    ASSERT_TRUE(m.feed("a"));
    EXPECT_TRUE(m.accepting());
    EXPECT_FALSE(m.complete());
    ASSERT_TRUE(m.feed("b"));
    EXPECT_TRUE(m.complete());
    EXPECT_FALSE(m.feed("b"));
}

}  // namespace
}  // namespace tdm::test
