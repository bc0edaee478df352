// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/synth/gemma4_vocab_test.cpp: the synthetic Gemma 4 tokenizer: the fixed ids
// (<pad> 0, <eos> 1, <bos> 2, <|turn> 105, <turn|> 106, newline runs, bytes), the GGUF and HF
// loaders encode text to the same ids and decode it back, the chat markers are single tokens, and
// the chat template uses them.
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "formats/gguf.h"
#include "gemma4/synth/gemma4_synth.h"
#include "gemma4/synth/gemma4_vocab.h"
#include "support/fixtures.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"

#include <set>

using namespace tdm;
using namespace tdm::synth;
using tdm::test::fails_with;
using Ids = std::vector<int32_t>;

namespace {

struct Tokenizers {
    Tokenizer gguf;
    Tokenizer hf;
};

// Both views of the tiny-e2b tokenizer, loaded from files the synthesizer wrote.
const Tokenizers& tokenizers() {
    static const Tokenizers t = [] {
        const std::string dir = test::make_temp_dir("gemma4-vocab");
        const Gemma4Shape s = *gemma4_preset("tiny-e2b");
        if (!synth_gemma4_gguf(dir + "/t.gguf", s, {}).ok() || !synth_gemma4_hf(dir + "/hf", s, {}).ok())
            throw std::runtime_error("cannot write the tiny-e2b model");
        auto file = GgufFile::open(dir + "/t.gguf");
        if (!file.ok()) throw std::runtime_error(file.error().message());
        auto gguf = load_tokenizer_gguf(**file);
        auto hf = load_tokenizer_hf(test::read_file(dir + "/hf/tokenizer.json"),
                                    test::read_file(dir + "/hf/tokenizer_config.json"), "gemma4 hf");
        if (!gguf.ok()) throw std::runtime_error(gguf.error().message());
        if (!hf.ok()) throw std::runtime_error(hf.error().message());
        return Tokenizers{std::move(*gguf), std::move(*hf)};
    }();
    return t;
}

}  // namespace

TEST(Gemma4Vocab, fixed_ids_follow_the_gemma_layout) {
    auto v = gemma4_vocab(1024);
    ASSERT_TRUE(v.ok()) << v.error().message();
    ASSERT_EQ(v->n_tokens(), 1024);
    EXPECT_EQ(v->model, VocabModel::spm_bpe);
    EXPECT_EQ(v->pre, PreTokenizer::gemma4);
    EXPECT_TRUE(v->add_bos);
    EXPECT_FALSE(v->add_space_prefix);
    const std::pair<int32_t, const char*> named[] = {{0, "<pad>"},   {1, "<eos>"},   {2, "<bos>"},      {3, "<unk>"},
                                                     {105, "<|turn>"}, {106, "<turn|>"}, {107, "\n"},   {108, "\n\n"},
                                                     {138, "<0x00>"}, {138 + 0x41, "<0x41>"}, {393, "<0xFF>"}};
    for (const auto& [id, text] : named) EXPECT_EQ(v->tokens[size_t(id)], text) << id;
    EXPECT_EQ(kGemma4TurnStart, 105);
    EXPECT_EQ(kGemma4TurnEnd, 106);
    EXPECT_EQ(v->types[105], TokenType::control);
    EXPECT_EQ(v->types[106], TokenType::control);
    EXPECT_EQ(v->types[107], TokenType::normal);
    EXPECT_EQ(v->types[200], TokenType::byte);
    EXPECT_EQ(v->special.bos, 2);
    EXPECT_EQ(v->special.eos, 1);
    EXPECT_EQ(v->special.pad, 0);
    EXPECT_EQ(v->special.unk, 3);
    const Gemma4VocabLayout l = *gemma4_vocab_layout(1024);
    EXPECT_EQ(l.text_end, 1024);  // the corpus fills a 1024-id vocabulary without padding
    EXPECT_GT(l.n_merges, 300);
    EXPECT_EQ(int32_t(v->merges.size()), l.n_merges);
    EXPECT_EQ(v->tokens[kGemma4FirstText], "!");  // characters by code point; ' ' is U+2581

    EXPECT_TRUE(fails_with(gemma4_vocab(400), {"n_vocab 400 is too small", "394 fixed ids"}));
}

TEST(Gemma4Vocab, token_texts_are_unique_up_to_the_released_vocabulary_size) {
    // tokenizer.json's model.vocab is keyed by text: a merge product equal to a fixed token
    // ("<unk>" built from "<", "unk", ">") would silently lose an id there.
    for (int32_t n : {1024, 262144}) {
        auto v = gemma4_vocab(n);
        ASSERT_TRUE(v.ok()) << v.error().message();
        std::set<std::string> texts(v->tokens.begin(), v->tokens.end());
        EXPECT_EQ(texts.size(), v->tokens.size()) << n;
    }
    const Gemma4VocabLayout big = *gemma4_vocab_layout(262144);
    EXPECT_LT(big.text_end, 262144);  // the corpus runs out: the rest is [PAD] padding
    EXPECT_EQ((*gemma4_vocab(262144)).tokens[262143], "[PAD262143]");
}

TEST(Gemma4Vocab, gguf_and_hf_encode_the_same_ids_and_decode_back) {
    const Tokenizers& t = tokenizers();
    const std::string texts[] = {
        "The quick brown fox jumps over the lazy dog.",
        "Hello world",
        "  two leading spaces and\ttabs\r\n",
        "line one\nline two\n\n\nafter three newlines",
        "Zürich, naïve café — 東京 🙂",
        "x = f(a[i], b->c); // code",
        "",
    };
    for (const std::string& text : texts) {
        SCOPED_TRACE(text);
        const Ids a = t.gguf.encode(text, /*add_special=*/true);
        const Ids b = t.hf.encode(text, /*add_special=*/true);
        EXPECT_EQ(a, b);
        ASSERT_FALSE(a.empty());
        EXPECT_EQ(a[0], kGemma4Bos);
        EXPECT_EQ(t.gguf.decode(a, /*skip_special=*/true), text);
        EXPECT_EQ(t.hf.decode(b, /*skip_special=*/true), text);
    }
    // Merges make common words few tokens; a rare character falls back to its UTF-8 bytes.
    EXPECT_LT(t.gguf.encode("the quick brown fox", false).size(), 10u);
    EXPECT_EQ(t.gguf.encode("\x01", false), (Ids{kGemma4FirstByte + 1}));
    EXPECT_EQ(t.gguf.encode("\n\n", false), (Ids{kGemma4FirstNewline + 1}));
}

TEST(Gemma4Vocab, chat_markers_are_single_tokens) {
    const Tokenizers& t = tokenizers();
    const std::string prompt = "<|turn>user\nHi there<turn|>\n<|turn>model\n";
    for (const Tokenizer* tok : {&t.gguf, &t.hf}) {
        const Ids ids = tok->encode(prompt, /*add_special=*/true);
        ASSERT_GE(ids.size(), 6u);
        EXPECT_EQ(ids[0], kGemma4Bos);
        EXPECT_EQ(ids[1], kGemma4TurnStart);
        EXPECT_EQ(std::count(ids.begin(), ids.end(), kGemma4TurnStart), 2);
        EXPECT_EQ(std::count(ids.begin(), ids.end(), kGemma4TurnEnd), 1);
        EXPECT_EQ(tok->encode("<turn|>", false), (Ids{kGemma4TurnEnd}));
        EXPECT_EQ(tok->decode(ids, /*skip_special=*/false), "<bos>" + prompt);
    }
}

TEST(Gemma4Vocab, chat_template_uses_the_turn_markers) {
    const std::string_view tpl = gemma4_chat_template();
    EXPECT_EQ(tpl.substr(0, 17), "{{- bos_token -}}");  // BOS first
    EXPECT_NE(tpl.find("'<|turn>' + role + '\\n'"), std::string_view::npos);
    EXPECT_NE(tpl.find("'<turn|>\\n'"), std::string_view::npos);
    EXPECT_NE(tpl.find("add_generation_prompt"), std::string_view::npos);
    EXPECT_NE(tpl.find("'<|turn>model\\n'"), std::string_view::npos);
    EXPECT_NE(tpl.find("set role = 'model'"), std::string_view::npos);
}
