// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_synth_test.cpp: the dflash synthesizer without a device: a head
// shaped for its target (width, heads, vocabulary, z-lab's default spread of target layers,
// the last id as mask token) written as z-lab's HF directory and as llama.cpp's GGUF (the
// tapped layers counted from 1 more, the same weights), and the options it refuses.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/quant.h"
#include "dflash/synth/dflash_synth.h"
#include "formats/gguf.h"
#include "formats/model_source.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

std::string write_qwen3(const std::string& dir, int32_t n_layer) {
    synth::Qwen3Shape s = *synth::qwen3_preset("tiny");
    s.n_layer = n_layer;
    const std::string path = dir + "/qwen3-" + std::to_string(n_layer) + ".gguf";
    EXPECT_TRUE(synth::synth_qwen3_gguf(path, s, {}).ok());
    return path;
}

TEST(DflashSynth, a_head_follows_its_target_and_spreads_its_layers_as_z_lab_does) {
    const std::string dir = test::make_temp_dir("dflash-synth");
    const std::string target = write_qwen3(dir, 36);
    auto s = synth::dflash_shape_for_target(target, 5, 16);
    ASSERT_TRUE(s.ok()) << s.error().message();
    // Qwen3-8B's published head: 5 draft layers over 36 target layers
    EXPECT_EQ(s->target_layers, (std::vector<int32_t>{1, 9, 17, 25, 33}));
    auto one = synth::dflash_shape_for_target(target, 1, 16);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->target_layers, (std::vector<int32_t>{18}));
    synth::DflashSynthOptions o;
    o.weight_type = DType::F16;
    ASSERT_TRUE(synth::synth_dflash_hf(dir + "/head", *s, o).ok());
    nlohmann::json c;
    std::ifstream(dir + "/head/config.json") >> c;
    EXPECT_EQ(c["block_size"], 16);
    EXPECT_EQ(c["num_target_layers"], 36);
    EXPECT_EQ(c["num_hidden_layers"], 5);
    EXPECT_EQ(c["dflash_config"]["mask_token_id"], s->n_vocab - 1);
    EXPECT_EQ(c["dflash_config"]["target_layer_ids"], nlohmann::json({1, 9, 17, 25, 33}));
    auto src = ModelSource::open(dir + "/head");
    ASSERT_TRUE(src.ok()) << src.error().message();
    const SourceTensor* fc = (*src)->find("fc.weight");
    ASSERT_NE(fc, nullptr);
    EXPECT_EQ(fc->ne[0], 5 * s->n_embd);
    EXPECT_EQ(fc->ne[1], s->n_embd);
    for (const char* name : {"hidden_norm.weight", "norm.weight", "layers.4.self_attn.k_norm.weight",
                             "layers.0.mlp.down_proj.weight"})
        EXPECT_NE((*src)->find(name), nullptr) << name;
    EXPECT_EQ((*src)->find("lm_head.weight"), nullptr) << "the LM head is the target's";
}

// The values of tensor `name` of `src` as f32.
std::vector<float> tensor_values(const ModelSource& src, const std::string& name) {
    const SourceTensor* t = src.find(name);
    EXPECT_NE(t, nullptr) << name;
    if (!t) return {};
    const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t->type), t->data, out.data(), n);
    return out;
}

TEST(DflashSynth, the_gguf_layout_holds_llama_cpp_keys_and_the_hf_weights) {
    const std::string dir = test::make_temp_dir("dflash-synth-gguf");
    const std::string target = write_qwen3(dir, 36);
    auto s = synth::dflash_shape_for_target(target, 5, 16);
    ASSERT_TRUE(s.ok()) << s.error().message();
    synth::DflashSynthOptions o;
    o.weight_type = DType::F16;
    ASSERT_TRUE(synth::synth_dflash_hf(dir + "/head", *s, o).ok());
    ASSERT_TRUE(synth::synth_dflash_gguf(dir + "/head.gguf", *s, o).ok());
    auto g = GgufFile::open(dir + "/head.gguf");
    ASSERT_TRUE(g.ok()) << g.error().message();
    EXPECT_EQ(*(*g)->get_string("general.architecture"), "dflash");
    EXPECT_EQ(*(*g)->get_int("dflash.block_count"), 5);
    EXPECT_EQ(*(*g)->get_int("dflash.block_size"), 16);
    EXPECT_EQ(*(*g)->get_int("tokenizer.ggml.mask_token_id"), s->n_vocab - 1);
    // z-lab's 1, 9, 17, 25, 33 as llama.cpp's converter writes them: the layers whose input is tapped
    EXPECT_EQ(*(*g)->get_int_array("dflash.target_layers"), (std::vector<int64_t>{2, 10, 18, 26, 34}));
    auto hf = ModelSource::open(dir + "/head");
    auto gg = ModelSource::open(dir + "/head.gguf");
    ASSERT_TRUE(hf.ok() && gg.ok());
    for (const auto& [gguf, hf_name] : std::vector<std::pair<std::string, std::string>>{
             {"fc.weight", "fc.weight"},
             {"enc.output_norm.weight", "hidden_norm.weight"},
             {"output_norm.weight", "norm.weight"},
             {"blk.3.attn_k.weight", "layers.3.self_attn.k_proj.weight"},
             {"blk.4.attn_q_norm.weight", "layers.4.self_attn.q_norm.weight"},
             {"blk.0.ffn_down.weight", "layers.0.mlp.down_proj.weight"}})
        EXPECT_EQ(tensor_values(**gg, gguf), tensor_values(**hf, hf_name)) << gguf;
}

TEST(DflashSynth, requests_refuse_what_a_head_cannot_be) {
    const std::string dir = test::make_temp_dir("dflash-synth-bad");
    const std::string target = write_qwen3(dir, 5);
    auto r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"target", target}, {"type", "q8_0"}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("an HF head holds f32, f16 or bf16 weights"), std::string::npos)
        << r.error().message();
    r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"target", target}, {"block-size", "1"}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("--block-size 1"), std::string::npos) << r.error().message();
    r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"target", write_qwen3(dir, 4)}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("5 or more layers"), std::string::npos) << r.error().message();
    r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"target", target}, {"format", "ggml"}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("unknown format 'ggml'"), std::string::npos) << r.error().message();
    r = synth::synthesize_dflash_request("dflash", dir + "/h.gguf", {{"target", target}, {"format", "gguf"}});
    EXPECT_TRUE(r.ok()) << r.error().message();
}

}  // namespace
}  // namespace tdm
