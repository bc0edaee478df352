// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/vision/vision_create.cpp: the encoder's create (vision_config and the image
// token ids of config.json), load (model.visual.* -> weights), positions (GLM-4V's rule,
// spec §2.2) and destroy callbacks.
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
using tdm::sdk::WeightLoader;

constexpr uint32_t kMaxWidth = 1u << 16;
constexpr uint32_t kF32 = TDM_WEIGHT_F32;

tdm_status read_hparams(const HparamReader& top, uint32_t target_embd, uint32_t n_vocab, GlmVisionHparams* hp) {
    const Err err = top.err();
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
    if (hp->hidden % hp->heads)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: vision hidden_size %u is not a multiple of num_heads %u", top.path(),
                        hp->hidden, hp->heads);
    hp->head_dim = hp->hidden / hp->heads;
    // the 2-D rope gives head_dim / 4 frequencies to each axis; the ops want multiples of 4
    if (hp->head_dim % 8)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: vision head_dim %u is not a multiple of 8", top.path(), hp->head_dim);
    if (hp->out_hidden != target_embd)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: the vision tower's out_hidden_size %u differs from the text model's hidden size %u",
                        top.path(), hp->out_hidden, target_embd);
    hp->merger_intermediate = hp->out_hidden * hp->in_channels;
    int64_t image = 0, begin = -1, end = -1;
    TDM_SDK_TRY(top.i64("image_token_id", 0, int64_t(n_vocab) - 1, &image));
    TDM_SDK_TRY(top.i64_or("image_start_token_id", -1, int64_t(n_vocab) - 1, -1, &begin));
    TDM_SDK_TRY(top.i64_or("image_end_token_id", -1, int64_t(n_vocab) - 1, -1, &end));
    hp->image_token = int32_t(image);
    hp->image_begin = int32_t(begin);
    hp->image_end = int32_t(end);
    return TDM_OK;
}

}  // namespace

tdm_status glm_vision_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                             const tdm_options*, tdm_encoder_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "glm-ocr-vision: create", [&]() -> tdm_status {
        const char* path = host->source_path(src);
        const GlmModel* t = static_cast<const GlmModel*>(target);
        if (!t) return e.fail(TDM_ERR_INVALID_ARGUMENT, "glm-ocr-vision feeds GLM-OCR models of this plugin only");
        if (host->source_format(src) != TDM_SOURCE_SAFETENSORS)
            return e.fail(TDM_ERR_UNSUPPORTED,
                          "%s: GLM-OCR's vision tower is read from the HF directory (zai-org/GLM-OCR: "
                          "model.visual.* beside the text weights); GGUF mmproj files are not read yet",
                          path);
        const HparamReader top(host, src, e);
        if (!top.has("vision_config.depth"))
            return e.fail(TDM_ERR_NOT_FOUND,
                          "%s has no vision tower (no vision_config in config.json): it takes text only. The HF "
                          "checkpoint zai-org/GLM-OCR holds the tower (model.visual.*)",
                          path);
        auto v = std::make_unique<GlmVision>();
        v->host = host;
        v->ext = static_cast<const tdm_ext_encoder*>(
            host->get_extension(TDM_EXT_ENCODER, TDM_EXT_ENCODER_VERSION, nullptr));
        if (!v->ext) return e.fail(TDM_ERR_UNSUPPORTED, "this host offers no tdm.encoder extension");
        TDM_SDK_TRY(read_hparams(top, t->hp.n_embd, t->hp.n_vocab, &v->hp));
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
        const WeightLoader L = WeightLoader(v->host, loader, true, e).with_prefix("", "model.visual.");
        // Conv3d [D, C, T, ps, ps] with kernel = stride: one matmul per patch (values in the
        // patch's (channel, frame, y, x) order, as the kernel is flattened)
        TDM_SDK_TRY(L.request("patch_embed.proj.weight", {int64_t(hp.values_per_patch()), D})
                        .flags(TDM_WEIGHT_FLATTEN)
                        .load(&v->patch_embed));
        TDM_SDK_TRY(L.request("patch_embed.proj.bias", {D}).flags(kF32).load(&v->patch_bias));
        v->blocks.resize(hp.depth);
        for (uint32_t i = 0; i < hp.depth; ++i) {
            GlmVisionBlock& b = v->blocks[i];
            char p[64];
            std::snprintf(p, sizeof p, "model.visual.blocks.%u.", i);
            const WeightLoader B = WeightLoader(v->host, loader, true, e).with_prefix("", p);
            TDM_SDK_TRY(B.request("norm1.weight", {D}).flags(kF32).load(&b.norm1));
            TDM_SDK_TRY(B.request("norm2.weight", {D}).flags(kF32).load(&b.norm2));
            TDM_SDK_TRY(B.request("attn.qkv.weight", {D, 3 * D}).load(&b.qkv));
            TDM_SDK_TRY(B.request("attn.qkv.bias", {3 * D}).flags(kF32).load(&b.qkv_bias));
            TDM_SDK_TRY(B.request("attn.proj.weight", {D, D}).load(&b.proj));
            TDM_SDK_TRY(B.request("attn.proj.bias", {D}).flags(kF32).load(&b.proj_bias));
            TDM_SDK_TRY(B.request("attn.q_norm.weight", {hd}).flags(kF32).load(&b.q_norm));
            TDM_SDK_TRY(B.request("attn.k_norm.weight", {hd}).flags(kF32).load(&b.k_norm));
            TDM_SDK_TRY(B.request("mlp.gate_proj.weight", {D, I}).load(&b.gate));
            TDM_SDK_TRY(B.request("mlp.gate_proj.bias", {I}).flags(kF32).load(&b.gate_bias));
            TDM_SDK_TRY(B.request("mlp.up_proj.weight", {D, I}).load(&b.up));
            TDM_SDK_TRY(B.request("mlp.up_proj.bias", {I}).flags(kF32).load(&b.up_bias));
            TDM_SDK_TRY(B.request("mlp.down_proj.weight", {I, D}).load(&b.down));
            TDM_SDK_TRY(B.request("mlp.down_proj.bias", {D}).flags(kF32).load(&b.down_bias));
        }
        TDM_SDK_TRY(L.request("post_layernorm.weight", {D}).flags(kF32).load(&v->post_norm));
        // Conv2d [O, D, m, m] over a merge block: its kernel flattens over (channel, y, x), while
        // the block's input, its m*m patches of D channels one after another, runs over
        // (patch, channel): column (patch j, channel c) reads kernel column c * m*m + j.
        std::vector<int64_t> perm(size_t(m2 * D));
        for (int64_t j = 0; j < m2; ++j)
            for (int64_t c = 0; c < D; ++c) perm[size_t(j * D + c)] = c * m2 + j;
        TDM_SDK_TRY(
            L.request("downsample.weight", {m2 * D, O}).flags(TDM_WEIGHT_FLATTEN).col_perm(perm).load(&v->downsample));
        TDM_SDK_TRY(L.request("downsample.bias", {O}).flags(kF32).load(&v->downsample_bias));
        TDM_SDK_TRY(L.request("merger.proj.weight", {O, O}).load(&v->merger_proj));
        TDM_SDK_TRY(L.request("merger.post_projection_norm.weight", {O}).flags(kF32).load(&v->merger_norm));
        TDM_SDK_TRY(L.request("merger.post_projection_norm.bias", {O}).flags(kF32).load(&v->merger_norm_bias));
        TDM_SDK_TRY(L.request("merger.gate_proj.weight", {O, MI}).load(&v->merger_gate));
        TDM_SDK_TRY(L.request("merger.up_proj.weight", {O, MI}).load(&v->merger_up));
        TDM_SDK_TRY(L.request("merger.down_proj.weight", {MI, O}).load(&v->merger_down));
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
