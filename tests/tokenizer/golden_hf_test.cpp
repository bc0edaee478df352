// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/golden_hf_test.cpp: every golden line of the real Qwen3 and Gemma 3
// tokenizers, loaded from tokenizer.json (HF semantics). To add a case, append a line to
// tests/fixtures/tokenizers/<name>/golden.jsonl produced by a reference implementation.
#include "tokenizer_fixtures.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

void expect_all_goldens(const std::string& name) {
    const Tokenizer& tok = hf_tokenizer(name);
    const auto& lines = golden_lines(name);
    ASSERT_EQ(lines.size(), 68u);
    int n_ok = 0;
    for (const GoldenLine& g : lines) {
        std::vector<int32_t> ids = tok.encode(g.text, /*add_special=*/false);
        std::string decoded = tok.decode(g.ids);
        EXPECT_EQ(ids, g.ids) << name << " encode of '" << escaped(g.text) << "'";
        EXPECT_EQ(decoded, g.decoded) << name << " decode of '" << escaped(g.text) << "'";
        n_ok += ids == g.ids && decoded == g.decoded;
    }
    EXPECT_EQ(n_ok, 68) << name;
}

TEST(TokenizerGoldenHf, qwen3_tokenizer_json_reproduces_every_golden_line) { expect_all_goldens("qwen3"); }

TEST(TokenizerGoldenHf, gemma3_tokenizer_json_reproduces_every_golden_line) { expect_all_goldens("gemma3"); }

TEST(TokenizerGoldenHf, qwen3_vocabulary_facts_match_the_spec) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    EXPECT_EQ(tok.n_vocab(), 151669);
    EXPECT_EQ(tok.bos(), -1);
    EXPECT_EQ(tok.eos(), 151645);  // <|im_end|> from tokenizer_config.json
    EXPECT_EQ(tok.pad(), 151643);
    EXPECT_FALSE(tok.vocab().add_bos);
    EXPECT_TRUE(tok.vocab().normalize_nfc);
    EXPECT_EQ(tok.vocab().pre, PreTokenizer::qwen2);
    EXPECT_EQ(tok.token_type(151644), TokenType::control);       // <|im_start|>
    EXPECT_EQ(tok.token_type(151659), TokenType::control);       // <|fim_prefix|> looks special
    EXPECT_EQ(tok.token_type(151667), TokenType::user_defined);  // <think>
    EXPECT_EQ(tok.token_text(151667), "<think>");
    EXPECT_TRUE(tok.is_eog(151645));
    EXPECT_TRUE(tok.is_eog(151643));  // <|endoftext|> by text
    EXPECT_FALSE(tok.is_eog(151644));
    EXPECT_EQ(tok.encode("hi", /*add_special=*/true), tok.encode("hi", false));  // no BOS for Qwen
}

TEST(TokenizerGoldenHf, gemma3_vocabulary_facts_match_the_spec) {
    const Tokenizer& tok = hf_tokenizer("gemma3");
    EXPECT_EQ(tok.n_vocab(), 262145);
    EXPECT_EQ(tok.bos(), 2);
    EXPECT_EQ(tok.eos(), 106);  // <end_of_turn> from tokenizer_config.json
    EXPECT_EQ(tok.unk(), 3);
    EXPECT_EQ(tok.pad(), 0);
    EXPECT_TRUE(tok.vocab().add_bos);
    EXPECT_FALSE(tok.vocab().add_eos);
    EXPECT_FALSE(tok.vocab().add_space_prefix);
    EXPECT_EQ(tok.token_type(251), TokenType::byte);  // <0x0D>
    EXPECT_EQ(tok.token_type(107), TokenType::user_defined);  // "\n"
    EXPECT_EQ(tok.token_type(106), TokenType::control);
    EXPECT_TRUE(tok.is_eog(106));
    EXPECT_TRUE(tok.is_eog(1));  // <eos>
    std::vector<int32_t> with_bos = tok.encode("Hello world", /*add_special=*/true);
    EXPECT_EQ(with_bos, (std::vector<int32_t>{2, 9259, 1902}));
}

TEST(TokenizerGoldenHf, special_token_text_is_plain_text_when_parse_special_is_off) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    std::vector<int32_t> parsed = tok.encode("<|im_start|>user", false, /*parse_special=*/true);
    EXPECT_EQ(parsed.front(), 151644);
    std::vector<int32_t> plain = tok.encode("<|im_start|>user", false, /*parse_special=*/false);
    EXPECT_GT(plain.size(), 2u);
    for (int32_t id : plain) EXPECT_LT(id, 151643);
    EXPECT_EQ(tok.decode(plain), "<|im_start|>user");
    // User-defined tokens are split out regardless (llama.cpp's rule).
    EXPECT_EQ(tok.encode("<think>", false, /*parse_special=*/false), (std::vector<int32_t>{151667}));
}

TEST(TokenizerGoldenHf, decode_skip_special_drops_control_tokens_only) {
    const Tokenizer& tok = hf_tokenizer("qwen3");
    std::vector<int32_t> ids = tok.encode("<|im_start|>user\n<think>hi<|im_end|>", false);
    EXPECT_EQ(tok.decode(ids, /*skip_special=*/true), "user\n<think>hi");
    EXPECT_EQ(tok.token_to_piece(151645, /*special=*/false), "");
    EXPECT_EQ(tok.token_to_piece(151645), "<|im_end|>");
    EXPECT_EQ(tok.token_to_piece(-1), "");
    EXPECT_EQ(tok.token_to_piece(tok.n_vocab()), "");
}

}  // namespace
}  // namespace tdm::test
