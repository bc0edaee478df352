// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_synth_test.cpp: the dflash synthesizer without a device: a head
// shaped for its target (width, heads, vocabulary, z-lab's default spread of target layers,
// the last id as mask token) written as z-lab's HF directory, and the options it refuses.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "dflash/synth/dflash_synth.h"
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

TEST(DflashSynth, requests_refuse_what_a_head_cannot_be) {
    const std::string dir = test::make_temp_dir("dflash-synth-bad");
    const std::string target = write_qwen3(dir, 5);
    auto r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"target", target}, {"type", "q8_0"}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("HF safetensors"), std::string::npos) << r.error().message();
    r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"target", target}, {"block-size", "1"}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("--block-size 1"), std::string::npos) << r.error().message();
    r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"target", write_qwen3(dir, 4)}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("5 or more layers"), std::string::npos) << r.error().message();
    r = synth::synthesize_dflash_request("dflash", dir + "/h", {{"format", "gguf"}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("no option --format"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tdm
