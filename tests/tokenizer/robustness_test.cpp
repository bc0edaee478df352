// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/robustness_test.cpp: hostile and large inputs - invalid UTF-8, random
// bytes, random ids, long texts and long runs - must neither crash nor lose text. No
// timings are asserted here (see the report for measured speed). To add a case, pick an
// input family and state the round-trip property it must keep.
#include "tokenizer_fixtures.h"

#include "tokenizer/stream.h"
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <random>

namespace tdm::test {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string random_bytes(std::mt19937& rng, size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng() & 0xFF);
    return s;
}

TEST(TokenizerRobustness, invalid_utf8_is_replaced_per_byte_like_llama_cpp) {
    for (const char* name : {"qwen3", "gemma3"}) {
        const Tokenizer& tok = hf_tokenizer(name);
        EXPECT_EQ(tok.encode("a\xFF" "b", false), tok.encode("a" + kFffd + "b", false)) << name;
        EXPECT_EQ(tok.encode("\xE2\x82", false), tok.encode(kFffd + kFffd, false)) << name;
        EXPECT_EQ(tok.decode(tok.encode("x\xC0\xAFy", false)), "x" + kFffd + kFffd + "y") << name;
    }
}

TEST(TokenizerRobustness, random_bytes_round_trip_after_repair) {
    std::mt19937 rng(42);
    const Tokenizer& qwen = hf_tokenizer("qwen3");
    const Tokenizer& gemma = hf_tokenizer("gemma3");
    for (int iter = 0; iter < 300; ++iter) {
        std::string text = random_bytes(rng, rng() % 200);
        std::string repaired = unicode::replace_invalid_per_byte(text);
        // Qwen normalises to NFC; Gemma keeps the text, except that a literal U+2581
        // decodes as a space (it is how Gemma writes spaces).
        EXPECT_EQ(qwen.decode(qwen.encode(text, false)), unicode::nfc(repaired));
        std::string gemma_expected = repaired;
        for (size_t p; (p = gemma_expected.find("\xE2\x96\x81")) != std::string::npos;)
            gemma_expected.replace(p, 3, " ");
        EXPECT_EQ(gemma.decode(gemma.encode(text, false)), gemma_expected);
    }
}

TEST(TokenizerRobustness, random_ids_decode_to_valid_utf8) {
    std::mt19937 rng(7);
    for (const char* name : {"qwen3", "gemma3"}) {
        const Tokenizer& tok = hf_tokenizer(name);
        for (int iter = 0; iter < 200; ++iter) {
            std::vector<int32_t> ids(rng() % 64);
            for (int32_t& id : ids) id = static_cast<int32_t>(rng() % (tok.n_vocab() + 100)) - 50;
            std::string text = tok.decode(ids);
            EXPECT_TRUE(unicode::is_valid(text));
            StreamDecoder sd(tok);
            std::string streamed;
            for (int32_t id : ids) streamed += sd.push(id);
            streamed += sd.flush();
            EXPECT_TRUE(unicode::is_valid(streamed));
        }
    }
}

// A varied 10 kB text: every golden line, repeated.
std::string long_text(const std::string& name) {
    std::string text;
    while (text.size() < 10000)
        for (const GoldenLine& g : golden_lines(name)) text += g.decoded + "\n";
    return text;
}

TEST(TokenizerRobustness, a_10_kb_text_round_trips) {
    for (const char* name : {"qwen3", "gemma3"}) {
        const Tokenizer& tok = hf_tokenizer(name);
        std::string text = long_text(name);
        std::vector<int32_t> ids = tok.encode(text, false);
        EXPECT_GT(ids.size(), text.size() / 8) << name;
        EXPECT_EQ(tok.decode(ids), text) << name;
    }
}

TEST(TokenizerRobustness, long_runs_of_one_character_round_trip) {
    for (const char* name : {"qwen3", "gemma3"}) {
        const Tokenizer& tok = hf_tokenizer(name);
        for (const std::string unit : {"a", " ", "\n", "\t", "\xE2\x96\x81", "\xF0\x9F\x98\x80", "<", "<|"}) {
            std::string text;
            for (int i = 0; i < 3000; ++i) text += unit;
            std::vector<int32_t> ids = tok.encode(text, false);
            std::string expected = text;
            if (std::string(name) == "gemma3" && unit == "\xE2\x96\x81") expected = std::string(3000, ' ');
            EXPECT_EQ(tok.decode(ids), expected) << name << " run of '" << escaped(unit) << "'";
        }
    }
}

TEST(TokenizerRobustness, added_token_runs_use_leftmost_longest_matches) {
    const Tokenizer& gemma = hf_tokenizer("gemma3");
    // 40 newlines: the longest added "\n" run (31, id 137) then 9 (id 115).
    std::vector<int32_t> ids = gemma.encode(std::string(40, '\n'), false);
    EXPECT_EQ(ids, (std::vector<int32_t>{137, 115}));
    // A prefix of a special token is plain text; the full one is the token.
    EXPECT_EQ(gemma.encode("<start_of_turn", false).size(), gemma.encode("<start_of_turn", false, false).size());
    EXPECT_EQ(gemma.encode("<start_of_turn><start_of_turn>", false), (std::vector<int32_t>{105, 105}));
}

}  // namespace
}  // namespace tdm::test
