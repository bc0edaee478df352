/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/glm_vision_reference.h: an independent plain C++ reference of the GLM-OCR vision
// encoder (docs/models/glm-ocr.md §5), written from the spec and from transformers'
// models/glm_ocr/modeling_glm_ocr.py (GlmOcrVisionModel.forward, the generated file) and
// configuration_glm_ocr.py, never from the runtime's code. It is what the GPU encoder is checked
// against. Everything is computed in double and returned as float; nothing here is fast.
//
//   GlmVisionConfig cfg = GlmVisionConfig::glm_ocr();          // or a tiny test config
//   MapVisionWeights w = MapVisionWeights::synthetic(cfg, 7);  // or fill with set() from a file
//   Floats emb = glm_vision_forward(cfg, w, patches.values, grid_h, grid_w);
//   // emb: [grid_h * grid_w / 4][out_hidden], one row per <|image|> placeholder, in order
//
// The input is the image processor's output for ONE still image (grid_t = 1), as ImagePatches
// (host/image/patch_processor.h) holds it: grid_h * grid_w patches in merge-block order (block
// row, block column, row in block, column in block), each in_channels * temporal_patch * patch *
// patch values ordered (channel, temporal, py, px). Several images are encoded one call each: HF
// packs them but attends only within an image (cu_seqlens), which is the same thing.
//
// The pipeline (N = grid_h * grid_w patches, D = hidden, H heads of hd = D / H):
//   x = patch_embed(p)                 Conv3d [D, C, T, ps, ps] + bias = one matmul per patch
//   24 x:  a = rms(x, norm1); q, k, v = split(qkv(a)) (biased; q, k, v each [H][hd])
//          q = rope(rms(q, q_norm)); k = rope(rms(k, k_norm))     per-head norm BEFORE the rope
//          x += proj(softmax(q k^T / sqrt(hd)) v)                 all N patches see each other
//          m = rms(x, norm2); x += down(silu(gate(m)) * up(m))    all three biased
//   x = rms(x, post_layernorm)
//   y = downsample(x)                  Conv2d [O, D, 2, 2] + bias over each run of 4 patches
//   out = merger(y):  h = gelu_erf(layer_norm(proj(y)));  down(silu(gate(h)) * up(h))
//                                      proj/gate/up/down without bias; LayerNorm with bias
// The 2-D rope: patch (row, col); f_j = theta^(-4j / hd), j < hd/4; angles
// a = [row f_0..row f_{hd/4-1}, col f_0..col f_{hd/4-1}] (hd/2 values), emb = cat(a, a), and
// out = q cos(emb) + rotate_half(q) sin(emb) with rotate_half(q) = cat(-q[hd/2:], q[:hd/2]):
// dims (d, d + hd/2) rotate together by row f_d (d < hd/4) or col f_{d-hd/4} (hd/4 <= d < hd/2).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace tdm::ref {

using Floats = std::vector<float>;

struct GlmVisionConfig {
    int depth = 24;
    int hidden = 1024;        // hidden_size
    int heads = 16;           // num_heads
    int intermediate = 4096;  // intermediate_size: each block's SwiGLU width
    int out_hidden = 1536;    // out_hidden_size: the downsample's outputs, the language model's width
    int in_channels = 3;
    int patch = 14;           // patch_size
    int temporal_patch = 2;   // temporal_patch_size
    int merge = 2;            // spatial_merge_size
    double rms_eps = 1e-5;    // rms_norm_eps: norm1, norm2, q_norm, k_norm, post_layernorm
    double ln_eps = 1e-5;     // the merger's torch.nn.LayerNorm default; not from the config
    double rope_theta = 1e4;  // GlmOcrVisionRotaryEmbedding's default; not from the config

    // zai-org/GLM-OCR's vision_config (configuration_glm_ocr.py defaults = the checkpoint's).
    static GlmVisionConfig glm_ocr() { return {}; }

    // Derived exactly as HF derives them, so that no config HF cannot express is representable.
    int head_dim() const { return hidden / heads; }
    // The merger's SwiGLU width: HF passes context_dim = out_hidden_size * in_channels (4608).
    int merger_intermediate() const { return out_hidden * in_channels; }
    int patch_values() const { return in_channels * temporal_patch * patch * patch; }
};

// Throws std::invalid_argument when HF's module shapes would not work out: hidden not a
// multiple of heads, head_dim not a multiple of 4 (the rope gives hd/4 frequencies to each axis).
void check_config(const GlmVisionConfig& cfg);

// ===== weights ==================================================================================

struct VisionTensorSpec {
    std::string name;            // Hugging Face name, e.g. "model.visual.blocks.0.attn.qkv.weight"
    std::vector<int64_t> shape;  // torch order, e.g. {3 * hidden, hidden}
};

// Every tensor the encoder reads, in module order. All hold row-major float values in torch
// order (Linear weights [out][in], convolutions [out][in][kernel...]).
std::vector<VisionTensorSpec> glm_vision_tensors(const GlmVisionConfig& cfg);

// Where the forward gets its weights from. get() must return the tensor of that HF name, or
// throw when there is none or its shape differs from `shape` (torch order).
class VisionWeights {
public:
    virtual ~VisionWeights() = default;
    virtual const Floats& get(const std::string& hf_name, const std::vector<int64_t>& shape) const = 0;
};

// Weights held in a map. It records which names were read, so a test can check that the
// forward reads exactly the tensors glm_vision_tensors lists.
class MapVisionWeights : public VisionWeights {
public:
    // Throws std::invalid_argument when values.size() is not the product of shape.
    void set(const std::string& hf_name, std::vector<int64_t> shape, Floats values);
    // Throws std::out_of_range (missing) or std::invalid_argument (shape differs), naming the tensor.
    const Floats& get(const std::string& hf_name, const std::vector<int64_t>& shape) const override;
    Floats& mutable_values(const std::string& hf_name);  // throws std::out_of_range when missing

    const std::set<std::string>& names_read() const { return read_; }

    // Every tensor of glm_vision_tensors(cfg), filled with deterministic pseudo-random values
    // that keep activations of order 1: norm weights 1 + U(-0.1, 0.1), biases U(-0.1, 0.1),
    // matrices and kernels U(-1, 1) / sqrt(fan_in). Each tensor depends only on (seed, name).
    static MapVisionWeights synthetic(const GlmVisionConfig& cfg, uint64_t seed);

private:
    struct Tensor {
        std::vector<int64_t> shape;
        Floats values;
    };
    std::map<std::string, Tensor> tensors_;
    mutable std::set<std::string> read_;
};

// ===== the forward ==============================================================================

// The stages of one image, for checking an implementation step by step.
struct GlmVisionStages {
    Floats embedded;     // [N][hidden]   patch_embed output
    Floats post_norm;    // [N][hidden]   after the last block and post_layernorm
    Floats downsampled;  // [N/4][out_hidden]  HF's last_hidden_state
    Floats merged;       // [N/4][out_hidden]  HF's pooler_output: the image embeddings
};

// The encoder over one still image (see the top of this file). patches holds grid_h * grid_w *
// cfg.patch_values() floats; grid_h and grid_w must be positive multiples of cfg.merge (throws
// std::invalid_argument otherwise). Returns [grid_h * grid_w / merge^2][out_hidden] row-major.
Floats glm_vision_forward(const GlmVisionConfig& cfg, const VisionWeights& w, std::span<const float> patches,
                          int grid_h, int grid_w);
GlmVisionStages glm_vision_forward_stages(const GlmVisionConfig& cfg, const VisionWeights& w,
                                          std::span<const float> patches, int grid_h, int grid_w);

// ----- pieces of the forward, exposed for the self-tests ----------------------------------------

// (row, col) in patch units of each patch, in the input's merge-block order: patch n lies in
// block n / merge^2 (row-major over the grid_h/merge x grid_w/merge blocks) at (n % merge^2)
// / merge, (n % merge^2) % merge inside it. HF: get_vision_position_ids.
std::vector<std::array<int, 2>> glm_vision_positions(int grid_h, int grid_w, int merge);

// patch_embed alone: [N][hidden], the Conv3d as the matmul of each patch's values with the
// kernel flattened over (channel, temporal, py, px).
Floats glm_vision_patch_embed(const GlmVisionConfig& cfg, const VisionWeights& w, std::span<const float> patches);

// The rope of one head vector (head_dim values, rotated in place) at patch (row, col).
void glm_vision_rope(const GlmVisionConfig& cfg, int row, int col, std::span<double> head);

// Where GlmOcrForConditionalGeneration keeps the encoder (model -> GlmOcrModel.visual): the
// prefix of every name glm_vision_tensors returns.
inline constexpr char kGlmVisionPrefix[] = "model.visual.";

}  // namespace tdm::ref
