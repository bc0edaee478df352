// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/vision/vision_create.cpp: the encoder's create (hyper-parameters from the HF
// directory's config.json or llama.cpp's mmproj GGUF), load (model.visual.* or v.* / mm.* ->
// weights), positions (GLM-4V's rule, spec §2.2) and destroy callbacks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "../text/arch.h"
#include "vision.h"

namespace glm {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;
using tdm::sdk::TensorName;
using tdm::sdk::WeightLoader;

constexpr uint32_t kMaxWidth = 1u << 16;

// What both layouts must agree on once read.
tdm_status check_hparams(const HparamReader& top, uint32_t target_embd, GlmVisionHparams* hp) {
    const Err err = top.err();
    if (hp->hidden % hp->heads)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: vision hidden size %u is not a multiple of %u heads", top.path(),
                        hp->hidden, hp->heads);
    hp->head_dim = hp->hidden / hp->heads;
    // the 2-D rope gives head_dim / 4 frequencies to each axis; the ops want multiples of 4
    if (hp->head_dim % 8)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: vision head_dim %u is not a multiple of 8", top.path(), hp->head_dim);
    if (hp->out_hidden != target_embd)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: the vision tower's out_hidden_size (projection_dim) %u differs from the text model's "
                        "hidden size %u: an encoder for another model",
                        top.path(), hp->out_hidden, target_embd);
    hp->merger_intermediate = hp->out_hidden * hp->in_channels;
    return TDM_OK;
}

// HF: config.json's vision_config and the image token ids.
tdm_status read_hf_hparams(const HparamReader& top, uint32_t target_embd, uint32_t n_vocab, GlmVisionHparams* hp) {
    const Err err = top.err();
    if (!top.has("vision_config.depth"))
        return err.fail(TDM_ERR_NOT_FOUND,
                        "%s has no vision tower (no vision_config in config.json): it takes text only. The HF "
                        "checkpoint zai-org/GLM-OCR holds the tower (model.visual.*); for a GGUF model pass "
                        "llama.cpp's mmproj file with --mmproj",
                        top.path());
    const HparamReader v = top.with_prefix("vision_config.");
    TDM_SDK_TRY(v.u32("depth", 1, 256, &hp->depth));
    TDM_SDK_TRY(v.u32("hidden_size", 4, kMaxWidth, &hp->hidden));
    TDM_SDK_TRY(v.u32("num_heads", 1, 1024, &hp->heads));
    TDM_SDK_TRY(v.u32("intermediate_size", 1, kMaxWidth * 8, &hp->intermediate));
    TDM_SDK_TRY(v.u32_or("out_hidden_size", 4, kMaxWidth, target_embd, &hp->out_hidden));
    TDM_SDK_TRY(v.u32_or("in_channels", 3, 3, 3, &hp->in_channels));
    TDM_SDK_TRY(v.u32_or("patch_size", 1, 64, 14, &hp->patch));
    TDM_SDK_TRY(v.u32_or("temporal_patch_size", 1, 8, 2, &hp->temporal_patch));
    TDM_SDK_TRY(v.u32_or("spatial_merge_size", 1, 8, 2, &hp->merge));
    TDM_SDK_TRY(v.f32_or("rms_norm_eps", 1e-12, 1.0, 1e-5f, &hp->rms_eps));
    const char* act = "silu";
    TDM_SDK_TRY(v.string_or("hidden_act", "silu", &act));
    if (std::string(act) != "silu")
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: vision_config.hidden_act '%s': GLM-OCR's tower uses silu", top.path(),
                        act);
    TDM_SDK_TRY(check_hparams(top, target_embd, hp));
    int64_t image = 0, begin = -1, end = -1;
    TDM_SDK_TRY(top.i64("image_token_id", 0, int64_t(n_vocab) - 1, &image));
    TDM_SDK_TRY(top.i64_or("image_start_token_id", -1, int64_t(n_vocab) - 1, -1, &begin));
    TDM_SDK_TRY(top.i64_or("image_end_token_id", -1, int64_t(n_vocab) - 1, -1, &end));
    hp->image_token = int32_t(image);
    hp->image_begin = int32_t(begin);
    hp->image_end = int32_t(end);
    return TDM_OK;
}

// GGUF: llama.cpp's mmproj (general.architecture clip, projector glm4v; conversion/qwen3vl.py
// Glm4VVisionModel). GLM-OCR's tower has q/k norms and no learned position embeddings; GLM-4.1V's
// and GLM-4.6V's have them the other way round.
tdm_status read_gguf_hparams(const HparamReader& top, uint32_t target_embd, GlmVisionHparams* hp) {
    const Err err = top.err();
    const tdm_host_api* host = top.host();
    const tdm_model_source* src = top.source();
    const char* arch = "";
    TDM_SDK_TRY(top.string_or("general.architecture", "", &arch));
    if (std::string(arch) == "glm4")
        return err.fail(TDM_ERR_NOT_FOUND,
                        "%s holds the text model only: a GGUF GLM-OCR keeps its vision tower in llama.cpp's mmproj "
                        "file (mmproj-*.gguf); pass it with --mmproj",
                        top.path());
    if (std::string(arch) != "clip")
        return err.fail(TDM_ERR_NOT_FOUND,
                        "%s is not an mmproj file (general.architecture is '%s', not 'clip'): GLM-OCR's vision tower "
                        "comes as llama.cpp's mmproj GGUF or inside the HF directory",
                        top.path(), arch);
    const char* projector = "";
    TDM_SDK_TRY(top.string_or("clip.projector_type", "", &projector));
    if (std::string(projector) != "glm4v")
        return err.fail(TDM_ERR_BAD_MODEL, "%s: projector type '%s' is not GLM-OCR's (glm4v): an mmproj of another model",
                        top.path(), projector);
    tdm_tensor_info ti{};
    ti.struct_size = sizeof ti;
    if (host->tensor_info(src, "v.position_embd.weight", &ti) == TDM_OK)
        return err.fail(TDM_ERR_UNSUPPORTED,
                        "%s: a GLM-4.1V/4.6V vision tower (learned position embeddings); glm-ocr-vision reads "
                        "GLM-OCR's",
                        top.path());
    if (host->tensor_info(src, "v.patch_embd.weight.1", &ti) != TDM_OK)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: no v.patch_embd.weight.1 (the Conv3d's second frame)", top.path());
    const HparamReader v = top.with_prefix("clip.vision.");
    TDM_SDK_TRY(v.u32("block_count", 1, 256, &hp->depth));
    TDM_SDK_TRY(v.u32("embedding_length", 4, kMaxWidth, &hp->hidden));
    TDM_SDK_TRY(v.u32("attention.head_count", 1, 1024, &hp->heads));
    TDM_SDK_TRY(v.u32("feed_forward_length", 1, kMaxWidth * 8, &hp->intermediate));
    TDM_SDK_TRY(v.u32("projection_dim", 4, kMaxWidth, &hp->out_hidden));
    TDM_SDK_TRY(v.u32_or("patch_size", 1, 64, 14, &hp->patch));
    TDM_SDK_TRY(v.u32_or("spatial_merge_size", 1, 8, 2, &hp->merge));  // not written by the converter: 2
    TDM_SDK_TRY(v.f32_or("attention.layer_norm_epsilon", 1e-12, 1.0, 1e-5f, &hp->rms_eps));
    hp->temporal_patch = 2;
    hp->in_channels = 3;
    return check_hparams(top, target_embd, hp);
}

}  // namespace

tdm_status glm_vision_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                             const tdm_options*, tdm_encoder_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "glm-ocr-vision: create", [&]() -> tdm_status {
        const GlmModel* t = static_cast<const GlmModel*>(target);
        if (!t) return e.fail(TDM_ERR_INVALID_ARGUMENT, "glm-ocr-vision feeds GLM-OCR models of this plugin only");
        const HparamReader top(host, src, e);
        auto v = std::make_unique<GlmVision>();
        v->host = host;
        v->ext = static_cast<const tdm_ext_encoder*>(
            host->get_extension(TDM_EXT_ENCODER, TDM_EXT_ENCODER_VERSION, nullptr));
        if (!v->ext) return e.fail(TDM_ERR_UNSUPPORTED, "this host offers no tdm.encoder extension");
        v->gguf = host->source_format(src) != TDM_SOURCE_SAFETENSORS;
        if (v->gguf)
            TDM_SDK_TRY(read_gguf_hparams(top, t->hp.n_embd, &v->hp));
        else
            TDM_SDK_TRY(read_hf_hparams(top, t->hp.n_embd, t->hp.n_vocab, &v->hp));
        const GlmVisionHparams& hp = v->hp;
        tdm_encoder_info mine{};
        mine.n_embd = hp.out_hidden;
        mine.patch_size = hp.patch;
        mine.merge_size = hp.merge;
        mine.temporal_patch = hp.temporal_patch;
        mine.in_channels = hp.in_channels;
        // Glm46VImageProcessor: a budget of 12544 .. 9633792 pixels over two frames (spec §5)
        mine.min_pixels = 12544;
        mine.max_pixels = 9633792;
        const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
        for (int c = 0; c < 3; ++c) mine.image_mean[c] = mean[c], mine.image_std[c] = std[c];
        mine.image_begin_token = hp.image_begin;
        mine.image_token = hp.image_token;
        mine.image_end_token = hp.image_end;
        // an mmproj file has no vocabulary: the host finds GLM-OCR's image tokens by their text
        mine.image_begin_text = "<|begin_of_image|>";
        mine.image_text = "<|image|>";
        mine.image_end_text = "<|end_of_image|>";
        std::memcpy(reinterpret_cast<char*>(info) + sizeof info->struct_size,
                    reinterpret_cast<const char*>(&mine) + sizeof mine.struct_size,
                    std::min<size_t>(info->struct_size, sizeof mine) - sizeof mine.struct_size);
        *out = v.release();
        return TDM_OK;
    });
}

tdm_status glm_vision_load(void* encoder, tdm_loader* loader, char* err, size_t err_size) {
    const Err e(err, err_size);
    GlmVision* v = static_cast<GlmVision*>(encoder);
    return tdm::sdk::guard(e, "glm-ocr-vision: load", [&]() -> tdm_status {
        const GlmVisionHparams& hp = v->hp;
        const int64_t D = hp.hidden, I = hp.intermediate, O = hp.out_hidden, MI = hp.merger_intermediate;
        const int64_t hd = hp.head_dim, m2 = int64_t(hp.merge) * hp.merge;
        // tensor names: HF (model.visual.*) and llama.cpp's mmproj (v.*, mm.*)
        const WeightLoader L(v->host, loader, !v->gguf, e);
        auto name = [](const char* hf, const char* gguf) { return TensorName{gguf, hf}; };
        auto vec = [](const char* hf, const char* gguf) { return TensorName{gguf, hf, TDM_WEIGHT_F32}; };  // norms, biases
        if (v->gguf) {
            // two Conv2d [D, C, ps, ps] (the Conv3d's frames), each one matmul over a frame's values
            const int64_t per_frame = int64_t(hp.in_channels) * hp.patch * hp.patch;
            TDM_SDK_TRY(L.request("v.patch_embd.weight", {per_frame, D}).flags(TDM_WEIGHT_FLATTEN).load(&v->patch_embed));
            TDM_SDK_TRY(
                L.request("v.patch_embd.weight.1", {per_frame, D}).flags(TDM_WEIGHT_FLATTEN).load(&v->patch_embed1));
        } else {
            // Conv3d [D, C, T, ps, ps] with kernel = stride: one matmul per patch (values in the
            // patch's (channel, frame, y, x) order, as the kernel is flattened)
            TDM_SDK_TRY(L.request("model.visual.patch_embed.proj.weight", {int64_t(hp.values_per_patch()), D})
                            .flags(TDM_WEIGHT_FLATTEN)
                            .load(&v->patch_embed));
        }
        TDM_SDK_TRY(L.get(vec("model.visual.patch_embed.proj.bias", "v.patch_embd.bias"), {D}, &v->patch_bias));
        v->blocks.resize(hp.depth);
        const WeightLoader B = L.with_prefix("v.blk.%d.", "model.visual.blocks.%d.");
        for (uint32_t i = 0; i < hp.depth; ++i) {
            GlmVisionBlock& b = v->blocks[i];
            const WeightLoader Bi = B.at_layer(int(i));
            TDM_SDK_TRY(Bi.get(vec("norm1.weight", "ln1.weight"), {D}, &b.norm1));
            TDM_SDK_TRY(Bi.get(vec("norm2.weight", "ln2.weight"), {D}, &b.norm2));
            TDM_SDK_TRY(Bi.get(name("attn.qkv.weight", "attn_qkv.weight"), {D, 3 * D}, &b.qkv));
            TDM_SDK_TRY(Bi.get(vec("attn.qkv.bias", "attn_qkv.bias"), {3 * D}, &b.qkv_bias));
            TDM_SDK_TRY(Bi.get(name("attn.proj.weight", "attn_out.weight"), {D, D}, &b.proj));
            TDM_SDK_TRY(Bi.get(vec("attn.proj.bias", "attn_out.bias"), {D}, &b.proj_bias));
            TDM_SDK_TRY(Bi.get(vec("attn.q_norm.weight", "attn_q_norm.weight"), {hd}, &b.q_norm));
            TDM_SDK_TRY(Bi.get(vec("attn.k_norm.weight", "attn_k_norm.weight"), {hd}, &b.k_norm));
            TDM_SDK_TRY(Bi.get(name("mlp.gate_proj.weight", "ffn_gate.weight"), {D, I}, &b.gate));
            TDM_SDK_TRY(Bi.get(vec("mlp.gate_proj.bias", "ffn_gate.bias"), {I}, &b.gate_bias));
            TDM_SDK_TRY(Bi.get(name("mlp.up_proj.weight", "ffn_up.weight"), {D, I}, &b.up));
            TDM_SDK_TRY(Bi.get(vec("mlp.up_proj.bias", "ffn_up.bias"), {I}, &b.up_bias));
            TDM_SDK_TRY(Bi.get(name("mlp.down_proj.weight", "ffn_down.weight"), {I, D}, &b.down));
            TDM_SDK_TRY(Bi.get(vec("mlp.down_proj.bias", "ffn_down.bias"), {D}, &b.down_bias));
        }
        TDM_SDK_TRY(L.get(vec("model.visual.post_layernorm.weight", "v.post_ln.weight"), {D}, &v->post_norm));
        // Conv2d [O, D, m, m] over a merge block: its kernel flattens over (channel, y, x), while
        // the block's input, its m*m patches of D channels one after another, runs over
        // (patch, channel): column (patch j, channel c) reads kernel column c * m*m + j.
        std::vector<int64_t> perm(size_t(m2 * D));
        for (int64_t j = 0; j < m2; ++j)
            for (int64_t c = 0; c < D; ++c) perm[size_t(j * D + c)] = c * m2 + j;
        TDM_SDK_TRY(L.request(name("model.visual.downsample.weight", "mm.patch_merger.weight"), {m2 * D, O})
                        .flags(TDM_WEIGHT_FLATTEN)
                        .col_perm(perm)
                        .load(&v->downsample));
        TDM_SDK_TRY(L.get(vec("model.visual.downsample.bias", "mm.patch_merger.bias"), {O}, &v->downsample_bias));
        TDM_SDK_TRY(L.get(name("model.visual.merger.proj.weight", "mm.model.fc.weight"), {O, O}, &v->merger_proj));
        TDM_SDK_TRY(L.get(vec("model.visual.merger.post_projection_norm.weight", "mm.post_norm.weight"), {O},
                          &v->merger_norm));
        TDM_SDK_TRY(L.get(vec("model.visual.merger.post_projection_norm.bias", "mm.post_norm.bias"), {O},
                          &v->merger_norm_bias));
        TDM_SDK_TRY(L.get(name("model.visual.merger.gate_proj.weight", "mm.gate.weight"), {O, MI}, &v->merger_gate));
        TDM_SDK_TRY(L.get(name("model.visual.merger.up_proj.weight", "mm.up.weight"), {O, MI}, &v->merger_up));
        TDM_SDK_TRY(L.get(name("model.visual.merger.down_proj.weight", "mm.down.weight"), {MI, O}, &v->merger_down));
        // The 2-D rope (GlmOcrVisionRotaryEmbedding): slot i < hd/4 turns with the patch row at
        // theta^(-2i / (hd/2)), slot hd/4 + i with its column at the same frequency. The rope op
        // gives slot i theta^(-2i / hd) over sections of streams; these divisors make up the
        // difference.
        const uint32_t half = uint32_t(hd / 2), quarter = uint32_t(hd / 4);
        std::vector<float> ff(half);
        for (uint32_t i = 0; i < half; ++i)
            ff[i] = float(std::pow(double(hp.rope_theta), -2.0 * i / double(hd)) /
                          std::pow(double(hp.rope_theta), -2.0 * (i % quarter) / double(half)));
        if (v->ext->load_f32(loader, "vision rope frequency divisors", ff.data(), int64_t(half), 1, &v->rope_ff) !=
            TDM_OK)
            return e.fail(TDM_ERR_INTERNAL, "vision rope divisors: %s", v->host->last_error());
        return TDM_OK;
    });
}

tdm_status glm_vision_positions(void* encoder, const tdm_encoder_batch* batch, int32_t* thw, int32_t* advance,
                                char* err, size_t err_size) {
    const GlmVision* v = static_cast<const GlmVision*>(encoder);
    const uint32_t m = v->hp.merge;
    if (batch->grid_t != 1)
        return tdm::sdk::fail(err, err_size, TDM_ERR_UNSUPPORTED, "glm-ocr-vision: still images only (grid_t %u)",
                              batch->grid_t);
    // spec §2.2: the image's rows in row-major order of its merged grid sit at (p, p + row,
    // p + col); the text after it continues at p + max(rows, cols)
    const uint32_t gh = batch->grid_h / m, gw = batch->grid_w / m;
    for (uint32_t r = 0; r < gh * gw; ++r) {
        thw[3 * r] = 0;
        thw[3 * r + 1] = int32_t(r / gw);
        thw[3 * r + 2] = int32_t(r % gw);
    }
    *advance = int32_t(gh > gw ? gh : gw);
    return TDM_OK;
}

void glm_vision_destroy(void* encoder) { delete static_cast<GlmVision*>(encoder); }

}  // namespace glm
