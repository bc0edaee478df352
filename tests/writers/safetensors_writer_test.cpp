// SPDX-License-Identifier: Apache-2.0
// tests/writers/safetensors_writer_test.cpp: SafetensorsWriter output read back by the project's
// safetensors reader (single file, streamed tensors, shards + index), the reference writer's
// layout details (aligned header, __metadata__ first, data order), and every rejection.
// To add a case: build a writer, write under make_temp_dir(), open with SafetensorsModel::open.
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "formats/safetensors.h"
#include "support/fixtures.h"
#include "writers/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>

using namespace tdm;
using namespace tdm::test;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed * 31 + i * 7);
    return v;
}

bool same(const SafetensorsTensor& t, const std::vector<uint8_t>& want) {
    return t.nbytes == want.size() && (want.empty() || std::memcmp(t.data, want.data(), want.size()) == 0);
}

}  // namespace

TEST(SafetensorsWriter, written_file_round_trips_through_the_reader) {
    SafetensorsWriter w;
    w.add_metadata("format", "pt");
    const auto f32 = pattern(24, 1), f16 = pattern(8, 2), bf16 = pattern(16, 3), i8 = pattern(5, 4),
               scalar = pattern(4, 5), streamed = pattern(12, 6);
    ASSERT_TRUE(w.add_tensor("b.f32", "F32", {2, 3}, f32.data(), f32.size()).ok());
    ASSERT_TRUE(w.add_tensor("a.f16", "F16", {4}, f16).ok());
    ASSERT_TRUE(w.add_tensor("c.bf16", "BF16", {2, 2, 2}, bf16).ok());
    ASSERT_TRUE(w.add_tensor("i8", "I8", {5}, i8).ok());
    ASSERT_TRUE(w.add_tensor("scalar", "F32", {}, scalar).ok());
    ASSERT_TRUE(w.add_tensor("empty", "F32", {0, 4}, std::vector<uint8_t>()).ok());
    int calls = 0;
    ASSERT_TRUE(w.add_tensor("streamed", "F32", {3}, [&](uint8_t* dst) -> Status {
                     ++calls;
                     std::memcpy(dst, streamed.data(), streamed.size());
                     return {};
                 }).ok());
    EXPECT_EQ(w.tensor_count(), 7u);
    EXPECT_EQ(w.data_bytes(), 24u + 8 + 16 + 5 + 4 + 0 + 12);

    const std::string path = make_temp_dir("stw") + "/m.safetensors";
    ASSERT_TRUE(w.write_file(path).ok());
    EXPECT_EQ(calls, 1);
    auto m = SafetensorsModel::open(path);
    ASSERT_TRUE(m.ok()) << m.error().message();
    ASSERT_EQ((*m)->tensors().size(), 7u);
    struct Want {
        const char* name;
        const char* dtype;
        std::vector<int64_t> shape;
        const std::vector<uint8_t>* bytes;
    };
    const std::vector<uint8_t> none;
    for (const Want& want : std::vector<Want>{{"b.f32", "F32", {2, 3}, &f32},
                                              {"a.f16", "F16", {4}, &f16},
                                              {"c.bf16", "BF16", {2, 2, 2}, &bf16},
                                              {"i8", "I8", {5}, &i8},
                                              {"scalar", "F32", {}, &scalar},
                                              {"empty", "F32", {0, 4}, &none},
                                              {"streamed", "F32", {3}, &streamed}}) {
        const SafetensorsTensor* t = (*m)->find(want.name);
        ASSERT_TRUE(t) << want.name;
        EXPECT_EQ(t->dtype, want.dtype) << want.name;
        EXPECT_EQ(t->shape, want.shape) << want.name;
        EXPECT_TRUE(same(*t, *want.bytes)) << want.name;
    }
}

TEST(SafetensorsWriter, header_is_aligned_metadata_first_and_data_ordered_like_the_reference_writer) {
    SafetensorsWriter w;
    w.add_metadata("format", "pt");
    ASSERT_TRUE(w.add_tensor("z.f32", "F32", {1}, pattern(4, 1)).ok());
    ASSERT_TRUE(w.add_tensor("a.f16", "F16", {1}, pattern(2, 2)).ok());
    ASSERT_TRUE(w.add_tensor("b.f32", "F32", {1}, pattern(4, 3)).ok());
    ASSERT_TRUE(w.add_tensor("c.i8", "I8", {3}, pattern(3, 4)).ok());
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.ok());
    const std::string& b = *bytes;
    uint64_t n = 0;
    std::memcpy(&n, b.data(), 8);
    EXPECT_EQ((8 + n) % 8, 0u);
    EXPECT_EQ(b.size(), 8 + n + 4 + 2 + 4 + 3);
    const std::string header = b.substr(8, n);
    EXPECT_EQ(header.rfind("{\"__metadata__\":{\"format\":\"pt\"}", 0), 0u) << header;
    // Largest dtype first, then by name: b.f32, z.f32, a.f16, c.i8.
    const size_t pb = header.find("\"b.f32\""), pz = header.find("\"z.f32\""), pa = header.find("\"a.f16\""),
                 pc = header.find("\"c.i8\"");
    EXPECT_LT(pb, pz);
    EXPECT_LT(pz, pa);
    EXPECT_LT(pa, pc);
    const auto j = nlohmann::json::parse(header);
    EXPECT_EQ(j["b.f32"]["data_offsets"], nlohmann::json::array({0, 4}));
    EXPECT_EQ(j["z.f32"]["data_offsets"], nlohmann::json::array({4, 8}));
    EXPECT_EQ(j["a.f16"]["data_offsets"], nlohmann::json::array({8, 10}));
    EXPECT_EQ(j["c.i8"]["data_offsets"], nlohmann::json::array({10, 13}));
}

TEST(SafetensorsWriter, sharded_checkpoint_opens_as_one_model_with_an_index) {
    SafetensorsWriter w;
    w.add_metadata("format", "pt");
    std::vector<std::vector<uint8_t>> data;
    for (int i = 0; i < 5; ++i) {
        data.push_back(pattern(40, uint8_t(i)));
        ASSERT_TRUE(w.add_tensor("t" + std::to_string(i), "F32", {10}, data.back()).ok());
    }
    const std::string dir = make_temp_dir("stw-shard");
    ASSERT_TRUE(w.write_sharded(dir, 100).ok());  // two 40-byte tensors per shard
    EXPECT_TRUE(std::filesystem::exists(dir + "/model-00001-of-00003.safetensors"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/model-00003-of-00003.safetensors"));
    const auto index = nlohmann::json::parse(read_file(dir + "/model.safetensors.index.json"));
    EXPECT_EQ(index["metadata"]["total_size"], 200);
    EXPECT_EQ(index["weight_map"]["t4"], "model-00003-of-00003.safetensors");

    auto m = SafetensorsModel::open(dir);
    ASSERT_TRUE(m.ok()) << m.error().message();
    EXPECT_EQ((*m)->shard_count(), 3u);
    ASSERT_EQ((*m)->tensors().size(), 5u);
    for (int i = 0; i < 5; ++i) {
        const SafetensorsTensor* t = (*m)->find("t" + std::to_string(i));
        ASSERT_TRUE(t);
        EXPECT_TRUE(same(*t, data[size_t(i)]));
    }
}

TEST(SafetensorsWriter, writer_rejects_bad_tensors_with_clear_errors) {
    SafetensorsWriter w;
    ASSERT_TRUE(w.add_tensor("x", "F32", {2}, pattern(8, 1)).ok());
    EXPECT_TRUE(fails_with(w.add_tensor("x", "F32", {2}, pattern(8, 1)), "duplicate tensor name 'x'"));
    EXPECT_TRUE(fails_with(w.add_tensor("y", "F33", {2}, pattern(8, 1)), "unknown dtype 'F33'"));
    EXPECT_TRUE(fails_with(w.add_tensor("y", "F16", {3}, pattern(8, 1)), {"8 bytes given", "need 6"}));
    EXPECT_TRUE(fails_with(w.add_tensor("__metadata__", "F32", {1}, pattern(4, 1)), "reserved"));
    EXPECT_TRUE(fails_with(w.add_tensor("", "F32", {1}, pattern(4, 1)), "empty tensor name"));
    EXPECT_TRUE(fails_with(w.add_tensor("f4", "F4", {3}, pattern(2, 1)), "whole bytes"));
    EXPECT_TRUE(fails_with(w.add_tensor("neg", "F32", {-1}, pattern(0, 1)), "negative dimension"));
    EXPECT_TRUE(fails_with(w.add_tensor("nofill", "F32", {1}, SafetensorsWriter::Fill()), "empty fill"));
    EXPECT_TRUE(fails_with(w.write_sharded(make_temp_dir("stw-bad"), 0), "must be positive"));
    EXPECT_EQ(w.tensor_count(), 1u);  // rejected tensors were not added
}

TEST(SafetensorsWriter, failing_fill_leaves_no_file_behind) {
    SafetensorsWriter w;
    ASSERT_TRUE(w.add_tensor("bad", "F32", {1}, [](uint8_t*) -> Status { return Error("generator broke"); }).ok());
    const std::string path = make_temp_dir("stw-fail") + "/m.safetensors";
    EXPECT_TRUE(fails_with(w.write_file(path), {"producing tensor 'bad'", "generator broke"}));
    EXPECT_FALSE(std::filesystem::exists(path));
}
