/* SPDX-License-Identifier: Apache-2.0 */
// plugins/glm-ocr/synth/glm_synth.h: synthetic GLM-OCR text decoders (+ the NextN/MTP layer),
// written in the layouts real files have: a GGUF as llama.cpp's converter writes GLM-OCR
// (arch glm4, q/k rows permuted into NeoX order because the model has M-RoPE sections, the MTP
// layer as blk.N.nextn.* + blk.N.*), and an HF directory as the checkpoint ships
// (GlmOcrForConditionalGeneration: config.json with text_config, model.language_model.*,
// lm_head, the MTP layer as model.language_model.layers.N.*). Same values in both layouts.
// With a vision shape, the HF directory also holds the vision tower (glm_vision_synth.h).
//
// Values are those of host/synth/synth_weights.h (a pure function of seed, tensor name and
// element index; the GGUF name of the HF-order tensor names the stream). The MTP layer carries
// its own embedding and LM head (as the checkpoint does): values of their own, so that a head
// that read the trunk's instead would draft differently; in repeating mode, the trunk's values.
// Repeating mode: every residual output (o_proj, down_proj) is zero, so the residual stream
// is the token's embedding code and the greedy successor of t is repeat_successor(t); the MTP
// layer's eh_proj is [I | I/4], so the head drafts that same successor.
#pragma once

#include "common/dtype.h"
#include "common/error.h"
#include "glm-ocr/synth/glm_vision_synth.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::synth {

struct GlmShape {
    int32_t n_vocab = 0;
    int32_t n_embd = 0;
    int32_t n_layer = 0;      // trunk layers (num_hidden_layers)
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;     // rotated in full (partial_rotary_factor 1)
    int32_t n_ff = 0;         // intermediate_size; gate_up_proj has 2 * n_ff rows
    int32_t n_ctx_train = 0;
    std::array<int32_t, 3> sections = {0, 0, 0};  // M-RoPE (t, h, w) frequency slots, sum head_dim / 2
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    bool mtp = true;          // write the NextN/MTP layer
    GlmVisionShape vision;    // depth 0: no vision tower (HF layout only; glm_vision_synth.h)
};

// "tiny" (default), "small", "glm-ocr" (the real GLM-OCR text shape, docs/models/glm-ocr.md §1).
Result<GlmShape> glm_preset(std::string_view name);
std::vector<std::string_view> glm_preset_names();

struct GlmSynthOptions {
    DType weight_type = DType::F32;  // matrices; norms are F32 in GGUF
    uint64_t seed = 1;
    bool repeating = false;
    int32_t repeat_period = 5;
    std::string name;                // general.name; "" = "tandem synthetic glm-ocr"
    bool mtp_copies = true;          // write the MTP layer's own embed_tokens and shared_head.head
    bool attn_bias = false;          // q/k/v biases, as GLM-4-0414 and GLM-4 chat files have
    int n_threads = 0;
};

Status validate_glm(const GlmShape& shape, const GlmSynthOptions& opts);

// The GGUF row order of HF row r of a q or k projection: within each head, HF's pairs
// (2i, 2i+1) become NeoX's (i, i + head_dim/2), as llama.cpp's converter permutes them.
int64_t glm_neox_row(int64_t hf_row, int64_t head_dim);

// Repeating mode: the greedy successor of token (any id in [0, n_vocab)).
int32_t glm_repeat_successor(const GlmShape& shape, const GlmSynthOptions& opts, int32_t token);

Status synth_glm_gguf(const std::string& path, const GlmShape& shape, const GlmSynthOptions& opts);
// weight_type must be F32, F16 or BF16.
Status synth_glm_hf(const std::string& dir, const GlmShape& shape, const GlmSynthOptions& opts);

}  // namespace tdm::synth
