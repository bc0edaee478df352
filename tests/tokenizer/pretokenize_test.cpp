// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/pretokenize_test.cpp: the hand-written splitters against the examples
// of docs/tokenizers.md §3.2 and against the regex alternatives they implement. To add a
// case, write the expected pieces by applying the regex by hand (or with Python `regex`).
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tdm {
namespace {

std::vector<std::string> split(PreTokenizer kind, std::string_view text) {
    std::vector<std::string_view> views;
    pretokenize(kind, text, views);
    return {views.begin(), views.end()};
}

using V = std::vector<std::string>;

TEST(TokenizerPretokenize, qwen2_splits_the_spec_examples) {
    EXPECT_EQ(split(PreTokenizer::qwen2, "Hello, world!"), (V{"Hello", ",", " world", "!"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "  two leading spaces"), (V{" ", " two", " leading", " spaces"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "line one\nline two\n\nline four"),
              (V{"line", " one", "\n", "line", " two", "\n\n", "line", " four"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "   indented code\n\t\ttabs\n"),
              (V{"  ", " indented", " code", "\n", "\t", "\ttabs", "\n"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "tab\tseparated\tvalues"), (V{"tab", "\tseparated", "\tvalues"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "\r\n windows line end\r\n"),
              (V{"\r\n", " windows", " line", " end", "\r\n"}));
}

TEST(TokenizerPretokenize, qwen2_contractions_are_case_insensitive) {
    EXPECT_EQ(split(PreTokenizer::qwen2, "I'm DON'T we'LL"), (V{"I", "'m", " DON", "'T", " we", "'LL"}));
    // ASCII case only, as llama.cpp: HF's (?i:'s) also takes U+017F LONG S (spec §3.2).
    EXPECT_EQ(split(PreTokenizer::qwen2, "'\xC5\xBFt"), (V{"'\xC5\xBFt"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "'hello"), (V{"'hello"}));
}

TEST(TokenizerPretokenize, qwen2_numbers_are_single_digits_and_whitespace_rules_hold) {
    EXPECT_EQ(split(PreTokenizer::qwen2, "12345"), (V{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "  3"), (V{" ", " ", "3"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "a ..."), (V{"a", " ..."}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "x...\n\ny"), (V{"x", "...\n\n", "y"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "  \n  x"), (V{"  \n", " ", " x"}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "end   "), (V{"end", "   "}));
    EXPECT_EQ(split(PreTokenizer::qwen2, "a\xC2\xA0" "b"), (V{"a", "\xC2\xA0" "b"}));  // NBSP joins the word
}

TEST(TokenizerPretokenize, qwen35_letter_runs_absorb_combining_marks) {
    const std::string text = "e\xCC\x81x caf\xCC\xA7";  // e + U+0301 + x, " caf" + U+0327
    EXPECT_EQ(split(PreTokenizer::qwen2, text), (V{"e", "\xCC\x81x", " caf", "\xCC\xA7"}));
    EXPECT_EQ(split(PreTokenizer::qwen35, text), (V{"e\xCC\x81x", " caf\xCC\xA7"}));
    EXPECT_EQ(split(PreTokenizer::qwen35, "Hello, world!"), (V{"Hello", ",", " world", "!"}));
}

TEST(TokenizerPretokenize, llama3_groups_up_to_three_digits) {
    EXPECT_EQ(split(PreTokenizer::llama3, "1234567"), (V{"123", "456", "7"}));
    EXPECT_EQ(split(PreTokenizer::llama3, "v12 x"), (V{"v", "12", " x"}));
}

TEST(TokenizerPretokenize, gpt2_contractions_are_case_sensitive_and_prefix_one_space) {
    EXPECT_EQ(split(PreTokenizer::gpt2, "I'm DON'T"), (V{"I", "'m", " DON", "'", "T"}));
    EXPECT_EQ(split(PreTokenizer::gpt2, "a  b 123 !?"), (V{"a", " ", " b", " 123", " !?"}));
    EXPECT_EQ(split(PreTokenizer::gpt2, "x\n\ny  "), (V{"x", "\n", "\n", "y", "  "}));  // only ' ' prefixes
}

TEST(TokenizerPretokenize, llama_default_applies_its_four_regexes_in_turn) {
    EXPECT_EQ(split(PreTokenizer::llama_default, "Hello, world! 12345"),
              (V{"Hello", ",", " world", "!", " ", "123", "45"}));
    EXPECT_EQ(split(PreTokenizer::llama_default, "a+=b"), (V{"a", "+=", "b"}));
}

TEST(TokenizerPretokenize, gemma4_separates_newline_runs) {
    EXPECT_EQ(split(PreTokenizer::gemma4, "a\n\nb c\n"), (V{"a", "\n\n", "b c", "\n"}));
    EXPECT_EQ(split(PreTokenizer::none, "a\n\nb c\n"), (V{"a\n\nb c\n"}));
    EXPECT_TRUE(split(PreTokenizer::qwen2, "").empty());
}

// Every splitter covers the text exactly with non-empty pieces, whatever the input.
TEST(TokenizerPretokenize, pieces_cover_random_text_exactly) {
    const std::vector<std::string> alphabet = {
        "a", "Z", "7", " ", "  ", "\t", "\r", "\n", "'", "s", "'S", "!", ".", "+", "$", "\xC2\xA0", "\xE3\x80\x80",
        "\xCC\x81", "\xE4\xBD\xA0", "\xF0\x9F\x98\x80", std::string("\0", 1), "\x07", "\xD9\xA3", "_", "|"};
    std::mt19937 rng(1234);
    for (PreTokenizer kind : {PreTokenizer::qwen2, PreTokenizer::qwen35, PreTokenizer::llama3, PreTokenizer::gpt2,
                              PreTokenizer::llama_default, PreTokenizer::gemma4, PreTokenizer::none}) {
        for (int iter = 0; iter < 2000; ++iter) {
            std::string text;
            int n = static_cast<int>(rng() % 24);
            for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
            std::vector<std::string> pieces = split(kind, text);
            std::string joined;
            for (const auto& p : pieces) {
                EXPECT_FALSE(p.empty());
                joined += p;
            }
            ASSERT_EQ(joined, text) << to_string(kind);
        }
    }
}

}  // namespace
}  // namespace tdm
