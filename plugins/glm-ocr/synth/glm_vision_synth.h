/* SPDX-License-Identifier: Apache-2.0 */
// plugins/glm-ocr/synth/glm_vision_synth.h: the vision tower of a synthetic GLM-OCR in the HF
// layout the checkpoint ships (model.visual.*: patch_embed, blocks with fused biased qkv and
// q/k norms, post_layernorm, downsample, merger; docs/models/glm-ocr.md §5), its config.json
// `vision_config`, preprocessor_config.json, and the image tokens of the vocabulary
// (<|begin_of_image|>, <|image|>, <|end_of_image|> as the last ids).
// Values are those of host/synth/synth_weights.h, one stream per tensor name.
// The GGUF layout keeps the tower in llama.cpp's separate mmproj file (glm_mmproj_synth.cpp).
#pragma once

#include "common/error.h"
#include "synth/synth_vocab.h"
#include "synth/synth_weights.h"
#include "tokenizer/vocab.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::synth {

struct GlmVisionShape {
    int32_t depth = 0;  // 0: no vision tower
    int32_t hidden = 0;
    int32_t heads = 0;  // head_dim = hidden / heads
    int32_t intermediate = 0;
    int32_t patch = 14;
    int32_t temporal_patch = 2;
    int32_t merge = 2;
    double rms_eps = 1e-5;
};

// The tower of a text preset: "glm-ocr" the real one (depth 24, hidden 1024, 16 heads, 4096),
// "small" and "tiny" small ones. The tower's output width is the text model's n_embd.
Result<GlmVisionShape> glm_vision_preset(std::string_view text_preset);

Status validate_glm_vision(const GlmVisionShape& v, int32_t out_hidden);

struct GlmVisionTensor {
    std::vector<int64_t> shape;  // torch order
    SynthParam p;                // p.hf_name = p.gguf_name = the HF name (the value stream); rows x cols
};

// Every tensor of the tower, in module order. The merger's SwiGLU is out_hidden * 3 wide, as
// HF derives it (out_hidden_size * in_channels).
std::vector<GlmVisionTensor> glm_vision_tensors(const GlmVisionShape& v, int32_t out_hidden);

nlohmann::ordered_json glm_vision_config_json(const GlmVisionShape& v, int32_t out_hidden);
// preprocessor_config.json as GLM-OCR ships it (Glm46VImageProcessor, its pixel budget and
// CLIP mean/std), with this tower's patch and merge sizes.
std::string glm_preprocessor_config_json(const GlmVisionShape& v);

struct GlmImageTokens {
    int32_t begin = -1, image = -1, end = -1;
};
// A vocabulary of n_vocab ids for a model with a vision tower: the synthetic vocabulary of
// n_vocab - 3 ids (text, specials, unused) and the three image tokens as its last ids, control
// tokens. Its text layout is synth_vocab_layout(n_vocab - 3).
Result<Vocab> glm_vision_vocab(int32_t n_vocab, GlmImageTokens* ids);

// Where the GGUF layout keeps the tower: "mmproj-<name>" beside the text model, as llama.cpp
// users name it (glm_mmproj_synth.cpp).
std::string glm_mmproj_path(const std::string& text_gguf_path);
// llama.cpp's mmproj GGUF of the tower (projector "glm4v"), F32, with the values of the HF
// tower under recipe `r`.
Status write_glm_mmproj(const std::string& path, const GlmVisionShape& v, int32_t out_hidden, const WeightRecipe& r);

}  // namespace tdm::synth
