// SPDX-License-Identifier: Apache-2.0
// tests/support/gguf_builder.cpp
#include "support/gguf_builder.h"

#include "formats/ggml_types.h"
#include "writers/gguf_writer.h"

#include <gtest/gtest.h>

namespace tdm::test {

GgufBuilder& GgufBuilder::raw(std::string_view bytes) {
    bytes_.append(bytes);
    return *this;
}

GgufBuilder& GgufBuilder::zeros(size_t n) {
    bytes_.append(n, '\0');
    return *this;
}

GgufBuilder& GgufBuilder::str(std::string_view s) {
    u64(s.size());
    return raw(s);
}

GgufBuilder& GgufBuilder::header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    raw("GGUF");
    u32(version);
    u64(n_tensors);
    return u64(n_kv);
}

GgufBuilder& GgufBuilder::kv_u32(std::string_view key, uint32_t v) {
    str(key);
    u32(4);  // UINT32
    return u32(v);
}

GgufBuilder& GgufBuilder::kv_string(std::string_view key, std::string_view v) {
    str(key);
    u32(8);  // STRING
    return str(v);
}

GgufBuilder& GgufBuilder::tensor_info(std::string_view name, const std::vector<int64_t>& ne,
                                      uint32_t type, uint64_t offset) {
    str(name);
    u32(uint32_t(ne.size()));
    for (int64_t d : ne) i64(d);
    u32(type);
    return u64(offset);
}

GgufBuilder& GgufBuilder::pad_to(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back('\0');
    return *this;
}

std::string small_valid_gguf() {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 1);
    w.add_f32("llama.rope.freq_base", 10000.0f);
    w.add_bool("tokenizer.ggml.add_bos_token", true);
    w.add_array("tokenizer.ggml.tokens", std::vector<std::string>{"<s>", "a", "bc", ""});
    w.add_array("tokenizer.ggml.token_type", std::vector<int32_t>{3, 1, 1, 5});
    std::vector<float> embd(32);
    for (int i = 0; i < 32; ++i) embd[size_t(i)] = float(i);
    EXPECT_TRUE(w.add_tensor("tok_embd", 0, {8, 4}, embd.data(), embd.size() * 4).ok());
    std::vector<uint8_t> q8(2 * 34);
    for (size_t i = 0; i < q8.size(); ++i) q8[i] = uint8_t(i * 7);
    EXPECT_TRUE(w.add_tensor("blk.0.w", 8, {32, 2}, std::move(q8)).ok());
    auto bytes = w.to_bytes();
    EXPECT_TRUE(bytes.ok()) << bytes.error().message();
    return bytes.ok() ? *bytes : std::string();
}

}  // namespace tdm::test
