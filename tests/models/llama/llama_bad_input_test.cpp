// SPDX-License-Identifier: Apache-2.0
// tests/models/llama/llama_bad_input_test.cpp: Llama files with one defect (a tensor missing
// or of the wrong shape, head counts that do not divide, an unsupported rope scaling, biases
// the plugin does not add) are refused when the model is created or loaded, each with a
// message that names the problem, instead of failing at the first graph or generating from a
// misread shape.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "formats/gguf.h"
#include "llama/synth/llama_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/gguf_edit.h"
#include "support/plugin_registry.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

std::string good_llama_gguf() {
    const std::string path = test::make_temp_dir("llama-bad") + "/good.gguf";
    synth::LlamaSynthOptions o;
    EXPECT_TRUE(synth::synth_llama_gguf(path, *synth::llama_preset("tiny"), o).ok());
    return path;
}

// A copy of `src` without `drop_key`, with what `add` writes added (keys or tensors).
std::string llama_copy_with(const std::string& src, const std::string& drop_key,
                            const std::function<void(GgufWriter&)>& add) {
    auto f = GgufFile::open(src);
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return "";
    GgufWriter w;
    for (const GgufKV& kv : (*f)->kvs())
        if (kv.key != drop_key) w.add_value(kv.key, kv.value);
    add(w);
    for (const GgufTensorInfo& ti : (*f)->tensors())
        EXPECT_TRUE(w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims), (*f)->tensor_data(ti),
                                 ti.nbytes)
                        .ok());
    const std::string out = test::make_temp_dir("llama-bad") + "/bad.gguf";
    EXPECT_TRUE(w.write_file(out).ok());
    return out;
}

void expect_refused(const std::string& path, const std::string& part, const char* what) {
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    ASSERT_FALSE(m.ok()) << what;
    EXPECT_NE(m.error().message().find(part), std::string::npos) << what << ": " << m.error().message();
}

TEST(LlamaBadInput, a_missing_or_misshapen_tensor_is_named) {
    const std::string good = good_llama_gguf();
    const std::string dir = test::make_temp_dir("llama-bad-tensor");
    test::GgufEdit drop;
    drop.drop_tensor = "blk.1.ffn_up.weight";
    ASSERT_TRUE(test::copy_gguf_with_edit(good, dir + "/drop.gguf", drop).ok());
    expect_refused(dir + "/drop.gguf", "blk.1.ffn_up.weight", "missing tensor");
    test::GgufEdit reshape;
    reshape.reshape_tensor = "blk.0.attn_k.weight";
    ASSERT_TRUE(test::copy_gguf_with_edit(good, dir + "/reshape.gguf", reshape).ok());
    expect_refused(dir + "/reshape.gguf", "blk.0.attn_k.weight", "wrong shape");
    test::GgufEdit freqs;
    freqs.drop_tensor = "rope_freqs.weight";  // without it: plain RoPE, a model that still loads
    ASSERT_TRUE(test::copy_gguf_with_edit(good, dir + "/nofreqs.gguf", freqs).ok());
    EXPECT_TRUE(Model::load(dir + "/nofreqs.gguf", test::build_tree_plugins(), test::test_device()).ok());
}

TEST(LlamaBadInput, inconsistent_hyper_parameters_are_refused_by_name) {
    const std::string good = good_llama_gguf();
    struct Case {
        const char* name;
        const char* key;
        std::function<void(GgufWriter&)> add;
        const char* message;
    };
    const std::vector<Case> cases = {
        {"heads that do not divide", "llama.attention.head_count_kv",
         [](GgufWriter& w) { w.add_u32("llama.attention.head_count_kv", 3); },
         "4 attention heads are not a multiple of 3 KV heads"},
        {"too many query heads per KV head", "llama.attention.head_count",
         [](GgufWriter& w) { w.add_u32("llama.attention.head_count", 64); }, "32 query heads per KV head"},
        {"value_length unlike key_length", "llama.attention.value_length",
         [](GgufWriter& w) { w.add_u32("llama.attention.value_length", 32); }, "value_length 32 differs"},
        {"a vocab_size unlike the embedding's", "llama.vocab_size",
         [](GgufWriter& w) { w.add_u32("llama.vocab_size", 1000); }, "vocab_size 1000 differs"},
        {"yarn scaling", "llama.rope.scaling.type",
         [](GgufWriter& w) { w.add_string("llama.rope.scaling.type", "yarn"); }, "rope scaling 'yarn' is not supported"},
        {"attention biases", "",
         [](GgufWriter& w) {
             std::vector<uint8_t> zeros(64 * sizeof(float), 0);
             EXPECT_TRUE(w.add_tensor("blk.0.attn_q.bias", 0, {64}, zeros.data(), zeros.size()).ok());
         },
         "attention or MLP biases"},
    };
    for (const Case& c : cases) expect_refused(llama_copy_with(good, c.key, c.add), c.message, c.name);
}

TEST(LlamaBadInput, hf_configs_with_bad_heads_or_rope_types_are_refused_by_name) {
    const std::string dir = test::make_temp_dir("llama-bad-hf") + "/hf";
    synth::LlamaSynthOptions o;
    o.weight_type = DType::F16;
    ASSERT_TRUE(synth::synth_llama_hf(dir, *synth::llama_preset("tiny"), o).ok());
    std::ifstream in(dir + "/config.json");
    const nlohmann::json good = nlohmann::json::parse(in);
    auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json c = good;
        edit(c);
        std::ofstream(dir + "/config.json") << c.dump(2);
    };
    with([](nlohmann::json& c) { c["num_key_value_heads"] = 3; });
    expect_refused(dir, "4 attention heads are not a multiple of 3 KV heads", "hf heads");
    with([](nlohmann::json& c) { c["rope_scaling"]["rope_type"] = "yarn"; });
    expect_refused(dir, "rope_type 'yarn' is not supported", "hf yarn");
    with([](nlohmann::json& c) { c["attention_bias"] = true; });
    expect_refused(dir, "attention_bias is true", "hf biases");
    with([](nlohmann::json&) {});
    EXPECT_TRUE(Model::load(dir, test::build_tree_plugins(), test::test_device()).ok());
}

}  // namespace
}  // namespace tdm
