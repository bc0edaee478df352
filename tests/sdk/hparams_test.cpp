// SPDX-License-Identifier: Apache-2.0
// tests/sdk/hparams_test.cpp: tandem/cpp/hparams.hpp over a fake model source:
// range errors name the file, the key, the value and the range; required
// and optional reads; several spellings per key; prefixes; every type.
//
// To add a case: put metadata into a FakeSource, read it with an
// HparamReader, and check the status, the value and the message.
#include <gtest/gtest.h>

#include <tandem/cpp/hparams.hpp>

#include <cmath>
#include <string>

#include "fake_host.h"

namespace {

using sdk_test::fake;
using sdk_test::FakeSource;
using tdm::sdk::Err;
using tdm::sdk::HparamReader;

class SdkHparams : public ::testing::Test {
protected:
    void SetUp() override { fake().reset(); }
    HparamReader reader() { return HparamReader(&api, src.handle(), Err(err, sizeof err)); }
    std::string msg() const { return err; }

    tdm_host_api api = sdk_test::fake_host_api();
    FakeSource src;
    char err[512] = "";
};

TEST_F(SdkHparams, a_value_outside_its_range_names_the_file_key_value_and_range) {
    src.meta["qwen3.block_count"] = int64_t(0);
    src.meta["qwen3.embedding_length"] = int64_t(1) << 40;
    uint32_t v = 99;
    EXPECT_EQ(reader().u32("qwen3.block_count", 1, 4096, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: qwen3.block_count = 0 is outside [1, 4096]");
    EXPECT_EQ(v, 99u) << "untouched on failure";
    // a value above uint32 is reported as read, not truncated
    EXPECT_EQ(reader().u32("qwen3.embedding_length", 4, 1u << 20, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: qwen3.embedding_length = 1099511627776 is outside [4, 1048576]");
    int64_t i = 0;
    src.meta["n"] = int64_t(-5);
    EXPECT_EQ(reader().i64("n", -4, 4, &i), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: n = -5 is outside [-4, 4]");
    src.meta["theta"] = 0.5;
    float f = 0;
    EXPECT_EQ(reader().f32("theta", 1.0, 1e12, &f), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: theta = 0.5 is outside [1, 1e+12]");
    src.meta["theta"] = std::nan("");
    EXPECT_EQ(reader().f32("theta", 1.0, 1e12, &f), TDM_ERR_BAD_MODEL) << "NaN is never in range";
    src.meta["theta"] = 1e6;
    EXPECT_EQ(reader().f32("theta", 1.0, 1e12, &f), TDM_OK);
    EXPECT_EQ(f, 1e6f);
}

TEST_F(SdkHparams, required_keys_must_be_present_and_optional_ones_take_a_checked_default) {
    uint32_t v = 0;
    EXPECT_EQ(reader().u32("qwen3.block_count", 1, 4096, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: qwen3.block_count is missing (required)");
    EXPECT_EQ(reader().u32_or("qwen3.context_length", 1, 1u << 24, 40960, &v), TDM_OK);
    EXPECT_EQ(v, 40960u);
    // a default is held to the same range (it may be derived from the file)
    EXPECT_EQ(reader().u32_or("qwen3.attention.key_length", 4, 4096, 0, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: qwen3.attention.key_length is absent and its default 0 is outside [4, 4096]");
    src.meta["qwen3.context_length"] = int64_t(8192);
    EXPECT_EQ(reader().u32_or("qwen3.context_length", 1, 1u << 24, 40960, &v), TDM_OK);
    EXPECT_EQ(v, 8192u);
    bool b = true;
    EXPECT_EQ(reader().boolean_or("tie_word_embeddings", false, &b), TDM_OK);
    EXPECT_FALSE(b);
    EXPECT_EQ(reader().boolean("tie_word_embeddings", &b), TDM_ERR_BAD_MODEL);
    const char* s = nullptr;
    EXPECT_EQ(reader().string_or("model_type", "qwen3", &s), TDM_OK);
    EXPECT_STREQ(s, "qwen3");
    float f = 0;
    EXPECT_EQ(reader().f32_or("rope_theta", 1.0, 1e12, 10000.0f, &f), TDM_OK);
    EXPECT_EQ(f, 10000.0f);
    EXPECT_EQ(reader().f32_or("rope_theta", 1.0, 1e12, 0.0f, &f), TDM_ERR_BAD_MODEL);
}

TEST_F(SdkHparams, spellings_are_tried_in_order_and_messages_name_the_one_read) {
    src.path = "/models/q";
    src.format = TDM_SOURCE_SAFETENSORS;
    src.meta["rope_theta"] = 5e5;
    src.meta["rope_parameters.rope_theta"] = 1e6;
    float f = 0;
    EXPECT_EQ(reader().f32({"rope_parameters.rope_theta", "rope_theta"}, 1.0, 1e12, &f), TDM_OK);
    EXPECT_EQ(f, 1e6f) << "the first spelling present wins";
    src.meta.erase("rope_parameters.rope_theta");
    EXPECT_EQ(reader().f32({"rope_parameters.rope_theta", "rope_theta"}, 1.0, 1e12, &f), TDM_OK);
    EXPECT_EQ(f, 5e5f) << "falls back to the next spelling";
    src.meta["rope_theta"] = -1.0;
    EXPECT_EQ(reader().f32({"rope_parameters.rope_theta", "rope_theta"}, 1.0, 1e12, &f), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "/models/q: rope_theta = -1 is outside [1, 1e+12]");
    uint32_t v = 0;
    EXPECT_EQ(reader().u32({"num_hidden_layers", "n_layer"}, 1, 64, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "/models/q: none of the keys num_hidden_layers, n_layer is set (one is required)");
    EXPECT_TRUE(reader().has({"missing", "rope_theta"}));
    EXPECT_FALSE(reader().has({"missing", "also_missing"}));
    // pick(): one spelling per layout
    EXPECT_STREQ(reader().pick("qwen3.block_count", "num_hidden_layers"), "num_hidden_layers");
    src.format = TDM_SOURCE_GGUF;
    EXPECT_STREQ(reader().pick("qwen3.block_count", "num_hidden_layers"), "qwen3.block_count");
    // more spellings than Keys holds is a plugin bug, reported
    EXPECT_EQ(reader().u32({"a", "b", "c", "d", "e"}, 0, 1, &v), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(msg().find("more than 4 spellings"), std::string::npos) << msg();
}

TEST_F(SdkHparams, a_prefix_is_prepended_to_every_spelling_and_shown_in_messages) {
    src.format = TDM_SOURCE_SAFETENSORS;
    src.path = "config.json";
    src.meta["text_config.hidden_size"] = int64_t(2);
    const HparamReader r = reader().with_prefix("text_config.");
    EXPECT_STREQ(r.prefix(), "text_config.");
    uint32_t v = 0;
    EXPECT_EQ(r.u32("hidden_size", 4, 1024, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "config.json: text_config.hidden_size = 2 is outside [4, 1024]");
    EXPECT_EQ(r.u32({"num_layers", "n_layers"}, 1, 8, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "config.json: none of the keys text_config.num_layers, text_config.n_layers is set (one is required)");
    const std::string long_prefix(100, 'p');
    EXPECT_EQ(reader().with_prefix(long_prefix.c_str()).u32("x", 0, 1, &v), TDM_ERR_INVALID_ARGUMENT);
}

TEST_F(SdkHparams, a_value_of_the_wrong_type_quotes_the_host_with_the_key) {
    src.meta["qwen3.block_count"] = std::string("four");
    uint32_t v = 0;
    EXPECT_EQ(reader().u32("qwen3.block_count", 1, 8, &v), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: qwen3.block_count: key 'qwen3.block_count' is not an integer");
    src.meta["flag"] = int64_t(3);
    bool b = false;
    EXPECT_EQ(reader().boolean("flag", &b), TDM_ERR_BAD_MODEL);
    EXPECT_NE(msg().find("is not a bool"), std::string::npos) << msg();
}

TEST_F(SdkHparams, choices_give_an_index_or_list_what_is_allowed) {
    src.meta["layer_types.0"] = std::string("full_attention");
    src.meta["layer_types.1"] = std::string("sliding_attention");
    size_t i = 9;
    EXPECT_EQ(reader().choice("layer_types.0", {"linear_attention", "full_attention"}, &i), TDM_OK);
    EXPECT_EQ(i, 1u);
    EXPECT_EQ(reader().choice("layer_types.1", {"linear_attention", "full_attention"}, &i), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: layer_types.1 = 'sliding_attention' is not one of: linear_attention, full_attention");
    EXPECT_EQ(reader().choice_or("layer_types.2", {"a", "b"}, 0, &i), TDM_OK);
    EXPECT_EQ(i, 0u);
}

TEST_F(SdkHparams, integer_arrays_are_checked_for_length_and_every_element) {
    src.meta["sections"] = std::vector<int64_t>{11, 11, 10, 0};
    uint32_t sec[4] = {};
    EXPECT_EQ(reader().u32_array("sections", 0, 1024, sec, 4), TDM_OK);
    EXPECT_EQ(sec[0], 11u);
    EXPECT_EQ(sec[2], 10u);
    uint32_t three[3] = {7, 7, 7};
    EXPECT_EQ(reader().u32_array("sections", 0, 1024, three, 3), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: sections has 4 elements, expected 3");
    EXPECT_EQ(three[0], 7u) << "untouched on failure";
    src.meta["sections"] = std::vector<int64_t>{11, -1, 10, 0};
    EXPECT_EQ(reader().u32_array("sections", 0, 1024, sec, 4), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: sections[1] = -1 is outside [0, 1024]");
    bool found = true;
    EXPECT_EQ(reader().u32_array_opt("absent", 0, 1, three, 3, &found), TDM_OK);
    EXPECT_FALSE(found);
    EXPECT_EQ(reader().u32_array("absent", 0, 1, three, 3), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: absent is missing (required)");

    src.meta["ids"] = std::vector<int64_t>{1, 2, 3};
    int64_t buf[2];
    size_t n = 9;
    EXPECT_EQ(reader().i64_array("ids", 0, 10, buf, 2, &n), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: ids has 3 elements, at most 2 are allowed");
    EXPECT_EQ(n, 0u);
    int64_t big[8];
    EXPECT_EQ(reader().i64_array("ids", 0, 10, big, 8, &n), TDM_OK);
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(big[2], 3);
}

TEST_F(SdkHparams, tensors_are_looked_up_by_any_spelling) {
    src.tensors["model.embed_tokens.weight"] = {64, 1000};
    EXPECT_TRUE(reader().has_tensor({"token_embd.weight", "model.embed_tokens.weight"}));
    EXPECT_FALSE(reader().has_tensor("output.weight"));
    tdm_tensor_info ti;
    EXPECT_EQ(reader().tensor_info({"token_embd.weight", "model.embed_tokens.weight"}, &ti), TDM_OK);
    EXPECT_EQ(ti.ne[1], 1000);
    EXPECT_EQ(reader().tensor_info("output.weight", &ti), TDM_ERR_BAD_MODEL);
    EXPECT_EQ(msg(), "model.gguf: tensor output.weight is missing (required)");
}

}  // namespace
