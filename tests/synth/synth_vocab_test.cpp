// SPDX-License-Identifier: Apache-2.0
// tests/synth/synth_vocab_test.cpp: the synthetic Qwen-style tokenizer: its id layout, that
// training is deterministic, and that the GGUF view and the tokenizer.json/tokenizer_config.json
// files load (through the project's two loaders) into tokenizers with identical encodings.
// To add a text to the round trips: append it to kTexts (keep it NFC; HF normalises, GGUF not).
#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"
#include "synth/synth_vocab.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"
#include "writers/gguf_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <nlohmann/json.hpp>

using namespace tdm;
using namespace tdm::synth;

namespace {

const std::vector<std::string> kTexts = {
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! It's 2024-01-01 and we're testing: 12345 + 678 = 13023.",
    "def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
    "    indented\n\n\ttabs\r\nand   runs of   spaces  ",
    "UPPERCASE lowercase CamelCase snake_case kebab-case",
    "Un café crème à Paris, Grüße aus München; Привет, мир! 東京は日本の首都です。 😀🚀",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|endoftext|>",
    "words the corpus never saw: xylophone zygote quixotic",
    "",
};

// The GGUF path exactly as a file carries it: write the keys, parse the bytes, load.
Result<Tokenizer> gguf_tokenizer(const Vocab& v) {
    GgufWriter w;
    w.add_string("general.architecture", "qwen3");
    TDM_TRY(write_vocab_gguf(v, w));
    std::string bytes = TDM_TRY(w.to_bytes());
    auto f = TDM_TRY(GgufFile::from_memory("synth-vocab.gguf", std::move(bytes)));
    return load_tokenizer_gguf(*f);
}

void expect_same_encodings(const Tokenizer& a, const Tokenizer& b) {
    for (const std::string& text : kTexts) {
        const std::vector<int32_t> ia = a.encode(text, true), ib = b.encode(text, true);
        EXPECT_EQ(ia, ib) << text;
        EXPECT_EQ(a.decode(ia), text);
        EXPECT_EQ(b.decode(ib), text);
    }
}

}  // namespace

TEST(SynthVocab, layout_puts_bytes_then_merges_then_specials_then_padding) {
    auto tiny = synth_vocab(512);
    ASSERT_TRUE(tiny.ok()) << tiny.error().message();
    const Vocab& v = *tiny;
    ASSERT_EQ(v.n_tokens(), 512);
    EXPECT_EQ(v.tokens[0], "!");
    EXPECT_EQ(v.tokens[220], "\xC4\xA0");  // "Ġ", the space byte, at Qwen's id
    EXPECT_EQ(v.tokens[509], "<|endoftext|>");
    EXPECT_EQ(v.tokens[510], "<|im_start|>");
    EXPECT_EQ(v.tokens[511], "<|im_end|>");
    for (int id = 0; id < 509; ++id) EXPECT_EQ(v.types[size_t(id)], TokenType::normal) << id;
    for (int id = 509; id < 512; ++id) EXPECT_EQ(v.types[size_t(id)], TokenType::control) << id;
    EXPECT_EQ(v.merges.size(), size_t(512 - 3 - 256));  // no duplicate products this early
    EXPECT_EQ(v.special.bos, 509);
    EXPECT_EQ(v.special.eos, 511);
    EXPECT_EQ(v.special.pad, 509);
    EXPECT_FALSE(v.add_bos);
    EXPECT_EQ(v.pre, PreTokenizer::qwen2);

    // 0.6b: more ids than the corpus can fill; the rest are [PAD<id>] UNUSED.
    auto big = synth_vocab(151936);
    ASSERT_TRUE(big.ok());
    const int32_t n_text = synth_max_text_tokens();
    EXPECT_GT(n_text, 4096 - 3);  // enough merges for the "small" preset
    EXPECT_EQ(big->tokens[size_t(n_text)], "<|endoftext|>");
    EXPECT_EQ(big->tokens[size_t(n_text) + 3], "[PAD" + std::to_string(n_text + 3) + "]");
    EXPECT_EQ(big->tokens.back(), "[PAD151935]");
    EXPECT_EQ(big->types.back(), TokenType::unused);
}

TEST(SynthVocab, training_is_deterministic_and_smaller_vocabularies_are_prefixes) {
    auto a = synth_vocab(4096), b = synth_vocab(4096), tiny = synth_vocab(512);
    ASSERT_TRUE(a.ok() && b.ok() && tiny.ok());
    EXPECT_EQ(a->tokens, b->tokens);
    EXPECT_EQ(a->merges, b->merges);
    for (int id = 0; id < 509; ++id) EXPECT_EQ(tiny->tokens[size_t(id)], a->tokens[size_t(id)]);
    ASSERT_LE(tiny->merges.size(), a->merges.size());
    EXPECT_TRUE(std::equal(tiny->merges.begin(), tiny->merges.end(), a->merges.begin()));
}

TEST(SynthVocab, too_small_vocabulary_is_rejected) {
    auto r = synth_vocab(258);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("n_vocab 258 is too small"), std::string::npos) << r.error().message();
}

TEST(SynthVocab, gguf_and_tokenizer_json_encode_every_text_identically) {
    for (int32_t n_vocab : {512, 4096, 151936}) {
        SCOPED_TRACE(n_vocab);
        auto v = synth_vocab(n_vocab);
        ASSERT_TRUE(v.ok());
        auto from_gguf = gguf_tokenizer(*v);
        ASSERT_TRUE(from_gguf.ok()) << from_gguf.error().message();
        auto from_json = load_tokenizer_hf(synth_tokenizer_json(*v), synth_tokenizer_config_json(*v, 2048));
        ASSERT_TRUE(from_json.ok()) << from_json.error().message();
        expect_same_encodings(*from_gguf, *from_json);
        EXPECT_EQ(from_gguf->eos(), from_json->eos());
        EXPECT_EQ(from_gguf->pad(), from_json->pad());
        // tokenizer.json leaves out the [PAD] ids, exactly like Qwen's (vocab_size covers them).
        EXPECT_EQ(from_json->n_vocab(), std::min(n_vocab, synth_max_text_tokens() + 3));
        EXPECT_EQ(from_gguf->n_vocab(), n_vocab);
    }
}

TEST(SynthVocab, learned_merges_compress_english_and_special_tokens_parse_as_one_id) {
    auto v = synth_vocab(4096);
    ASSERT_TRUE(v.ok());
    auto tok = gguf_tokenizer(*v);
    ASSERT_TRUE(tok.ok());
    const std::string text = "The baker opens her small shop every morning.";
    EXPECT_LT(tok->encode(text, false).size(), text.size() / 3);
    const std::vector<int32_t> ids = tok->encode("<|im_start|>user\nhi<|im_end|>", false);
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(ids.front(), 4093 + 1);
    EXPECT_EQ(ids.back(), 4093 + 2);
    EXPECT_TRUE(tok->is_eog(4093 + 2));
}

TEST(SynthVocab, model_files_carry_the_same_tokenizer_and_chat_template) {
    auto shape = qwen3_preset("tiny");
    ASSERT_TRUE(shape.ok());
    const std::string dir = test::make_temp_dir("synth-vocab");
    Qwen3SynthOptions o;
    o.weight_type = DType::F16;
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/m.gguf", *shape, o).ok());
    ASSERT_TRUE(synth_qwen3_hf(dir + "/hf", *shape, o).ok());

    auto f = GgufFile::open(dir + "/m.gguf");
    ASSERT_TRUE(f.ok());
    auto from_gguf = load_tokenizer_gguf(**f);
    ASSERT_TRUE(from_gguf.ok()) << from_gguf.error().message();
    auto from_json = load_tokenizer_hf_file(dir + "/hf");
    ASSERT_TRUE(from_json.ok()) << from_json.error().message();
    expect_same_encodings(*from_gguf, *from_json);

    auto gguf_template = (*f)->get_string("tokenizer.chat_template");
    ASSERT_TRUE(gguf_template.ok());
    const auto config = nlohmann::json::parse(test::read_file(dir + "/hf/tokenizer_config.json"));
    EXPECT_EQ(config["chat_template"], *gguf_template);
    EXPECT_EQ(*gguf_template, synth_chat_template());
    EXPECT_NE(gguf_template->find("<|im_start|>"), std::string::npos);
}
