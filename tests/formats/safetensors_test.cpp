// SPDX-License-Identifier: Apache-2.0
// tests/formats/safetensors_test.cpp: safetensors single-file and sharded round trips
// (files written here by safetensors_builder.h), config.json, and every rejection of
// docs/formats/gguf.md Part B with a check that the message names the problem.
// To add a case: build bytes with safetensors_bytes()/safetensors_raw(), write them
// under make_temp_dir(), open with SafetensorsModel::open, check with fails_with().
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "formats/safetensors.h"
#include "formats/safetensors_builder.h"
#include "support/fixtures.h"

#include <cstring>

using namespace tdm;
using namespace tdm::test;

namespace {

std::string write_temp(const std::string& tag, const std::string& name, const std::string& bytes) {
    std::string dir = make_temp_dir(tag);
    write_bytes(dir + "/" + name, bytes);
    return dir + "/" + name;
}

Result<std::unique_ptr<SafetensorsModel>> open_bytes(const std::string& bytes) {
    return SafetensorsModel::open(write_temp("st-bad", "bad.safetensors", bytes));
}

bool same_bytes(const SafetensorsTensor& t, const std::string& want) {
    return t.nbytes == want.size() && std::memcmp(t.data, want.data(), want.size()) == 0;
}

}  // namespace

TEST(Safetensors, single_file_round_trip_keeps_dtype_shape_and_bytes) {
    const std::vector<StTensor> ts = {
        {"f32", "F32", {2, 3}, byte_pattern(24, 1)},
        {"f16", "F16", {4}, byte_pattern(8, 2)},
        {"bf16", "BF16", {2, 2, 2}, byte_pattern(16, 3)},
        {"i32", "I32", {1}, byte_pattern(4, 4)},
        {"i8", "I8", {5}, byte_pattern(5, 5)},
        {"i16", "I16", {3, 1}, byte_pattern(6, 6)},
        {"u8", "U8", {4}, byte_pattern(4, 7)},
        {"fp8", "F8_E4M3", {2, 2}, byte_pattern(4, 8)},
        {"scalar", "F32", {}, byte_pattern(4, 9)},
        {"conv3d", "F16", {2, 1, 3, 1, 2}, byte_pattern(24, 10)},
        {"empty", "F32", {0, 4}, ""},
        {"f4", "F4", {4}, byte_pattern(2, 11)},
    };
    std::string path = write_temp("st-single", "m.safetensors", safetensors_bytes(ts, {{"format", "pt"}}));
    auto r = SafetensorsModel::open(path);
    ASSERT_TRUE(r.ok()) << r.error().message();
    const SafetensorsModel& m = **r;
    EXPECT_EQ(m.path(), path);
    EXPECT_EQ(m.shard_count(), 1u);
    ASSERT_EQ(m.tensors().size(), ts.size());
    for (const StTensor& want : ts) {
        const SafetensorsTensor* t = m.find(want.name);
        ASSERT_TRUE(t) << want.name;
        EXPECT_EQ(t->dtype, want.dtype);
        EXPECT_EQ(t->shape, want.shape);
        EXPECT_EQ(t->shard, 0u);
        EXPECT_TRUE(same_bytes(*t, want.data)) << want.name;
    }
    // Order follows the data in the file.
    for (size_t i = 1; i < m.tensors().size(); ++i) EXPECT_LE(m.tensors()[i - 1].data, m.tensors()[i].data);

    // ggml type ids for the dtypes tandem reads, the sentinel for the rest.
    EXPECT_EQ(m.find("f32")->ggml_type, 0u);
    EXPECT_EQ(m.find("f16")->ggml_type, 1u);
    EXPECT_EQ(m.find("bf16")->ggml_type, 30u);
    EXPECT_EQ(m.find("i32")->ggml_type, 26u);
    EXPECT_EQ(m.find("i8")->ggml_type, 24u);
    EXPECT_EQ(m.find("i16")->ggml_type, 25u);
    EXPECT_EQ(m.find("u8")->ggml_type, kNoGgmlType);
    EXPECT_EQ(m.find("fp8")->ggml_type, kNoGgmlType);
    EXPECT_EQ(m.find("f4")->ggml_type, kNoGgmlType);

    // ne is the reversed shape; > 4 dims fold the outer ones into ne[3]; a scalar is 1-D.
    const SafetensorsTensor* f32 = m.find("f32");
    EXPECT_EQ(f32->n_dims, 2);
    EXPECT_EQ((std::vector<int64_t>(f32->ne, f32->ne + 4)), (std::vector<int64_t>{3, 2, 1, 1}));
    const SafetensorsTensor* bf = m.find("bf16");
    EXPECT_EQ(bf->n_dims, 3);
    const SafetensorsTensor* c = m.find("conv3d");
    EXPECT_EQ(c->n_dims, 4);
    EXPECT_EQ((std::vector<int64_t>(c->ne, c->ne + 4)), (std::vector<int64_t>{2, 1, 3, 2}));
    const SafetensorsTensor* s = m.find("scalar");
    EXPECT_EQ(s->n_dims, 1);
    EXPECT_EQ(s->ne[0], 1);
    EXPECT_EQ(m.find("empty")->nbytes, 0u);
    EXPECT_EQ(m.find("nope"), nullptr);
    EXPECT_EQ(m.file_bytes(), read_file(path).size());
    m.release_pages(*f32);
    EXPECT_TRUE(same_bytes(*f32, ts[0].data));

    EXPECT_EQ(safetensors_dtype_bits("F6_E2M3"), 6u);
    EXPECT_EQ(safetensors_dtype_bits("C64"), 64u);
    EXPECT_EQ(safetensors_dtype_bits("Q4"), 0u);
}

TEST(Safetensors, directory_with_model_safetensors_reads_config_json) {
    std::string dir = make_temp_dir("st-dir");
    write_bytes(dir + "/model.safetensors", safetensors_bytes({{"w", "F32", {2}, byte_pattern(8, 1)}}));
    write_bytes(dir + "/config.json", R"({"model_type": "qwen3", "hidden_size": 64})");
    auto r = SafetensorsModel::open(dir);
    ASSERT_TRUE(r.ok()) << r.error().message();
    auto cfg = (*r)->config();
    ASSERT_TRUE(cfg.ok()) << cfg.error().message();
    EXPECT_EQ((**cfg)["model_type"], "qwen3");
    EXPECT_EQ((**cfg)["hidden_size"], 64);
    EXPECT_EQ((*r)->config_path(), dir + "/config.json");
}

TEST(Safetensors, config_json_missing_or_invalid_is_an_error_naming_its_path) {
    std::string file = write_temp("st-noconf", "m.safetensors", safetensors_bytes({{"w", "F32", {1}, "abcd"}}));
    auto r = SafetensorsModel::open(file);
    ASSERT_TRUE(r.ok());  // the tensors are usable without it
    std::string conf = file.substr(0, file.rfind('/')) + "/config.json";
    EXPECT_TRUE(fails_with((*r)->config(), {conf, "not found"}));

    write_bytes(conf, "{\"model_type\": ");
    EXPECT_TRUE(fails_with((*SafetensorsModel::open(file))->config(), {conf, "invalid JSON"}));
    write_bytes(conf, "[1, 2]");
    EXPECT_TRUE(fails_with((*SafetensorsModel::open(file))->config(), {conf, "not a JSON object"}));
}

TEST(Safetensors, sharded_directory_round_trip_follows_the_index) {
    std::string dir = make_temp_dir("st-sharded");
    write_bytes(dir + "/model-00001-of-00002.safetensors",
                safetensors_bytes({{"a", "BF16", {2, 2}, byte_pattern(8, 1)}, {"b", "F32", {3}, byte_pattern(12, 2)}}));
    write_bytes(dir + "/model-00002-of-00002.safetensors",
                safetensors_bytes({{"c", "F16", {4, 1}, byte_pattern(8, 3)}}));
    write_bytes(dir + "/model.safetensors.index.json", R"({
        "metadata": {"total_size": 28},
        "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                       "c": "model-00002-of-00002.safetensors"}})");
    write_bytes(dir + "/config.json", R"({"model_type": "gemma3"})");
    auto r = SafetensorsModel::open(dir);
    ASSERT_TRUE(r.ok()) << r.error().message();
    const SafetensorsModel& m = **r;
    EXPECT_EQ(m.shard_count(), 2u);
    ASSERT_EQ(m.tensors().size(), 3u);
    EXPECT_EQ(m.find("a")->shard, 0u);
    EXPECT_EQ(m.find("c")->shard, 1u);
    EXPECT_TRUE(same_bytes(*m.find("b"), byte_pattern(12, 2)));
    EXPECT_TRUE(same_bytes(*m.find("c"), byte_pattern(8, 3)));
    EXPECT_EQ(m.shard(1).path(), dir + "/model-00002-of-00002.safetensors");
    EXPECT_EQ(m.file_bytes(), m.shard(0).size() + m.shard(1).size());
    m.release_pages(*m.find("c"));
    EXPECT_TRUE(m.config().ok());
}

TEST(Safetensors, safetensors_rejects_malformed_headers) {
    EXPECT_TRUE(fails_with(open_bytes("abc"), {"bad.safetensors", "too small", "3 bytes"}));
    std::string big(8, '\0');
    uint64_t n = 100'000'001;
    std::memcpy(big.data(), &n, 8);
    EXPECT_TRUE(fails_with(open_bytes(big + "{}"), {"bad.safetensors", "100000001 bytes", "100 MB limit"}));
    n = 64;
    std::memcpy(big.data(), &n, 8);
    EXPECT_TRUE(fails_with(open_bytes(big + "{}"), {"header of 64 bytes extends beyond the end", "10 bytes"}));
    EXPECT_TRUE(fails_with(open_bytes(safetensors_raw("{\"a\": ", "")), "not valid JSON"));
    EXPECT_TRUE(fails_with(open_bytes(safetensors_raw("[1]", "")), "not a JSON object"));
    EXPECT_TRUE(fails_with(open_bytes(safetensors_raw("\"\xff\xfe\"", "")), "not valid JSON"));
    auto dup = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                   "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
    EXPECT_TRUE(fails_with(open_bytes(safetensors_raw(dup, std::string(8, 'x'))), "duplicate tensor name 'a'"));
    auto meta = R"({"__metadata__": {"format": 1}})";
    EXPECT_TRUE(fails_with(open_bytes(safetensors_raw(meta, "")), "__metadata__ must map strings to strings"));
}

TEST(Safetensors, safetensors_rejects_bad_tensor_entries) {
    struct Case {
        const char* entry;
        const char* needle;
    };
    const Case cases[] = {
        {R"("x")", "entry is not a JSON object"},
        {R"({"shape": [1], "data_offsets": [0, 4]})", "missing or non-string \"dtype\""},
        {R"({"dtype": "Q9", "shape": [1], "data_offsets": [0, 4]})", "unknown dtype 'Q9'"},
        {R"({"dtype": "F32", "shape": 1, "data_offsets": [0, 4]})", "non-array \"shape\""},
        {R"({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]})", "shape entry must be a non-negative integer"},
        {R"({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]})", "shape entry must be a non-negative integer"},
        {R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]})", "more elements than fit"},
        {R"({"dtype": "F4", "shape": [3], "data_offsets": [0, 2]})", "does not fill whole bytes"},
        {R"({"dtype": "F32", "shape": [1], "data_offsets": [0]})", "data_offsets"},
        {R"({"dtype": "F32", "shape": [1], "data_offsets": [8, 4]})", "end before they begin"},
        {R"({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]})", "hold 8 bytes, but shape [3] of F32 needs 12"},
        {R"({"dtype": "F32", "shape": [4], "data_offsets": [0, 16]})", "extend beyond the data buffer (8 bytes"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.entry);
        std::string header = std::string("{\"t\": ") + c.entry + "}";
        EXPECT_TRUE(fails_with(open_bytes(safetensors_raw(header, std::string(8, 'x'))),
                               {"bad.safetensors", "tensor 't'", c.needle}));
    }
    auto overlap = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                       "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                       "z": {"dtype": "F32", "shape": [0], "data_offsets": [2, 2]}})";
    EXPECT_TRUE(fails_with(open_bytes(safetensors_raw(overlap, std::string(8, 'x'))),
                           {"tensors 'a' [0, 8) and 'b' [4, 8) overlap"}));
}

TEST(Safetensors, safetensors_rejects_inconsistent_shards) {
    auto make = [](const std::string& index, bool second_has_a) {
        std::string dir = make_temp_dir("st-shard-bad");
        write_bytes(dir + "/s1.safetensors", safetensors_bytes({{"a", "F32", {1}, "aaaa"}}));
        write_bytes(dir + "/s2.safetensors",
                    safetensors_bytes({{second_has_a ? "a" : "b", "F32", {1}, "bbbb"}}));
        write_bytes(dir + "/model.safetensors.index.json", index);
        return SafetensorsModel::open(dir);
    };
    EXPECT_TRUE(fails_with(make(R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})", true),
                           {"tensor 'a' is stored in both s1.safetensors and s2.safetensors"}));
    EXPECT_TRUE(fails_with(make(R"({"weight_map": {"a": "s1.safetensors", "b": "s3.safetensors"}})", false),
                           {"s3.safetensors", "cannot open"}));
    EXPECT_TRUE(fails_with(make(R"({"weight_map": {"a": "s1.safetensors", "x": "s2.safetensors"}})", false),
                           {"weight_map lists tensor 'x' in s2.safetensors, which has no such tensor"}));
    EXPECT_TRUE(fails_with(make(R"({"weight_map": {"a": "s2.safetensors", "b": "s1.safetensors"}})", false),
                           {"weight_map puts tensor 'a' in s2.safetensors, but it is in s1.safetensors"}));
    EXPECT_TRUE(fails_with(make(R"({"weight_map": {"a": "../s1.safetensors"}})", false),
                           {"weight_map entry 'a' must name a file in"}));
    EXPECT_TRUE(fails_with(make(R"({"weight_map": {"a": 3}})", false), "weight_map entry 'a'"));
    EXPECT_TRUE(fails_with(make(R"({"metadata": {}})", false), "no \"weight_map\" object"));
    EXPECT_TRUE(fails_with(make(R"({"weight_map": {}})", false), "weight_map is empty"));
    EXPECT_TRUE(fails_with(make(R"({"weight_map": )", false), {"model.safetensors.index.json", "invalid JSON"}));
}

TEST(Safetensors, safetensors_rejects_paths_without_a_model) {
    std::string dir = make_temp_dir("st-empty");
    EXPECT_TRUE(fails_with(SafetensorsModel::open(dir),
                           {dir, "neither model.safetensors nor model.safetensors.index.json"}));
    EXPECT_TRUE(fails_with(SafetensorsModel::open(dir + "/missing.safetensors"), "no such file or directory"));
}

TEST(Safetensors, every_truncation_of_a_file_is_refused_or_safe) {
    std::string base = safetensors_bytes({{"a", "F32", {2, 2}, byte_pattern(16, 1)},
                                          {"b", "BF16", {3}, byte_pattern(6, 2)}},
                                         {{"format", "pt"}});
    int ok = 0;
    for (size_t n = 0; n <= base.size(); ++n) {
        auto file = MappedFile::from_bytes("cut.safetensors", base.substr(0, n));
        auto r = parse_safetensors(*file, 0);
        if (!r.ok()) continue;
        ++ok;
        for (const SafetensorsTensor& t : *r)
            EXPECT_LE(uint64_t(t.data - file->data()) + t.nbytes, file->size());
    }
    EXPECT_EQ(ok, 1);  // only the whole file: data must reach the last tensor's END
}
