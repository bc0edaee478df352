// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/synth/glm_mmproj_synth.cpp: the vision tower of a synthetic GLM-OCR as
// llama.cpp's converter writes it for GGUF users: a separate mmproj file (general.architecture
// "clip", projector "glm4v"; conversion/qwen3vl.py Glm4VVisionModel, tools/mtmd/clip.cpp). The
// Conv3d patch embedding is split along its two frames into v.patch_embd.weight and
// v.patch_embd.weight.1; the rest keeps its layout under llama.cpp's names. Values are the HF
// tower's (glm_vision_tensors), so both layouts hold the same weights.
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "common/quant.h"
#include "glm-ocr/synth/glm_vision_synth.h"
#include "writers/gguf_writer.h"

namespace tdm::synth {
namespace {

constexpr uint32_t kF32 = 0;  // ggml type id

// The GGUF name of an HF tower tensor (after "model.visual.").
std::string gguf_name(std::string hf) {
    hf = hf.substr(std::string("model.visual.").size());
    static const std::map<std::string, std::string> kTop = {
        {"patch_embed.proj.bias", "v.patch_embd.bias"},
        {"post_layernorm.weight", "v.post_ln.weight"},
        {"downsample.weight", "mm.patch_merger.weight"},
        {"downsample.bias", "mm.patch_merger.bias"},
        {"merger.proj.weight", "mm.model.fc.weight"},
        {"merger.post_projection_norm.weight", "mm.post_norm.weight"},
        {"merger.post_projection_norm.bias", "mm.post_norm.bias"},
        {"merger.gate_proj.weight", "mm.gate.weight"},
        {"merger.up_proj.weight", "mm.up.weight"},
        {"merger.down_proj.weight", "mm.down.weight"},
    };
    if (auto it = kTop.find(hf); it != kTop.end()) return it->second;
    static const std::map<std::string, std::string> kBlock = {
        {"norm1.weight", "ln1.weight"},           {"norm2.weight", "ln2.weight"},
        {"attn.qkv.weight", "attn_qkv.weight"},   {"attn.qkv.bias", "attn_qkv.bias"},
        {"attn.proj.weight", "attn_out.weight"},  {"attn.proj.bias", "attn_out.bias"},
        {"attn.q_norm.weight", "attn_q_norm.weight"}, {"attn.k_norm.weight", "attn_k_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},  {"mlp.gate_proj.bias", "ffn_gate.bias"},
        {"mlp.up_proj.weight", "ffn_up.weight"},      {"mlp.up_proj.bias", "ffn_up.bias"},
        {"mlp.down_proj.weight", "ffn_down.weight"},  {"mlp.down_proj.bias", "ffn_down.bias"},
    };
    const size_t dot = hf.find('.', 7);  // "blocks.N."
    return "v.blk." + hf.substr(7, dot - 7) + "." + kBlock.at(hf.substr(dot + 1));
}

}  // namespace

std::string glm_mmproj_path(const std::string& text_gguf_path) {
    const std::filesystem::path p(text_gguf_path);
    return (p.parent_path() / ("mmproj-" + p.filename().string())).string();
}

Status write_glm_mmproj(const std::string& path, const GlmVisionShape& v, int32_t out_hidden, const WeightRecipe& r) {
    TDM_TRY(validate_glm_vision(v, out_hidden));
    GgufWriter w;
    w.add_string("general.architecture", "clip");
    w.add_string("general.type", "mmproj");
    w.add_string("general.name", "tandem synthetic glm-ocr vision");
    w.add_bool("clip.has_vision_encoder", true);
    w.add_string("clip.projector_type", "glm4v");
    w.add_bool("clip.use_silu", true);
    w.add_u32("clip.vision.projection_dim", uint32_t(out_hidden));
    w.add_u32("clip.vision.image_size", 336);
    w.add_u32("clip.vision.patch_size", uint32_t(v.patch));
    w.add_u32("clip.vision.embedding_length", uint32_t(v.hidden));
    w.add_u32("clip.vision.feed_forward_length", uint32_t(v.intermediate));
    w.add_u32("clip.vision.block_count", uint32_t(v.depth));
    w.add_u32("clip.vision.attention.head_count", uint32_t(v.heads));
    w.add_f32("clip.vision.attention.layer_norm_epsilon", float(v.rms_eps));
    w.add_array("clip.vision.image_mean", std::vector<float>{0.48145466f, 0.4578275f, 0.40821073f});
    w.add_array("clip.vision.image_std", std::vector<float>{0.26862954f, 0.26130258f, 0.27577711f});
    for (const GlmVisionTensor& t : glm_vision_tensors(v, out_hidden)) {
        const SynthParam& p = t.p;
        std::vector<float> values(size_t(p.rows * p.cols));
        fill_rows(p, r, 0, p.rows, values.data());
        std::vector<int64_t> ne(t.shape.rbegin(), t.shape.rend());  // ggml order
        if (p.hf_name == "model.visual.patch_embed.proj.weight") {
            // [D][C][T][ps][ps] -> per frame f: [D][C][ps][ps]
            const int64_t D = t.shape[0], C = t.shape[1], T = t.shape[2], pp = t.shape[3] * t.shape[4];
            for (int64_t f = 0; f < T; ++f) {
                std::vector<float> frame(size_t(D * C * pp));
                for (int64_t d = 0; d < D; ++d)
                    for (int64_t c = 0; c < C; ++c)
                        std::copy_n(values.begin() + ((d * C + c) * T + f) * pp, pp, frame.begin() + (d * C + c) * pp);
                TDM_TRY_CTX(w.add_tensor(f ? "v.patch_embd.weight." + std::to_string(f) : "v.patch_embd.weight", kF32,
                                         {t.shape[4], t.shape[3], C, D},
                                         quantize_matrix(DType::F32, frame.data(), D * C, pp)),
                            path);
            }
            continue;
        }
        TDM_TRY_CTX(w.add_tensor(gguf_name(p.hf_name), kF32, std::move(ne),
                                 quantize_matrix(DType::F32, values.data(), p.rows, p.cols)),
                    path);
    }
    return w.write_file(path);
}

}  // namespace tdm::synth
