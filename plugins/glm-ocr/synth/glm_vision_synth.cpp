// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/synth/glm_vision_synth.cpp: a synthetic GLM-OCR vision tower in the HF layout.
#include "glm-ocr/synth/glm_vision_synth.h"

#include <fmt/format.h>

#include <cmath>

namespace tdm::synth {

namespace {

constexpr char kPrefix[] = "model.visual.";
constexpr int32_t kChannels = 3;

SynthParam vision_param(const std::string& name, int64_t rows, int64_t cols, ParamRole role, float sigma, bool vector) {
    SynthParam p;
    p.gguf_name = name;
    p.hf_name = name;
    p.rows = rows;
    p.cols = cols;
    p.is_vector = vector;
    p.role = role;
    p.sigma = sigma;
    return p;
}

// A Linear (or a convolution flattened to [out][in * kernel]) and, when biased, its bias.
void linear(std::vector<GlmVisionTensor>& t, const std::string& name, std::vector<int64_t> shape, bool bias) {
    const int64_t rows = shape[0];
    int64_t cols = 1;
    for (size_t i = 1; i < shape.size(); ++i) cols *= shape[i];
    t.push_back(
        {shape, vision_param(name + ".weight", rows, cols, ParamRole::matrix, 1.0f / std::sqrt(float(cols)), false)});
    if (bias) t.push_back({{rows}, vision_param(name + ".bias", 1, rows, ParamRole::matrix, 0.1f, true)});
}

void norm(std::vector<GlmVisionTensor>& t, const std::string& name, int64_t n, bool bias) {
    t.push_back({{n}, vision_param(name + ".weight", 1, n, ParamRole::norm, 0.1f, true)});
    if (bias) t.push_back({{n}, vision_param(name + ".bias", 1, n, ParamRole::matrix, 0.1f, true)});
}

}  // namespace

Result<GlmVisionShape> glm_vision_preset(std::string_view text_preset) {
    GlmVisionShape v;
    if (text_preset == "glm-ocr") {
        v.depth = 24, v.hidden = 1024, v.heads = 16, v.intermediate = 4096;  // zai-org/GLM-OCR vision_config
    } else if (text_preset == "small") {
        v.depth = 2, v.hidden = 64, v.heads = 4, v.intermediate = 128;
    } else if (text_preset == "tiny") {
        v.depth = 2, v.hidden = 32, v.heads = 2, v.intermediate = 48;
    } else {
        return Error::format("glm4 synth: no vision tower for preset '{}'", text_preset);
    }
    return v;
}

Status validate_glm_vision(const GlmVisionShape& v, int32_t out_hidden) {
    for (auto [field, x] : {std::pair<const char*, int64_t>{"depth", v.depth}, {"hidden", v.hidden}, {"heads", v.heads},
                            {"intermediate", v.intermediate}, {"patch", v.patch}, {"temporal_patch", v.temporal_patch},
                            {"merge", v.merge}, {"out_hidden", out_hidden}})
        if (x <= 0) return Error::format("glm4 vision shape: {} must be positive, got {}", field, x);
    if (v.hidden % v.heads != 0 || (v.hidden / v.heads) % 4 != 0)
        return Error::format("glm4 vision shape: hidden {} over {} heads must give a head_dim that is a multiple of 4",
                             v.hidden, v.heads);
    return {};
}

std::vector<GlmVisionTensor> glm_vision_tensors(const GlmVisionShape& v, int32_t out_hidden) {
    const std::string p = kPrefix;
    const int64_t D = v.hidden, hd = v.hidden / v.heads, O = out_hidden;
    std::vector<GlmVisionTensor> t;
    linear(t, p + "patch_embed.proj", {D, kChannels, v.temporal_patch, v.patch, v.patch}, true);
    for (int32_t b = 0; b < v.depth; ++b) {
        const std::string blk = p + "blocks." + std::to_string(b) + ".";
        norm(t, blk + "norm1", D, false);
        norm(t, blk + "norm2", D, false);
        linear(t, blk + "attn.qkv", {3 * D, D}, true);
        linear(t, blk + "attn.proj", {D, D}, true);
        norm(t, blk + "attn.q_norm", hd, false);
        norm(t, blk + "attn.k_norm", hd, false);
        linear(t, blk + "mlp.gate_proj", {v.intermediate, D}, true);
        linear(t, blk + "mlp.up_proj", {v.intermediate, D}, true);
        linear(t, blk + "mlp.down_proj", {D, v.intermediate}, true);
    }
    norm(t, p + "post_layernorm", D, false);
    linear(t, p + "downsample", {O, D, v.merge, v.merge}, true);
    linear(t, p + "merger.proj", {O, O}, false);
    norm(t, p + "merger.post_projection_norm", O, true);
    linear(t, p + "merger.gate_proj", {O * kChannels, O}, false);
    linear(t, p + "merger.up_proj", {O * kChannels, O}, false);
    linear(t, p + "merger.down_proj", {O, O * kChannels}, false);
    return t;
}

nlohmann::ordered_json glm_vision_config_json(const GlmVisionShape& v, int32_t out_hidden) {
    nlohmann::ordered_json j;
    j["model_type"] = "glm_ocr_vision";
    j["attention_bias"] = true;
    j["depth"] = v.depth;
    j["hidden_act"] = "silu";
    j["hidden_size"] = v.hidden;
    j["in_channels"] = kChannels;
    j["intermediate_size"] = v.intermediate;
    j["num_heads"] = v.heads;
    j["out_hidden_size"] = out_hidden;
    j["patch_size"] = v.patch;
    j["rms_norm_eps"] = v.rms_eps;
    j["spatial_merge_size"] = v.merge;
    j["temporal_patch_size"] = v.temporal_patch;
    return j;
}

std::string glm_preprocessor_config_json(const GlmVisionShape& v) {
    nlohmann::ordered_json j;
    j["image_processor_type"] = "Glm46VImageProcessor";
    j["do_resize"] = true;
    j["resample"] = 3;  // PIL bicubic
    j["do_rescale"] = true;
    j["rescale_factor"] = 1.0 / 255.0;
    j["do_normalize"] = true;
    j["image_mean"] = {0.48145466, 0.4578275, 0.40821073};
    j["image_std"] = {0.26862954, 0.26130258, 0.27577711};
    j["do_convert_rgb"] = true;
    j["patch_size"] = v.patch;
    j["temporal_patch_size"] = v.temporal_patch;
    j["merge_size"] = v.merge;
    j["size"] = {{"shortest_edge", 12544}, {"longest_edge", 9633792}};
    return j.dump(2) + "\n";
}

Result<Vocab> glm_vision_vocab(int32_t n_vocab, GlmImageTokens* ids) {
    Vocab v = TDM_TRY(synth_vocab(n_vocab - 3));
    const int32_t first = n_vocab - 3;
    for (const char* text : {"<|begin_of_image|>", "<|image|>", "<|end_of_image|>"}) {
        v.tokens.emplace_back(text);
        v.types.push_back(TokenType::control);
    }
    *ids = GlmImageTokens{first, first + 1, first + 2};
    v.source = fmt::format("synthetic glm-ocr vocabulary with image tokens ({} ids)", n_vocab);
    TDM_TRY(validate_vocab(v));
    return v;
}

}  // namespace tdm::synth
