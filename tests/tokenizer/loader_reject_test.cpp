// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/loader_reject_test.cpp: every loader refuses what it does not implement
// or cannot trust, with a message naming what it found. To add a case, start from the
// minimal valid input below, break one thing, and check the message mentions it.
#include "tokenizer_fixtures.h"

#include "formats/gguf.h"
#include "support/fixtures.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"
#include "writers/gguf_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <fstream>

namespace tdm::test {
namespace {

using nlohmann::json;

// A minimal valid byte-level tokenizer.json: 256 byte tokens, "ab", one merge.
json minimal_json() {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) {
        std::string ch;
        unicode::append(ch, unicode::byte_to_cp(static_cast<uint8_t>(b)));
        vocab[ch] = b;
    }
    vocab["ab"] = 256;
    json j;
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({json::array({"a", "b"})})}};
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    j["decoder"] = {{"type", "ByteLevel"}};
    j["added_tokens"] = json::array({{{"id", 257}, {"content", "<|end|>"}, {"special", true}}});
    return j;
}

// Expects loading (vocabulary, then tokenizer) to fail with a message containing `needle`.
void expect_json_rejected(const json& j, const std::string& needle, const std::string& config = "") {
    auto tok = load_tokenizer_hf(j.dump(), config, "bad.json");
    ASSERT_FALSE(tok.ok()) << "accepted; expected an error about " << needle;
    EXPECT_NE(tok.error().message().find(needle), std::string::npos) << tok.error().message();
    EXPECT_NE(tok.error().message().find("bad.json"), std::string::npos) << tok.error().message();
}

TEST(TokenizerReject, the_minimal_tokenizer_json_is_accepted) {
    auto tok = load_tokenizer_hf(minimal_json().dump());
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->encode("ab<|end|>", false), (std::vector<int32_t>{256, 257}));
    EXPECT_EQ(tok->vocab().pre, PreTokenizer::gpt2);
}

TEST(TokenizerReject, malformed_tokenizer_json_is_rejected) {
    auto tok = load_tokenizer_hf("{\"model\": {\"type\": \"BPE\", ", "", "bad.json");
    ASSERT_FALSE(tok.ok());
    EXPECT_NE(tok.error().message().find("not valid JSON"), std::string::npos) << tok.error().message();
    expect_json_rejected(json::array(), "JSON object");
    json no_model = minimal_json();
    no_model.erase("model");
    expect_json_rejected(no_model, "'model'");
    json bad_vocab = minimal_json();
    bad_vocab["model"]["vocab"]["x"] = "seven";
    expect_json_rejected(bad_vocab, "not an integer");
    json dup = minimal_json();
    dup["model"]["vocab"]["zz"] = 256;
    expect_json_rejected(dup, "id 256");
    json bad_merge = minimal_json();
    bad_merge["model"]["merges"] = json::array({"a b c"});
    expect_json_rejected(bad_merge, "'a b c'");
}

TEST(TokenizerReject, unknown_model_types_and_pipelines_are_named) {
    json unigram = minimal_json();
    unigram["model"]["type"] = "Unigram";
    expect_json_rejected(unigram, "'Unigram'");
    json wordpiece = minimal_json();
    wordpiece["model"]["type"] = "WordPiece";
    expect_json_rejected(wordpiece, "'WordPiece'");
    json regex = minimal_json();
    regex["pre_tokenizer"] = {{"type", "Sequence"},
                              {"pretokenizers", json::array({{{"type", "Split"},
                                                              {"pattern", {{"Regex", "\\w+|\\s+"}}},
                                                              {"behavior", "Isolated"},
                                                              {"invert", false}},
                                                             {{"type", "ByteLevel"}, {"use_regex", false}}})}};
    expect_json_rejected(regex, "\\w+|\\s+");
    json norm = minimal_json();
    norm["normalizer"] = {{"type", "NFKC"}};
    expect_json_rejected(norm, "'NFKC'");
    json neither = minimal_json();
    neither["decoder"] = {{"type", "WordPiece"}};
    expect_json_rejected(neither, "'WordPiece'");
    json prefix = minimal_json();
    prefix["pre_tokenizer"]["add_prefix_space"] = true;
    expect_json_rejected(prefix, "add_prefix_space");
    json post = minimal_json();
    post["post_processor"] = {{"type", "BertProcessing"}};
    expect_json_rejected(post, "'BertProcessing'");
    json dropout = minimal_json();
    dropout["model"]["dropout"] = 0.1;
    expect_json_rejected(dropout, "dropout");
}

TEST(TokenizerReject, merges_referring_to_unknown_tokens_are_rejected) {
    json j = minimal_json();
    j["model"]["merges"].push_back(json::array({"a", "zz"}));
    expect_json_rejected(j, "unknown token 'zz'");
    json product = minimal_json();
    product["model"]["merges"].push_back(json::array({"b", "c"}));
    expect_json_rejected(product, "'bc', which is not a token");
}

TEST(TokenizerReject, added_token_problems_are_rejected) {
    json lstrip = minimal_json();
    lstrip["added_tokens"][0]["lstrip"] = true;
    expect_json_rejected(lstrip, "lstrip");
    json clash = minimal_json();
    clash["added_tokens"][0]["id"] = 256;
    expect_json_rejected(clash, "gives to 'ab'");
}

// Found by tests/fuzz/tokenizer_json.cpp: a 4 KB file naming id 16777215 made the loader build
// 16.7 million [PAD] tokens (600 MB, seconds; a timeout under ASan). Ids may leave gaps, but at
// most 65536 past the number of tokens the file defines.
TEST(TokenizerReject, ids_far_past_the_tokens_the_file_defines_are_rejected) {
    json sparse = minimal_json();  // with "far": 258 vocab entries, so ids up to 258 + 65536
    sparse["model"]["vocab"]["far"] = 258 + 65536 + 1;
    expect_json_rejected(sparse, "model.vocab['far'] = 65795 is out of range (at most 65794");
    json gap_ok = minimal_json();
    gap_ok["model"]["vocab"]["far"] = 258 + 65536;
    auto tok = load_tokenizer_hf(gap_ok.dump());
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->n_vocab(), 258 + 65536 + 1);
    EXPECT_EQ(tok->token_text(1000), "[PAD1000]");
    json far_added = minimal_json();
    far_added["added_tokens"][0]["id"] = 16777215;
    expect_json_rejected(far_added, "added token '<|end|>' has id 16777215 out of range");
}

TEST(TokenizerReject, tokenizer_config_problems_are_rejected) {
    expect_json_rejected(minimal_json(), "eos_token", R"({"eos_token": "<|nope|>"})");
    expect_json_rejected(minimal_json(), "split_special_tokens", R"({"split_special_tokens": true})");
    expect_json_rejected(minimal_json(), "add_bos", R"({"add_bos_token": true})");  // no bos token
    auto ok = load_tokenizer_hf(minimal_json().dump(), R"({"eos_token": {"content": "<|end|>"}})");
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok->eos(), 257);
}

TEST(TokenizerReject, a_byte_level_vocabulary_needs_all_256_byte_tokens) {
    json j = minimal_json();
    j["model"]["vocab"].erase("\xC4\xA0");  // Ġ, the space byte
    j["model"]["vocab"]["\xC4\xA0x"] = 32;
    expect_json_rejected(j, "byte 0x20");
}

TEST(TokenizerReject, files_are_found_beside_each_other_or_reported_missing) {
    auto missing = load_tokenizer_hf_file("/nonexistent/dir/tokenizer.json");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("cannot open"), std::string::npos) << missing.error().message();

    std::string dir = make_temp_dir("tok");
    std::ofstream(dir + "/tokenizer.json") << minimal_json().dump();
    std::ofstream(dir + "/tokenizer_config.json") << R"({"eos_token": "<|end|>", "add_eos_token": true})";
    for (const std::string& path : {dir, dir + "/tokenizer.json"}) {
        auto tok = load_tokenizer_hf_file(path);
        ASSERT_TRUE(tok.ok()) << tok.error().message();
        EXPECT_EQ(tok->eos(), 257);
        EXPECT_EQ(tok->encode("ab", true), (std::vector<int32_t>{256, 257}));
    }
}

// ---- GGUF ----------------------------------------------------------------------------

// A minimal valid gpt2 vocabulary in GGUF; `edit` changes it before writing.
Result<Tokenizer> load_gguf(void (*edit)(GgufWriter&, std::vector<std::string>&, std::vector<std::string>&),
                            bool with_tokens = true) {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) {
        std::string ch;
        unicode::append(ch, unicode::byte_to_cp(static_cast<uint8_t>(b)));
        tokens.push_back(ch);
    }
    tokens.push_back("ab");
    std::vector<std::string> merges = {"a b"};
    GgufWriter w;
    w.add_string("general.architecture", "qwen2");
    if (edit) edit(w, tokens, merges);
    if (with_tokens) w.add_array("tokenizer.ggml.tokens", tokens);
    if (!merges.empty()) w.add_array("tokenizer.ggml.merges", merges);
    auto bytes = w.to_bytes();
    if (!bytes.ok()) return bytes.error();
    auto file = GgufFile::from_memory("bad.gguf", std::move(bytes).value());
    if (!file.ok()) return file.error();
    return load_tokenizer_gguf(**file);
}

void expect_gguf_rejected(const Result<Tokenizer>& r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << "accepted; expected an error about " << needle;
    EXPECT_NE(r.error().message().find(needle), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("bad.gguf"), std::string::npos) << r.error().message();
}

void gpt2_qwen2(GgufWriter& w, std::vector<std::string>&, std::vector<std::string>&) {
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "qwen2");
}

TEST(TokenizerReject, the_minimal_gguf_vocabulary_is_accepted) {
    auto tok = load_gguf(gpt2_qwen2);
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->encode("ab ab", false), (std::vector<int32_t>{256, ' ', 256}));  // ab | Ġ ab
    EXPECT_EQ(tok->bos(), 11);  // llama.cpp's gpt2 default
}

// llama.cpp's CHATGLM4 pre-tokenizer (GGUF pre "glm4" or "chatglm-bpe", as its converter writes
// GLM-4 and GLM-OCR): llama3's split (digits in threes) with merges applied, unlike llama-bpe, and
// no default BOS. Written back to GGUF as "glm4".
TEST(TokenizerReject, glm4_pre_tokenizer_splits_like_llama3_but_applies_merges_and_has_no_bos) {
    using Edit = void (*)(GgufWriter&, std::vector<std::string>&, std::vector<std::string>&);
    const std::pair<const char*, Edit> cases[] = {
        {"glm4",
         [](GgufWriter& w, auto&, auto&) {
             w.add_string("tokenizer.ggml.model", "gpt2");
             w.add_string("tokenizer.ggml.pre", "glm4");
         }},
        {"chatglm-bpe",
         [](GgufWriter& w, auto&, auto&) {
             w.add_string("tokenizer.ggml.model", "gpt2");
             w.add_string("tokenizer.ggml.pre", "chatglm-bpe");
         }},
    };
    for (const auto& [name, edit] : cases) {
        auto tok = load_gguf(edit);
        ASSERT_TRUE(tok.ok()) << tok.error().message();
        EXPECT_EQ(tok->vocab().pre, PreTokenizer::llama3) << name;
        EXPECT_FALSE(tok->vocab().ignore_merges) << name;
        EXPECT_EQ(tok->bos(), -1) << name;
        EXPECT_FALSE(tok->vocab().add_bos) << name;
        EXPECT_EQ(tok->encode("ab ab", false), (std::vector<int32_t>{256, ' ', 256})) << name;
        GgufWriter w;
        ASSERT_TRUE(write_vocab_gguf(tok->vocab(), w).ok()) << name;
        auto bytes = w.to_bytes();
        ASSERT_TRUE(bytes.ok());
        auto file = GgufFile::from_memory("glm.gguf", std::move(bytes).value());
        ASSERT_TRUE(file.ok());
        EXPECT_EQ(*(*file)->get_string("tokenizer.ggml.pre"), "glm4") << name;
    }
    auto llama = load_gguf([](GgufWriter& w, auto&, auto&) {
        w.add_string("tokenizer.ggml.model", "gpt2");
        w.add_string("tokenizer.ggml.pre", "llama-bpe");
    });
    ASSERT_TRUE(llama.ok());
    EXPECT_TRUE(llama->vocab().ignore_merges);
    EXPECT_EQ(llama->bos(), 11);
}

TEST(TokenizerReject, gguf_without_tokens_or_model_is_rejected) {
    expect_gguf_rejected(load_gguf(gpt2_qwen2, /*with_tokens=*/false), "tokenizer.ggml.tokens");
    expect_gguf_rejected(load_gguf(nullptr), "tokenizer.ggml.model");
}

TEST(TokenizerReject, unknown_gguf_models_and_pre_tokenizers_are_named) {
    expect_gguf_rejected(load_gguf([](GgufWriter& w, auto&, auto&) { w.add_string("tokenizer.ggml.model", "bert"); }),
                         "'bert'");
    expect_gguf_rejected(load_gguf([](GgufWriter& w, auto&, auto&) {
                             w.add_string("tokenizer.ggml.model", "gpt2");
                             w.add_string("tokenizer.ggml.pre", "falcon");
                         }),
                         "'falcon'");
    expect_gguf_rejected(load_gguf([](GgufWriter& w, auto&, auto&) {
                             w.add_string("tokenizer.ggml.model", "gpt2");
                             w.add_string("tokenizer.ggml.pre", "gpt2");  // a model name, not a pre value
                         }),
                         "'gpt2'");
}

TEST(TokenizerReject, gguf_merge_problems_are_rejected) {
    expect_gguf_rejected(load_gguf([](GgufWriter& w, auto&, std::vector<std::string>& merges) {
                             gpt2_qwen2(w, merges, merges);
                             merges.clear();
                         }),
                         "tokenizer.ggml.merges");
    expect_gguf_rejected(load_gguf([](GgufWriter& w, auto&, std::vector<std::string>& merges) {
                             gpt2_qwen2(w, merges, merges);
                             merges.push_back("a zz");
                         }),
                         "unknown token 'zz'");
    expect_gguf_rejected(load_gguf([](GgufWriter& w, auto&, std::vector<std::string>& merges) {
                             gpt2_qwen2(w, merges, merges);
                             merges.push_back("ab");
                         }),
                         "'ab'");
}

TEST(TokenizerReject, gguf_token_type_problems_are_rejected) {
    expect_gguf_rejected(load_gguf([](GgufWriter& w, std::vector<std::string>& tokens, auto& m) {
                             gpt2_qwen2(w, tokens, m);
                             w.add_array("tokenizer.ggml.token_type", std::vector<int32_t>(10, 1));
                         }),
                         "token_type");
    expect_gguf_rejected(load_gguf([](GgufWriter& w, std::vector<std::string>& tokens, auto& m) {
                             gpt2_qwen2(w, tokens, m);
                             std::vector<int32_t> types(tokens.size(), 1);
                             types[5] = 9;
                             w.add_array("tokenizer.ggml.token_type", types);
                         }),
                         "type 9");
    expect_gguf_rejected(load_gguf([](GgufWriter& w, auto& t, auto& m) {
                             gpt2_qwen2(w, t, m);
                             w.add_string("tokenizer.ggml.eos_token_id", "two");
                         }),
                         "eos_token_id");
}

TEST(TokenizerReject, gguf_special_ids_outside_the_vocabulary_are_ignored) {
    auto tok = load_gguf([](GgufWriter& w, auto& t, auto& m) {
        gpt2_qwen2(w, t, m);
        w.add_u32("tokenizer.ggml.eos_token_id", 100000);
        w.add_u32("tokenizer.ggml.padding_token_id", 256);
    });
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    EXPECT_EQ(tok->eos(), 11);  // the default stays, as in llama.cpp
    EXPECT_EQ(tok->pad(), 256);
}

TEST(TokenizerReject, export_refuses_what_gguf_cannot_express) {
    Vocab v = hf_tokenizer("gemma3").vocab();
    v.add_bos = false;
    GgufWriter w;
    Status st = write_vocab_gguf(v, w);  // gemma4 style forces add_bos in llama.cpp
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("add_bos"), std::string::npos) << st.error().message();
    GgufVocabExport scores;
    scores.spm_style = GgufVocabExport::SpmStyle::scores;
    EXPECT_TRUE(write_vocab_gguf(v, w, scores).ok());

    auto small = load_tokenizer_hf(minimal_json().dump());
    ASSERT_TRUE(small.ok());
    Vocab spaced = small->vocab();
    spaced.tokens.push_back("a b");
    spaced.types.push_back(TokenType::normal);
    spaced.tokens.push_back("a bc");
    spaced.types.push_back(TokenType::normal);
    spaced.merges.emplace_back("a b", "c");  // "a b c" would split after "a"
    GgufWriter w2;
    st = write_vocab_gguf(spaced, w2);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("merge #1"), std::string::npos) << st.error().message();
}

TEST(TokenizerReject, tokenizer_files_that_are_fifos_are_refused_without_blocking) {
    const std::string dir = make_temp_dir("tok-fifo");
    ASSERT_EQ(::mkfifo((dir + "/tokenizer.json").c_str(), 0600), 0);
    auto r = load_tokenizer_hf_file(dir);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("tokenizer file " + dir + "/tokenizer.json is a FIFO, not a regular file"),
              std::string::npos)
        << r.error().message();

    const std::string conf_dir = make_temp_dir("tok-fifo-config");
    std::ofstream(conf_dir + "/tokenizer.json") << minimal_json().dump();
    ASSERT_EQ(::mkfifo((conf_dir + "/tokenizer_config.json").c_str(), 0600), 0);
    auto c = load_tokenizer_hf_file(conf_dir);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("tokenizer config " + conf_dir + "/tokenizer_config.json is a FIFO"),
              std::string::npos)
        << c.error().message();
}

}  // namespace
}  // namespace tdm::test
