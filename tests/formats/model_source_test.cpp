// SPDX-License-Identifier: Apache-2.0
// tests/formats/model_source_test.cpp: ModelSource detects the format by content, not
// by name, reports the architecture, and exposes one tensor list for GGUF files,
// safetensors files and Hugging Face directories; bad paths get errors that say what
// is accepted.
// To add a case: write the model under make_temp_dir() and open it with ModelSource.
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "formats/model_source.h"
#include "formats/safetensors_builder.h"
#include "support/fixtures.h"
#include "support/gguf_builder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

using namespace tdm;
using namespace tdm::test;

TEST(ModelSource, detects_gguf_by_magic_whatever_the_file_is_called) {
    std::string path = make_temp_dir("ms-gguf") + "/model.bin";
    std::string bytes = small_valid_gguf();
    write_bytes(path, bytes);
    auto r = ModelSource::open(path);
    ASSERT_TRUE(r.ok()) << r.error().message();
    const ModelSource& m = **r;
    EXPECT_EQ(m.format(), SourceFormat::gguf);
    EXPECT_EQ(source_format_name(m.format()), "gguf");
    EXPECT_EQ(m.path(), path);
    EXPECT_EQ(m.architecture(), "llama");
    ASSERT_TRUE(m.gguf());
    EXPECT_EQ(m.safetensors(), nullptr);
    EXPECT_EQ(m.hf_config(), nullptr);
    EXPECT_EQ(m.file_bytes(), bytes.size());
    ASSERT_EQ(m.tensors().size(), 2u);

    const SourceTensor* e = m.find("tok_embd");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->type, 0u);
    EXPECT_EQ(e->dtype, "f32");
    EXPECT_EQ(e->n_dims, 2);
    EXPECT_EQ((std::vector<int64_t>(e->ne, e->ne + 4)), (std::vector<int64_t>{8, 4, 1, 1}));
    ASSERT_EQ(e->nbytes, 128u);
    float v[32];
    std::memcpy(v, e->data, sizeof(v));
    for (int i = 0; i < 32; ++i) EXPECT_EQ(v[i], float(i));
    const SourceTensor* q = m.find("blk.0.w");
    ASSERT_TRUE(q);
    EXPECT_EQ(q->dtype, "q8_0");
    EXPECT_EQ(q->nbytes, 68u);
    EXPECT_EQ(m.find("missing"), nullptr);
    m.release_pages(*e);
    std::memcpy(v, e->data, sizeof(v));
    EXPECT_EQ(v[31], 31.0f);
}

TEST(ModelSource, gguf_without_architecture_reports_an_empty_one) {
    GgufBuilder b;
    b.header(3, 0, 1).kv_u32("general.architecture", 7);  // wrong type: the loader's error
    std::string path = make_temp_dir("ms-noarch") + "/m.gguf";
    write_bytes(path, b.bytes());
    auto r = ModelSource::open(path);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ((*r)->architecture(), "");
}

TEST(ModelSource, opens_a_single_safetensors_file_with_config_next_to_it) {
    std::string dir = make_temp_dir("ms-st");
    write_bytes(dir + "/weights.data", safetensors_bytes({{"lm_head.weight", "BF16", {3, 2}, byte_pattern(12, 1)},
                                                          {"scale", "F8_E4M3", {2}, "xy"}}));
    write_bytes(dir + "/config.json", R"({"model_type": "qwen3"})");
    auto r = ModelSource::open(dir + "/weights.data");  // detected by content
    ASSERT_TRUE(r.ok()) << r.error().message();
    const ModelSource& m = **r;
    EXPECT_EQ(m.format(), SourceFormat::safetensors);
    EXPECT_EQ(source_format_name(m.format()), "safetensors");
    EXPECT_EQ(m.architecture(), "qwen3");
    ASSERT_TRUE(m.hf_config());
    ASSERT_TRUE(m.safetensors());
    EXPECT_EQ(m.gguf(), nullptr);
    const SourceTensor* w = m.find("lm_head.weight");
    ASSERT_TRUE(w);
    EXPECT_EQ(w->type, 30u);
    EXPECT_EQ(w->dtype, "BF16");
    EXPECT_EQ(w->n_dims, 2);
    EXPECT_EQ(w->ne[0], 2);
    EXPECT_EQ(w->ne[1], 3);
    EXPECT_EQ(std::memcmp(w->data, byte_pattern(12, 1).data(), 12), 0);
    const SourceTensor* s = m.find("scale");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->type, kNoGgmlType);  // kept, so that using it can say "F8_E4M3"
    EXPECT_EQ(s->dtype, "F8_E4M3");
    m.release_pages(*w);
    EXPECT_EQ(m.file_bytes(), read_file(dir + "/weights.data").size());
}

TEST(ModelSource, hf_directory_reports_the_top_level_model_type) {
    std::string dir = make_temp_dir("ms-hf");
    write_bytes(dir + "/model-1.safetensors", safetensors_bytes({{"a", "F32", {1}, "aaaa"}}));
    write_bytes(dir + "/model-2.safetensors", safetensors_bytes({{"b", "F16", {2}, "bbbb"}}));
    write_bytes(dir + "/model.safetensors.index.json",
                R"({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}})");
    // A multimodal wrapper: the text model's type is nested, the top level names the model.
    write_bytes(dir + "/config.json", R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text"}})");
    auto r = ModelSource::open(dir);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ((*r)->architecture(), "gemma3");
    EXPECT_EQ((*r)->tensors().size(), 2u);
    EXPECT_EQ((*r)->find("b")->file, &(*r)->safetensors()->shard(1));
    EXPECT_EQ((*r)->file_bytes(), (*r)->safetensors()->file_bytes());
}

TEST(ModelSource, hf_directory_without_config_opens_with_unknown_architecture) {
    std::string dir = make_temp_dir("ms-noconf");
    write_bytes(dir + "/model.safetensors", safetensors_bytes({{"a", "F32", {1}, "aaaa"}}));
    auto r = ModelSource::open(dir);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ((*r)->architecture(), "");
    EXPECT_EQ((*r)->hf_config(), nullptr);
    EXPECT_TRUE(fails_with((*r)->safetensors()->config(), {dir + "/config.json", "not found"}));
}

TEST(ModelSource, rejects_paths_that_hold_no_model) {
    EXPECT_TRUE(fails_with(ModelSource::open("/nonexistent/model"), {"/nonexistent/model", "no such file or directory"}));

    std::string dir = make_temp_dir("ms-empty");
    write_bytes(dir + "/config.json", "{}");
    EXPECT_TRUE(fails_with(ModelSource::open(dir), {dir, "no model.safetensors or model.safetensors.index.json",
                                                    "tandem accepts a GGUF file"}));

    std::string other = dir + "/notes.txt";
    write_bytes(other, "these are not weights");
    EXPECT_TRUE(fails_with(ModelSource::open(other), {other, "not a model file", "74 68 65 73", "a GGUF file (v2/v3)",
                                                      ".safetensors file", "Hugging Face model directory"}));
    std::string empty = dir + "/empty";
    write_bytes(empty, "");
    EXPECT_TRUE(fails_with(ModelSource::open(empty), {"not a model file", "[]"}));
}

TEST(ModelSource, broken_files_get_their_format_s_own_error) {
    std::string dir = make_temp_dir("ms-broken");
    std::string gguf = small_valid_gguf();
    write_bytes(dir + "/cut.gguf", gguf.substr(0, 100));
    EXPECT_TRUE(fails_with(ModelSource::open(dir + "/cut.gguf"), {"cut.gguf", "truncated at offset"}));
    // A .safetensors name with a broken header gets the safetensors parser's message.
    write_bytes(dir + "/x.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10));
    EXPECT_TRUE(fails_with(ModelSource::open(dir + "/x.safetensors"), "100 MB limit"));
}

// Paths that are not regular files are refused at once: a FIFO would block the open
// until some writer appeared, a device would be read without end.
TEST(ModelSource, a_fifo_or_a_device_as_the_model_is_refused_without_blocking) {
    const std::string dir = make_temp_dir("ms-fifo");
    const std::string fifo = dir + "/model.gguf";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_TRUE(fails_with(ModelSource::open(fifo), {"model file " + fifo + " is a FIFO, not a regular file"}));
    const std::string zero = dir + "/zero.gguf";
    ASSERT_EQ(::symlink("/dev/zero", zero.c_str()), 0);
    EXPECT_TRUE(fails_with(ModelSource::open(zero), {zero, "is a character device, not a regular file"}));
}

TEST(ModelSource, hf_json_files_that_are_fifos_are_refused_without_blocking) {
    // A FIFO config.json: the model opens (its config is optional to the reader) and
    // config() says why there is none.
    const std::string dir = make_temp_dir("ms-fifo-config");
    write_bytes(dir + "/model.safetensors", safetensors_bytes({{"a", "F32", {1}, "aaaa"}}));
    ASSERT_EQ(::mkfifo((dir + "/config.json").c_str(), 0600), 0);
    auto r = ModelSource::open(dir);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_TRUE(fails_with((*r)->safetensors()->config(),
                           {"model config " + dir + "/config.json is a FIFO, not a regular file"}));
    // A FIFO index: the shards cannot be known, so the model does not open.
    const std::string sharded = make_temp_dir("ms-fifo-index");
    ASSERT_EQ(::mkfifo((sharded + "/model.safetensors.index.json").c_str(), 0600), 0);
    EXPECT_TRUE(fails_with(ModelSource::open(sharded), {"safetensors index", "is a FIFO, not a regular file"}));
}
