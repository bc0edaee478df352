// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_vision_synth_test.cpp: `tandem synth --arch glm4 --format hf --vision true`:
// the vision tower's tensors are exactly those the independent reference
// (support/glm_vision_reference.h, written from transformers' modeling file) reads, with its
// shapes; the reference encoder runs on them; config.json, preprocessor_config.json and the
// tokenizer's image tokens agree with each other; the text model still loads; GGUF writes the
// tower as llama.cpp's mmproj file; repeating models with a tower are refused.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "common/fp16.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "glm-ocr/synth/glm_request.h"
#include "glm-ocr/synth/glm_vision_synth.h"
#include "image/patch_processor.h"
#include "support/fixtures.h"
#include "support/glm_vision_reference.h"
#include "tokenizer/vocab_json.h"

namespace tdm {
namespace {

using nlohmann::json;

const std::string& vision_model_glm_vision_synth() {
    static const std::string dir = [] {
        const std::string d = test::make_temp_dir("glmvision") + "/small-vision";
        auto r = synth::synthesize_glm_request("glm4", d, {{"preset", "small"}, {"format", "hf"}, {"vision", "true"}});
        EXPECT_TRUE(r.ok()) << r.error().message();
        return d;
    }();
    return dir;
}

json read_json(const std::string& path) { return json::parse(test::read_file(path), nullptr, false); }

ref::GlmVisionConfig config_of(const json& vc) {
    ref::GlmVisionConfig c;
    c.depth = vc["depth"];
    c.hidden = vc["hidden_size"];
    c.heads = vc["num_heads"];
    c.intermediate = vc["intermediate_size"];
    c.out_hidden = vc["out_hidden_size"];
    c.in_channels = vc["in_channels"];
    c.patch = vc["patch_size"];
    c.temporal_patch = vc["temporal_patch_size"];
    c.merge = vc["spatial_merge_size"];
    c.rms_eps = vc["rms_norm_eps"];
    return c;
}

TEST(GlmVisionSynth, the_tower_holds_exactly_the_tensors_the_reference_reads_and_it_runs_on_them) {
    const json cfg = read_json(vision_model_glm_vision_synth() + "/config.json");
    ASSERT_TRUE(cfg.contains("vision_config")) << cfg.dump();
    const ref::GlmVisionConfig vc = config_of(cfg["vision_config"]);
    EXPECT_EQ(vc.out_hidden, cfg["text_config"]["hidden_size"].get<int>());
    auto st = SafetensorsModel::open(vision_model_glm_vision_synth());
    ASSERT_TRUE(st.ok()) << st.error().message();

    std::map<std::string, std::vector<int64_t>> written;
    for (const SafetensorsTensor& t : (*st)->tensors())
        if (t.name.rfind(ref::kGlmVisionPrefix, 0) == 0) written[t.name] = t.shape;
    std::map<std::string, std::vector<int64_t>> expected;
    for (const ref::VisionTensorSpec& s : ref::glm_vision_tensors(vc)) expected[s.name] = s.shape;
    EXPECT_EQ(written, expected);

    ref::MapVisionWeights w;
    for (const auto& [name, shape] : expected) {
        const SafetensorsTensor* t = (*st)->find(name);
        ASSERT_NE(t, nullptr) << name;
        ASSERT_EQ(t->dtype, "BF16") << name;
        std::vector<float> v(t->nbytes / 2);
        for (size_t i = 0; i < v.size(); ++i) {
            uint16_t h;
            std::memcpy(&h, t->data + 2 * i, 2);
            v[i] = bf16_to_f32(h);
        }
        w.set(name, shape, std::move(v));
    }
    const int gh = 4, gw = 6;
    const std::vector<float> patches = test::randn(size_t(gh * gw * vc.patch_values()), 3);
    const std::vector<float> out = ref::glm_vision_forward(vc, w, patches, gh, gw);
    ASSERT_EQ(out.size(), size_t(gh * gw / 4 * vc.out_hidden));
    double sum_sq = 0;
    for (float x : out) {
        ASSERT_TRUE(std::isfinite(x));
        sum_sq += double(x) * x;
    }
    EXPECT_GT(sum_sq, 0.0);
    EXPECT_EQ(w.names_read().size(), expected.size()) << "the reference reads every tensor written";
}

TEST(GlmVisionSynth, config_preprocessor_and_tokenizer_agree_on_the_image_tokens_and_patches) {
    const json cfg = read_json(vision_model_glm_vision_synth() + "/config.json");
    auto tok = load_tokenizer_hf_file(vision_model_glm_vision_synth() + "/tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.error().message();
    const std::vector<int32_t> ids = tok->encode("<|begin_of_image|><|image|><|image|><|end_of_image|>", false, true);
    EXPECT_EQ(ids, (std::vector<int32_t>{cfg["image_start_token_id"], cfg["image_token_id"], cfg["image_token_id"],
                                         cfg["image_end_token_id"]}));
    EXPECT_EQ(cfg["image_end_token_id"].get<int>(), cfg["text_config"]["vocab_size"].get<int>() - 1);

    auto pc = patch_config_from_json(test::read_file(vision_model_glm_vision_synth() + "/preprocessor_config.json"));
    ASSERT_TRUE(pc.ok()) << pc.error().message();
    EXPECT_EQ(int(pc->patch_size), cfg["vision_config"]["patch_size"].get<int>());
    EXPECT_EQ(int(pc->merge_size), cfg["vision_config"]["spatial_merge_size"].get<int>());
    EXPECT_EQ(pc->min_pixels, 12544u);  // GLM-OCR's budget (spec §5)
    EXPECT_EQ(pc->max_pixels, 9633792u);
}

// GGUF: the text model with the image tokens in its vocabulary, and the tower in llama.cpp's
// mmproj layout beside it (names from llama.cpp's conversion/qwen3vl.py and clip.cpp).
TEST(GlmVisionSynth, gguf_writes_the_tower_as_an_mmproj_and_repeating_models_have_none) {
    const std::string d = test::make_temp_dir("glmvision-bad");
    auto gguf = synth::synthesize_glm_request("glm4", d + "/v.gguf", {{"vision", "true"}});
    ASSERT_TRUE(gguf.ok()) << gguf.error().message();
    EXPECT_NE(gguf->find("mmproj-v.gguf"), std::string::npos) << *gguf;
    auto mm = GgufFile::open(d + "/mmproj-v.gguf");
    ASSERT_TRUE(mm.ok()) << mm.error().message();
    EXPECT_EQ(*(*mm)->get_string("general.architecture"), "clip");
    EXPECT_EQ(*(*mm)->get_string("clip.projector_type"), "glm4v");
    std::map<std::string, std::vector<int64_t>> names;
    for (const GgufTensorInfo& t : (*mm)->tensors()) names[t.name] = std::vector<int64_t>(t.ne, t.ne + t.n_dims);
    const synth::GlmVisionShape v = *synth::glm_vision_preset("tiny");
    EXPECT_EQ(names["v.patch_embd.weight"], (std::vector<int64_t>{v.patch, v.patch, 3, v.hidden}));
    EXPECT_EQ(names["v.patch_embd.weight.1"], (std::vector<int64_t>{v.patch, v.patch, 3, v.hidden}));
    EXPECT_EQ(names.count("v.blk.0.attn_q_norm.weight"), 1u);
    EXPECT_EQ(names.count("mm.patch_merger.bias"), 1u);
    EXPECT_EQ(names.count("v.position_embd.weight"), 0u) << "GLM-OCR has no learned position embeddings";
    // every HF tower tensor has its GGUF counterpart (the patch embedding as two)
    EXPECT_EQ(names.size(), synth::glm_vision_tensors(v, 64).size() + 1);
    auto rep = synth::synthesize_glm_request("glm4", d + "/rep",
                                             {{"format", "hf"}, {"vision", "true"}, {"repeating", "true"}});
    ASSERT_FALSE(rep.ok());
    EXPECT_NE(rep.error().message().find("no vision tower"), std::string::npos) << rep.error().message();
    auto tiny = synth::synthesize_glm_request("glm4", d + "/tiny", {{"format", "hf"}, {"vision", "true"}});
    EXPECT_TRUE(tiny.ok()) << tiny.error().message();
}

}  // namespace
}  // namespace tdm
