// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/unicode_test.cpp: UTF-8 decoding and repair, NFC, character classes and
// the GPT-2 byte map (host/tokenizer/unicode.h). To add a case, add an EXPECT with the
// bytes written as escapes and the answer from the Unicode standard or the spec.
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>
#include <utf8proc.h>

#include <string>

namespace tdm::unicode {
namespace {

const std::string kFffdUnicode = "\xEF\xBF\xBD";

TEST(TokenizerUnicode, decode_is_strict_about_overlongs_surrogates_and_range) {
    EXPECT_TRUE(is_valid("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));  // aé€😀
    EXPECT_FALSE(is_valid("\xC0\x80"));          // overlong NUL
    EXPECT_FALSE(is_valid("\xE0\x80\x80"));      // overlong
    EXPECT_FALSE(is_valid("\xED\xA0\x80"));      // surrogate D800
    EXPECT_FALSE(is_valid("\xF4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_FALSE(is_valid("\xF0\x9F\x98"));      // truncated
    EXPECT_FALSE(is_valid("\x80"));              // lone continuation
    EXPECT_TRUE(is_valid(std::string("a\0b", 3)));
    size_t pos = 0;
    uint32_t cp = 0;
    EXPECT_TRUE(decode("\xF0\x9F\x98\x80", pos, cp));
    EXPECT_EQ(cp, 0x1F600u);
    EXPECT_EQ(pos, 4u);
}

TEST(TokenizerUnicode, invalid_bytes_are_replaced_per_byte_or_per_maximal_subpart) {
    // llama.cpp input rule: one U+FFFD per invalid byte.
    EXPECT_EQ(replace_invalid_per_byte("a\xE2\x82z"), "a" + kFffdUnicode + kFffdUnicode + "z");
    EXPECT_EQ(replace_invalid_per_byte("\xFF"), kFffdUnicode);
    // Rust from_utf8_lossy: one per maximal subpart.
    EXPECT_EQ(replace_invalid_lossy("a\xE2\x82z"), "a" + kFffdUnicode + "z");
    EXPECT_EQ(replace_invalid_lossy("\xF0\x9F\x98"), kFffdUnicode);
    EXPECT_EQ(replace_invalid_lossy("\xED\xA0\x80"), kFffdUnicode + kFffdUnicode + kFffdUnicode);
    EXPECT_EQ(replace_invalid_lossy("\xC0\xAF"), kFffdUnicode + kFffdUnicode);
    EXPECT_EQ(replace_invalid_lossy("ok"), "ok");
}

TEST(TokenizerUnicode, complete_prefix_holds_back_only_a_truncated_character) {
    EXPECT_EQ(complete_prefix_length("ab"), 2u);
    EXPECT_EQ(complete_prefix_length("ab\xF0\x9F"), 2u);
    EXPECT_EQ(complete_prefix_length("ab\xF0\x9F\x98"), 2u);
    EXPECT_EQ(complete_prefix_length("ab\xF0\x9F\x98\x80"), 6u);
    EXPECT_EQ(complete_prefix_length("ab\xE2\x82"), 2u);
    EXPECT_EQ(complete_prefix_length("ab\xC3"), 2u);
    EXPECT_EQ(complete_prefix_length("ab\x80"), 3u);      // can never complete: not held
    EXPECT_EQ(complete_prefix_length("ab\xE0\x80"), 4u);  // E0 80 is already invalid
    EXPECT_EQ(complete_prefix_length(""), 0u);
}

TEST(TokenizerUnicode, nfc_composes_and_keeps_embedded_nul) {
    EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");  // e + U+0301 -> é
    EXPECT_EQ(nfc("\xC3\xA9"), "\xC3\xA9");
    EXPECT_EQ(nfc(std::string("a\0e\xCC\x81", 5)), std::string("a\0\xC3\xA9", 4));
    EXPECT_EQ(nfc("\xEF\xAC\x81"), "\xEF\xAC\x81");  // ﬁ is NFC-stable (only NFKC folds it)
    EXPECT_EQ(nfc("plain"), "plain");
}

TEST(TokenizerUnicode, ascii_fast_path_agrees_with_the_unicode_tables) {
    for (uint32_t cp = 0; cp < 0x80; ++cp) {
        CpClass c = classify(cp);
        auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
        bool letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
        bool number = cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
        bool punct = cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
        EXPECT_EQ(c.letter, letter) << cp;
        EXPECT_EQ(c.number, number) << cp;
        EXPECT_EQ(c.punct, punct) << cp;
        EXPECT_FALSE(c.mark) << cp;
    }
}

TEST(TokenizerUnicode, classes_of_non_ascii_characters) {
    EXPECT_TRUE(classify(0x00E9).letter);   // é
    EXPECT_TRUE(classify(0x4F60).letter);   // 你
    EXPECT_TRUE(classify(0x0301).mark);     // combining acute
    EXPECT_TRUE(classify(0x0663).number);   // Arabic-Indic three
    EXPECT_TRUE(classify(0x00B2).number);   // superscript two (No)
    EXPECT_TRUE(classify(0x3001).punct);    // 、
    EXPECT_FALSE(classify(0x1F600).letter); // 😀 is a symbol
    EXPECT_TRUE(classify(0x00A0).space);
}

TEST(TokenizerUnicode, white_space_is_exactly_the_25_code_points_of_the_spec) {
    int n = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) n += is_white_space(cp);
    EXPECT_EQ(n, 25);
    for (uint32_t cp : {0x09u, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u, 0x2029u, 0x202Fu,
                        0x205Fu, 0x3000u})
        EXPECT_TRUE(is_white_space(cp)) << cp;
    EXPECT_FALSE(is_white_space(0x200B));  // zero width space is not White_Space
}

TEST(TokenizerUnicode, gpt2_byte_map_matches_the_spec_anchors_and_inverts) {
    EXPECT_EQ(byte_to_cp(' '), 0x120u);
    EXPECT_EQ(byte_to_cp('\n'), 0x10Au);
    EXPECT_EQ(byte_to_cp('\t'), 0x109u);
    EXPECT_EQ(byte_to_cp('\r'), 0x10Du);
    EXPECT_EQ(byte_to_cp(0x00), 0x100u);
    EXPECT_EQ(byte_to_cp(0x7F), 0x121u);
    EXPECT_EQ(byte_to_cp(0xA0), 0x142u);
    EXPECT_EQ(byte_to_cp(0xAD), 0x143u);
    EXPECT_EQ(byte_to_cp('A'), static_cast<uint32_t>('A'));
    EXPECT_EQ(byte_to_cp(0xE9), 0xE9u);
    for (int b = 0; b < 256; ++b) EXPECT_EQ(cp_to_byte(byte_to_cp(static_cast<uint8_t>(b))), b);
    EXPECT_EQ(cp_to_byte(0x144), -1);
    EXPECT_EQ(cp_to_byte(0x20), -1);  // a raw space is not in the image
}

}  // namespace
}  // namespace tdm::unicode
