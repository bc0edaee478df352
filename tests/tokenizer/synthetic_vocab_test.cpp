// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/synthetic_vocab_test.cpp: small hand-made vocabularies whose expected
// tokenization can be worked out on paper: the SentencePiece score algorithm (GGUF
// "llama"), the space prefix, ignore_merges, the Prepend normalizer and the BPE queue
// rules. To add a case, extend a vocabulary below and derive the ids by hand in a comment.
#include "formats/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"
#include "writers/gguf_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace tdm {
namespace {

using Ids = std::vector<int32_t>;

// ---- a SentencePiece vocabulary written as GGUF "llama" --------------------------------
// ids: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then the pieces below.
constexpr int32_t kByte0 = 3;
enum : int32_t { kSpace = 259, kH, kE, kL, kO, kW, kR, kD, kLL, kHE, kHELL, kHELLO, kSHELLO, kSW, kOR, kSWOR, kLD,
                 kSWORLD, kTag };

std::vector<std::pair<std::string, float>> spm_pieces() {
    return {{"\xE2\x96\x81", 0}, {"h", 0}, {"e", 0}, {"l", 0}, {"o", 0}, {"w", 0}, {"r", 0}, {"d", 0},
            {"ll", -1}, {"he", -2}, {"hell", -3}, {"hello", -4}, {"\xE2\x96\x81hello", -5},
            {"\xE2\x96\x81w", -6}, {"or", -7}, {"\xE2\x96\x81wor", -8}, {"ld", -9},
            {"\xE2\x96\x81world", -10}, {"<tag>", 0}};
}

// Extra keys are added by `extra` (e.g. add_space_prefix).
Tokenizer spm_tokenizer(void (*extra)(GgufWriter&) = nullptr) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    std::vector<float> scores = {0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        tokens.push_back(name);
        types.push_back(6);
        scores.push_back(0);
    }
    for (const auto& [text, score] : spm_pieces()) {
        tokens.push_back(text);
        types.push_back(text == "<tag>" ? 4 : 1);
        scores.push_back(score);
    }
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_array("tokenizer.ggml.tokens", tokens);
    w.add_array("tokenizer.ggml.token_type", types);
    w.add_array("tokenizer.ggml.scores", scores);
    if (extra) extra(w);
    auto file = GgufFile::from_memory("tiny-spm.gguf", w.to_bytes().value());
    EXPECT_TRUE(file.ok()) << (file.ok() ? "" : file.error().message());
    auto tok = load_tokenizer_gguf(**file);
    EXPECT_TRUE(tok.ok()) << (tok.ok() ? "" : tok.error().message());
    return std::move(tok).value();
}

int32_t byte_id(uint8_t b) { return kByte0 + b; }

TEST(TokenizerSynthetic, spm_merges_by_score_with_llama_cpp_defaults) {
    Tokenizer tok = spm_tokenizer();
    // Defaults for model "llama": bos 1, eos 2, unk 0, add_bos, add_space_prefix.
    EXPECT_EQ(tok.bos(), 1);
    EXPECT_EQ(tok.eos(), 2);
    EXPECT_EQ(tok.unk(), 0);
    EXPECT_TRUE(tok.vocab().add_space_prefix);
    // " hello world" -> ▁ h e l l o ▁ w o r l d; by score: ll, he, hell, hello, ▁hello,
    // ▁w, or, ▁wor, ld, ▁world.
    EXPECT_EQ(tok.encode("hello world", /*add_special=*/true), (Ids{1, kSHELLO, kSWORLD}));
    EXPECT_EQ(tok.encode("hello world", false), (Ids{kSHELLO, kSWORLD}));
}

TEST(TokenizerSynthetic, spm_decode_strips_the_prefix_space) {
    Tokenizer tok = spm_tokenizer();
    EXPECT_EQ(tok.decode(Ids{kSHELLO, kSWORLD}), "hello world");
    EXPECT_EQ(tok.decode(Ids{1, kSHELLO, kSWORLD}, /*skip_special=*/true), "hello world");
    EXPECT_EQ(tok.decode(Ids{1, kSHELLO}), "<s> hello");  // as HF: the text starts with "<s>"
    EXPECT_EQ(tok.token_to_piece(kSHELLO), " hello");
}

TEST(TokenizerSynthetic, spm_equal_scores_merge_leftmost_first) {
    Tokenizer tok = spm_tokenizer();
    // ▁ l l l l: the three "ll" pairs tie; leftmost first gives ll, ll.
    EXPECT_EQ(tok.encode("llll", false), (Ids{kSpace, kLL, kLL}));
    EXPECT_EQ(tok.encode("lll", false), (Ids{kSpace, kLL, kL}));
}

TEST(TokenizerSynthetic, spm_falls_back_to_byte_tokens) {
    Tokenizer tok = spm_tokenizer();
    // é is no piece: its UTF-8 bytes C3 A9 become <0xC3> <0xA9>.
    EXPECT_EQ(tok.encode("h\xC3\xA9", false), (Ids{kSpace, kH, byte_id(0xC3), byte_id(0xA9)}));
    EXPECT_EQ(tok.decode(Ids{kSpace, kH, byte_id(0xC3), byte_id(0xA9)}), "h\xC3\xA9");
    // An invalid byte run decodes to one U+FFFD per byte (HF ByteFallback).
    EXPECT_EQ(tok.decode(Ids{kH, byte_id(0xC3), kE}), "h\xEF\xBF\xBD" "e");
}

TEST(TokenizerSynthetic, spm_special_and_user_defined_tokens_split_the_text) {
    Tokenizer tok = spm_tokenizer();
    // After a token fragment the next text gets the space prefix again (llama.cpp).
    EXPECT_EQ(tok.encode("<s>hello", false), (Ids{1, kSHELLO}));
    EXPECT_EQ(tok.encode("hello<tag>hello", false, /*parse_special=*/false), (Ids{kSHELLO, kTag, kSHELLO}));
    // Without parse_special "<s>" is text: < s > have no pieces, so bytes.
    EXPECT_EQ(tok.encode("<s>hello", false, /*parse_special=*/false),
              (Ids{kSpace, byte_id('<'), byte_id('s'), byte_id('>'), kHELLO}));
}

TEST(TokenizerSynthetic, spm_flags_from_gguf_keys_are_obeyed) {
    Tokenizer tok = spm_tokenizer([](GgufWriter& w) {
        w.add_bool("tokenizer.ggml.add_space_prefix", false);
        w.add_bool("tokenizer.ggml.add_eos_token", true);
        w.add_bool("tokenizer.ggml.add_bos_token", false);
    });
    EXPECT_EQ(tok.encode("hello", true), (Ids{kHELLO, 2}));
    EXPECT_EQ(tok.decode(Ids{kSHELLO}), " hello");  // no prefix to strip
}

TEST(TokenizerSynthetic, spm_vocabulary_round_trips_through_the_gguf_writer) {
    Tokenizer tok = spm_tokenizer();
    GgufWriter w;
    ASSERT_TRUE(write_vocab_gguf(tok.vocab(), w).ok());
    auto file = GgufFile::from_memory("again.gguf", w.to_bytes().value());
    ASSERT_TRUE(file.ok());
    auto again = load_tokenizer_gguf(**file);
    ASSERT_TRUE(again.ok()) << again.error().message();
    EXPECT_EQ(again->vocab().tokens, tok.vocab().tokens);
    EXPECT_EQ(again->vocab().scores, tok.vocab().scores);
    EXPECT_EQ(again->vocab().types, tok.vocab().types);
    EXPECT_EQ(again->encode("hello world", true), tok.encode("hello world", true));
}

// ---- a GGUF "gemma4" vocabulary --------------------------------------------------------
// ids: 0 <pad>, 1 <eos>, 2 <bos>, 3..258 bytes, 259 "\n", 260 "\n\n", 261 "a", 262 "aa", 263 "▁",
// 264 "▁a"; merges "a a", "▁ a".
TEST(TokenizerSynthetic, gemma4_emits_newline_runs_that_are_tokens_whole_and_forces_bos) {
    std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>"};
    std::vector<int32_t> types = {3, 3, 3};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        tokens.push_back(name);
        types.push_back(6);
    }
    for (const char* t : {"\n", "\n\n", "a", "aa", "\xE2\x96\x81", "\xE2\x96\x81" "a"}) {
        tokens.push_back(t);
        types.push_back(1);
    }
    GgufWriter w;
    w.add_string("tokenizer.ggml.model", "gemma4");
    w.add_array("tokenizer.ggml.tokens", tokens);
    w.add_array("tokenizer.ggml.token_type", types);
    w.add_array("tokenizer.ggml.merges", std::vector<std::string>{"a a", "\xE2\x96\x81 a"});
    w.add_u32("tokenizer.ggml.bos_token_id", 2);
    w.add_bool("tokenizer.ggml.add_bos_token", false);  // llama.cpp forces it on for gemma4
    auto file = GgufFile::from_memory("tiny-gemma4.gguf", w.to_bytes().value());
    ASSERT_TRUE(file.ok());
    auto tok = load_tokenizer_gguf(**file);
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->vocab().pre, PreTokenizer::gemma4);
    EXPECT_TRUE(tok->vocab().add_bos);
    // "\n\n" is a token: emitted whole. "\n\n\n" is not, and no merge joins newlines.
    EXPECT_EQ(tok->encode("aa\n\na a", true), (Ids{2, 262, 260, 261, 264}));
    EXPECT_EQ(tok->encode("a\n\n\na", false), (Ids{261, 259, 259, 259, 261}));
    EXPECT_EQ(tok->encode("b", false), (Ids{kByte0 + 'b'}));
    EXPECT_EQ(tok->decode(Ids{2, 262, 260, 261, 264}, true), "aa\n\na a");
}

// ---- tokenizer.json variants -----------------------------------------------------------

nlohmann::json byte_fallback_json(bool prepend) {
    using nlohmann::json;
    json vocab = json::object();
    vocab["<unk>"] = 0;
    vocab["<s>"] = 1;
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = kByte0 + b;
    }
    int32_t id = kSpace;
    for (const auto& piece : spm_pieces()) vocab[piece.first] = id++;
    json merges = json::array({json::array({"l", "l"}), json::array({"h", "e"}), json::array({"he", "ll"}),
                               json::array({"hell", "o"}), json::array({"\xE2\x96\x81", "hello"}),
                               json::array({"\xE2\x96\x81", "w"}), json::array({"o", "r"}),
                               json::array({"\xE2\x96\x81w", "or"}), json::array({"l", "d"}),
                               json::array({"\xE2\x96\x81wor", "ld"})});
    json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}};
    json decoders = json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                 {{"type", "ByteFallback"}}, {{"type", "Fuse"}}});
    json j;
    j["model"] = {{"type", "BPE"}, {"byte_fallback", true}, {"unk_token", "<unk>"}, {"fuse_unk", true},
                  {"vocab", vocab}, {"merges", merges}};
    if (prepend) {
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}}, replace})}};
        decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    } else {
        j["normalizer"] = replace;
    }
    j["pre_tokenizer"] = nullptr;
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    j["added_tokens"] = json::array({{{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}},
                                     {{"id", 0}, {"content", "<unk>"}, {"special", true}}});
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
    return j;
}

TEST(TokenizerSynthetic, hf_prepend_normalizer_adds_and_strips_the_dummy_prefix) {
    auto tok = load_tokenizer_hf(byte_fallback_json(true).dump(), "", "llama2-like.json");
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_TRUE(tok->vocab().add_space_prefix);
    EXPECT_TRUE(tok->vocab().add_bos);  // from TemplateProcessing
    EXPECT_EQ(tok->encode("hello world", true), (Ids{1, kSHELLO, kSWORLD}));
    EXPECT_EQ(tok->decode(Ids{1, kSHELLO, kSWORLD}, true), "hello world");
    EXPECT_EQ(tok->token_type(byte_id(0x41)), TokenType::byte);
}

TEST(TokenizerSynthetic, hf_byte_fallback_bpe_merges_by_rank_without_prefix) {
    auto tok = load_tokenizer_hf(byte_fallback_json(false).dump(), "", "gemma-like.json");
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->encode("hello world", false), (Ids{kHELLO, kSWORLD}));
    EXPECT_EQ(tok->encode("x", false), (Ids{byte_id('x')}));
    EXPECT_EQ(tok->decode(Ids{kHELLO, kSWORLD}), "hello world");
}

// A byte-level vocabulary: the 256 mapped bytes (id = byte), "ab" 256, "abc" 257 with no
// merge producing "abc".
std::string byte_level_json(bool ignore_merges) {
    using nlohmann::json;
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) {
        std::string ch;
        unicode::append(ch, unicode::byte_to_cp(static_cast<uint8_t>(b)));
        vocab[ch] = b;
    }
    vocab["ab"] = 256;
    vocab["abc"] = 257;
    json j;
    j["model"] = {{"type", "BPE"}, {"ignore_merges", ignore_merges}, {"vocab", vocab},
                  {"merges", json::array({"a b"})}};  // legacy string form
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"},
                       {"pattern", {{"Regex", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                                              "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                                              "\\s+(?!\\S)|\\s+"}}},
                       {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
    j["decoder"] = {{"type", "ByteLevel"}};
    return j.dump();
}

TEST(TokenizerSynthetic, ignore_merges_emits_a_whole_piece_that_is_a_token) {
    auto with = load_tokenizer_hf(byte_level_json(true));
    auto without = load_tokenizer_hf(byte_level_json(false));
    ASSERT_TRUE(with.ok()) << with.error().message();
    ASSERT_TRUE(without.ok());
    EXPECT_EQ(with->vocab().pre, PreTokenizer::llama3);
    EXPECT_EQ(with->encode("abc", false), (Ids{257}));
    EXPECT_EQ(without->encode("abc", false), (Ids{256, 'c'}));
    EXPECT_EQ(without->encode("abab 1234", false), (Ids{256, 256, ' ', '1', '2', '3', '4'}));
    EXPECT_EQ(without->decode(Ids{256, 256, ' '}), "abab ");
}

// ---- the BPE queue itself ----------------------------------------------------------------

TEST(TokenizerSynthetic, bpe_merges_lowest_rank_first_and_ties_leftmost) {
    MergeTable m;
    // ids: a 0, b 1, c 2, aa 3, ab 4, bc 5, abc 6
    ASSERT_TRUE(m.insert(0, 0, {0, 3}));  // a a -> aa
    ASSERT_TRUE(m.insert(1, 2, {1, 5}));  // b c -> bc
    ASSERT_TRUE(m.insert(0, 1, {2, 4}));  // a b -> ab
    ASSERT_TRUE(m.insert(4, 2, {3, 6}));  // ab c -> abc
    EXPECT_FALSE(m.insert(0, 0, {9, 9}));  // duplicate pair: the first rank stays
    EXPECT_EQ(m.find(0, 0)->rank, 0);
    EXPECT_EQ(m.find(2, 2), nullptr);
    BpeScratch s;
    Ids aaa{0, 0, 0};
    bpe_merge(m, aaa, s);
    EXPECT_EQ(aaa, (Ids{3, 0}));  // leftmost a a first
    Ids abc{0, 1, 2};
    bpe_merge(m, abc, s);
    EXPECT_EQ(abc, (Ids{0, 5}));  // b c (rank 1) beats a b (rank 2); then no a+bc merge
    Ids abab{0, 1, 0, 1};
    bpe_merge(m, abab, s);
    EXPECT_EQ(abab, (Ids{4, 4}));
    Ids one{2};
    bpe_merge(m, one, s);
    EXPECT_EQ(one, (Ids{2}));
}

TEST(TokenizerSynthetic, merge_table_grows_past_its_initial_size) {
    MergeTable m;
    for (int32_t i = 0; i < 10000; ++i) ASSERT_TRUE(m.insert(i, i + 1, {i, i + 2}));
    EXPECT_EQ(m.size(), 10000u);
    for (int32_t i = 0; i < 10000; ++i) ASSERT_EQ(m.find(i, i + 1)->result, i + 2);
    EXPECT_EQ(m.find(1, 0), nullptr);
}

}  // namespace
}  // namespace tdm
