/* SPDX-License-Identifier: Apache-2.0 */
// plugins/glm-ocr/vision/vision.h: GLM-OCR's vision tower as the encoder "glm-ocr-vision"
// (tdm.encoder, tandem/ext/encoder.h), docs/models/glm-ocr.md §5: patch embedding (the Conv3d as
// one matmul per patch), blocks of biased fused qkv with per-head q/k RMSNorm and the 2-D
// rope, full attention within the image, biased SwiGLU; post_layernorm; the 2x2 downsample
// (the Conv2d as one matmul per merge block); the merger (proj, LayerNorm, exact GELU,
// SwiGLU). Weights come from the HF directory (model.visual.*, GlmOcrForConditionalGeneration).
// Shapes are in ggml order (ne0 first).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/encoder.h>
#include <tandem/graph.h>

#include <vector>

namespace glm {

struct GlmVisionHparams {
    uint32_t depth = 0, hidden = 0, heads = 0, head_dim = 0, intermediate = 0;
    uint32_t out_hidden = 0, merger_intermediate = 0;  // the merger's SwiGLU: out_hidden * in_channels
    uint32_t patch = 0, temporal_patch = 0, merge = 0, in_channels = 3;
    float rms_eps = 1e-5f;
    float ln_eps = 1e-5f;        // the merger's nn.LayerNorm default
    float rope_theta = 10000.0f; // GlmOcrVisionRotaryEmbedding's default
    int32_t image_begin = -1, image_token = -1, image_end = -1;
    uint32_t values_per_patch() const { return in_channels * temporal_patch * patch * patch; }
};

struct GlmVisionBlock {
    const tdm_weight* norm1 = nullptr;
    const tdm_weight* norm2 = nullptr;
    const tdm_weight* qkv = nullptr;       // [hidden, 3 * hidden]: q rows, k rows, v rows
    const tdm_weight* qkv_bias = nullptr;
    const tdm_weight* proj = nullptr;
    const tdm_weight* proj_bias = nullptr;
    const tdm_weight* q_norm = nullptr;    // [head_dim]
    const tdm_weight* k_norm = nullptr;
    const tdm_weight* gate = nullptr;      // [hidden, intermediate]
    const tdm_weight* gate_bias = nullptr;
    const tdm_weight* up = nullptr;
    const tdm_weight* up_bias = nullptr;
    const tdm_weight* down = nullptr;      // [intermediate, hidden]
    const tdm_weight* down_bias = nullptr;
};

struct GlmVision {
    const tdm_host_api* host = nullptr;
    const tdm_ext_encoder* ext = nullptr;
    bool gguf = false;  // llama.cpp's mmproj file (names v.*, mm.*), else the HF directory (model.visual.*)
    GlmVisionHparams hp;
    // HF: the Conv3d as one matrix [values_per_patch, hidden] over (channel, frame, y, x).
    // GGUF: split by frame as llama.cpp stores it, [channels * patch^2, hidden] each.
    const tdm_weight* patch_embed = nullptr;
    const tdm_weight* patch_embed1 = nullptr;      // GGUF: the second frame's
    const tdm_weight* patch_bias = nullptr;
    const tdm_weight* rope_ff = nullptr;           // [head_dim / 2] frequency divisors (see forward)
    std::vector<GlmVisionBlock> blocks;
    const tdm_weight* post_norm = nullptr;
    const tdm_weight* downsample = nullptr;        // [merge^2 * hidden, out_hidden], columns (patch, channel)
    const tdm_weight* downsample_bias = nullptr;
    const tdm_weight* merger_proj = nullptr;       // [out_hidden, out_hidden]
    const tdm_weight* merger_norm = nullptr;       // LayerNorm weight and bias
    const tdm_weight* merger_norm_bias = nullptr;
    const tdm_weight* merger_gate = nullptr;       // [out_hidden, merger_intermediate]
    const tdm_weight* merger_up = nullptr;
    const tdm_weight* merger_down = nullptr;       // [merger_intermediate, out_hidden]
};

// The ops the tower builds from (init refuses to register the encoder without them).
tdm_status glm_vision_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);

// tdm_encoder_desc callbacks (vision_create.cpp, vision_forward.cpp).
tdm_status glm_vision_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                             const tdm_options* options, tdm_encoder_info* info, void** encoder, char* err,
                             size_t err_size);
tdm_status glm_vision_load(void* encoder, tdm_loader* loader, char* err, size_t err_size);
tdm_status glm_vision_build_graph(void* encoder, tdm_graph* g, const tdm_encoder_batch* batch, char* err,
                                  size_t err_size);
tdm_status glm_vision_positions(void* encoder, const tdm_encoder_batch* batch, int32_t* thw, int32_t* advance,
                                char* err, size_t err_size);
void glm_vision_destroy(void* encoder);

}  // namespace glm
