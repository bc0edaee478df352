// SPDX-License-Identifier: Apache-2.0
// tests/plugin/metadata_api_test.cpp: array metadata as a plugin reads it through the
// host table (meta_get_int_array, meta_get_float_array) from a GGUF file, above all GGUF
// BOOL arrays such as gemma4.attention.sliding_window_pattern, which read as 0/1.
//
// To add a case: write the key with GgufWriter into write_model(), then call the entry
// through host_api() exactly as a plugin would and check the status, values and length.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "plugin/handles.h"
#include "support/fixtures.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

const tdm_host_api& host_metadata_api() { return *host_api(); }

std::unique_ptr<ModelSource> write_model() {
    GgufWriter w;
    w.add_string("general.architecture", "gemma4");
    // The converter's per-layer pattern (true = sliding-window layer), 6 layers.
    w.add_array("gemma4.attention.sliding_window_pattern", std::vector<bool>{true, true, false, true, true, false});
    w.add_array("gemma4.empty_pattern", std::vector<bool>{});
    w.add_array("ints", std::vector<int32_t>{4, -5});
    w.add_array("names", std::vector<std::string>{"a"});
    const std::string path = test::make_temp_dir("metadata_api") + "/m.gguf";
    const Status st = w.write_file(path);
    EXPECT_TRUE(st.ok()) << st.error().message();
    auto src = ModelSource::open(path);
    EXPECT_TRUE(src.ok()) << src.error().message();
    return src.ok() ? std::move(src).value() : nullptr;
}

TEST(MetadataApi, a_gguf_bool_array_reads_as_zero_and_one_through_meta_get_int_array) {
    const auto model = write_model();
    ASSERT_TRUE(model);
    tdm_model_source src;
    src.src = model.get();
    int64_t v[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    uint64_t n = 0;
    ASSERT_EQ(host_metadata_api().meta_get_int_array(&src, "gemma4.attention.sliding_window_pattern", v, 8, &n), TDM_OK)
        << host_metadata_api().last_error();
    EXPECT_EQ(n, 6u);
    EXPECT_EQ(std::vector<int64_t>(v, v + 8), (std::vector<int64_t>{1, 1, 0, 1, 1, 0, 9, 9}));
    // A short buffer gets the first elements and the full length.
    int64_t two[2] = {};
    ASSERT_EQ(host_metadata_api().meta_get_int_array(&src, "gemma4.attention.sliding_window_pattern", two, 2, &n), TDM_OK);
    EXPECT_EQ(n, 6u);
    EXPECT_EQ(two[0], 1);
    EXPECT_EQ(two[1], 1);
    ASSERT_EQ(host_metadata_api().meta_get_int_array(&src, "gemma4.empty_pattern", v, 8, &n), TDM_OK);
    EXPECT_EQ(n, 0u);
    ASSERT_EQ(host_metadata_api().meta_get_int_array(&src, "ints", v, 8, &n), TDM_OK);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(v[1], -5);
}

TEST(MetadataApi, arrays_of_other_types_are_refused_naming_the_key_and_what_was_found) {
    const auto model = write_model();
    ASSERT_TRUE(model);
    tdm_model_source src;
    src.src = model.get();
    int64_t v[4];
    double d[4];
    uint64_t n = 0;
    EXPECT_EQ(host_metadata_api().meta_get_int_array(&src, "names", v, 4, &n), TDM_ERR_BAD_MODEL);
    EXPECT_NE(std::string(host_metadata_api().last_error()).find("key 'names': expected ARRAY of integers, found ARRAY of STRING"),
              std::string::npos)
        << host_metadata_api().last_error();
    // Bools are integers to the integer getters only, not numbers to the float one.
    EXPECT_EQ(host_metadata_api().meta_get_float_array(&src, "gemma4.attention.sliding_window_pattern", d, 4, &n),
              TDM_ERR_BAD_MODEL);
    EXPECT_NE(std::string(host_metadata_api().last_error()).find("found ARRAY of BOOL"), std::string::npos) << host_metadata_api().last_error();
    EXPECT_EQ(host_metadata_api().meta_get_int_array(&src, "missing", v, 4, &n), TDM_ERR_NOT_FOUND);
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
    ASSERT_TRUE(f.good()) << path;
}

// An HF directory: config.json plus a one-tensor model.safetensors.
std::unique_ptr<ModelSource> write_hf_dir(const std::string& config) {
    const std::string dir = test::make_temp_dir("metadata_api_hf");
    write_bytes(dir + "/config.json", config);
    const std::string header = R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    std::string st(8, '\0');
    for (int i = 0; i < 8; ++i) st[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
    st += header;
    st += std::string(4, '\0');
    write_bytes(dir + "/model.safetensors", st);
    auto src = ModelSource::open(dir);
    EXPECT_TRUE(src.ok()) << src.error().message();
    return src.ok() ? std::move(src).value() : nullptr;
}

TEST(MetadataApi, a_json_null_in_config_json_reads_as_an_absent_key) {
    // transformers writes unset options as null (Gemma 4 E2B: "num_global_key_value_heads":
    // null); a plugin's defaults must apply, as they do for an absent key.
    const auto model = write_hf_dir(
        R"({"model_type": "gemma4", "text_config": {"num_global_key_value_heads": null, "num_key_value_heads": 1}})");
    ASSERT_TRUE(model);
    tdm_model_source src;
    src.src = model.get();
    EXPECT_EQ(host_metadata_api().meta_has(&src, "text_config.num_global_key_value_heads"), 0);
    int64_t v = 7;
    EXPECT_EQ(host_metadata_api().meta_get_int(&src, "text_config.num_global_key_value_heads", &v), TDM_ERR_NOT_FOUND);
    EXPECT_EQ(v, 7);
    EXPECT_EQ(host_metadata_api().meta_has(&src, "text_config.num_key_value_heads"), 1);
    ASSERT_EQ(host_metadata_api().meta_get_int(&src, "text_config.num_key_value_heads", &v), TDM_OK);
    EXPECT_EQ(v, 1);
}

}  // namespace
}  // namespace tdm
