// SPDX-License-Identifier: Apache-2.0
// tests/formats/model_fingerprint_test.cpp: model_fingerprint() names a model by
// its metadata and tensor table: the same bytes anywhere give the same value;
// a changed metadata value, tensor table entry or config.json gives another.
#include <gtest/gtest.h>

#include "formats/model_fingerprint.h"
#include "formats/safetensors_builder.h"
#include "support/fixtures.h"
#include "support/gguf_builder.h"

using namespace tdm;
using namespace tdm::test;

namespace {

uint64_t fingerprint_of(const std::string& path) {
    auto r = ModelSource::open(path);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? model_fingerprint(**r) : 0;
}

std::string gguf_with(uint32_t ctx, const std::vector<int64_t>& shape) {
    GgufBuilder b;
    b.header(3, 1, 2).kv_string("general.architecture", "llama").kv_u32("llama.context_length", ctx);
    b.tensor_info("tok_embd", shape, 0, 0).pad_to(32);
    b.zeros(size_t(shape[0] * shape[1]) * 4);
    return b.bytes();
}

}  // namespace

TEST(ModelFingerprint, same_bytes_at_another_path_match_and_any_metadata_or_table_change_differs) {
    const std::string dir = make_temp_dir("fingerprint");
    write_bytes(dir + "/a.gguf", gguf_with(4096, {8, 4}));
    write_bytes(dir + "/copy.gguf", gguf_with(4096, {8, 4}));
    write_bytes(dir + "/ctx.gguf", gguf_with(2048, {8, 4}));
    write_bytes(dir + "/shape.gguf", gguf_with(4096, {4, 8}));
    const uint64_t a = fingerprint_of(dir + "/a.gguf");
    EXPECT_EQ(a, fingerprint_of(dir + "/copy.gguf"));
    EXPECT_NE(a, fingerprint_of(dir + "/ctx.gguf"));
    EXPECT_NE(a, fingerprint_of(dir + "/shape.gguf"));
    EXPECT_EQ(fingerprint_hex(0x1234).size(), 16u);
    EXPECT_EQ(fingerprint_hex(0x1234), "0000000000001234");
}

TEST(ModelFingerprint, safetensors_directories_differ_by_config_and_header) {
    auto dir_with = [](const std::string& tag, const char* config, const char* dtype) {
        const std::string dir = make_temp_dir(tag);
        write_bytes(dir + "/model.safetensors", safetensors_bytes({{"w", dtype, {2, 2}, byte_pattern(8, 1)}}));
        write_bytes(dir + "/config.json", config);
        return dir;
    };
    const uint64_t a = fingerprint_of(dir_with("fp-a", R"({"model_type": "qwen3", "hidden_size": 2})", "F16"));
    EXPECT_EQ(a, fingerprint_of(dir_with("fp-b", R"({"hidden_size": 2, "model_type": "qwen3"})", "F16")));
    EXPECT_NE(a, fingerprint_of(dir_with("fp-c", R"({"model_type": "qwen3", "hidden_size": 4})", "F16")));
    EXPECT_NE(a, fingerprint_of(dir_with("fp-d", R"({"model_type": "qwen3", "hidden_size": 2})", "BF16")));
}
