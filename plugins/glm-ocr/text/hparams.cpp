// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/text/hparams.cpp: GLM text-decoder hyper-parameters from the GGUF keys
// llama.cpp's converter writes (glm4.*) or from config.json (GLM-OCR wraps them in
// text_config). Every value is range-checked before it sizes anything (plugin contract
// rule 7).
#include <string>

#include "arch.h"

namespace glm {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

constexpr uint32_t kMaxWidth = 1u << 20;
constexpr double kMinEps = 1e-12;  // eps 0 would turn a zero sublayer output into NaN
constexpr uint32_t kMaxGqa = 16;   // query heads per KV head the attention op takes (ops.h)

tdm_status read_gguf(const HparamReader& top, GlmHparams* hp) {
    const Err err = top.err();
    const HparamReader r = top.with_prefix("glm4.");
    uint32_t n_block = 0;
    TDM_SDK_TRY(r.u32("embedding_length", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("block_count", 1, 4096, &n_block));
    TDM_SDK_TRY(r.u32_or("nextn_predict_layers", 0, 16, 0, &hp->n_nextn));
    if (hp->n_nextn >= n_block)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %u NextN layers of %u blocks leave no trunk", r.path(), hp->n_nextn,
                        n_block);
    hp->n_layer = n_block - hp->n_nextn;
    TDM_SDK_TRY(r.u32_or("context_length", 1, 1u << 24, 131072, &hp->n_ctx_train));
    TDM_SDK_TRY(r.f32_or("attention.layer_norm_rms_epsilon", kMinEps, 1.0, 1e-5f, &hp->rms_eps));
    TDM_SDK_TRY(r.u32("attention.head_count", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("attention.head_count_kv", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("attention.key_length", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    uint32_t vlen = 0;
    TDM_SDK_TRY(r.u32_or("attention.value_length", 4, 1024, hp->head_dim, &vlen));
    if (vlen != hp->head_dim)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: glm4: value_length %u differs from key_length %u", r.path(), vlen,
                        hp->head_dim);
    TDM_SDK_TRY(r.u32("feed_forward_length", 1, kMaxWidth * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32("rope.dimension_count", 2, hp->head_dim, &hp->n_rot));
    TDM_SDK_TRY(r.f32_or("rope.freq_base", 1.0, 1e12, 10000.0f, &hp->rope_theta));
    const char* scaling = "none";
    TDM_SDK_TRY(r.string_or("rope.scaling.type", "none", &scaling));
    if (std::string(scaling) != "none")
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: glm4: rope.scaling.type '%s' is not supported (GLM-OCR uses none)",
                        r.path(), scaling);
    uint32_t sec[4] = {0, 0, 0, 0};
    bool found = false;
    TDM_SDK_TRY(r.u32_array_opt("rope.dimension_sections", 0, 1024, sec, 4, &found));
    if (sec[3] != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: glm4: rope.dimension_sections has a 4th section (%u); GLM uses (t, h, w)",
                        r.path(), sec[3]);
    // The converter permutes q/k rows into NeoX order exactly when it writes sections
    // (llama.cpp: rope type MROPE for glm4 with sections, NORM without).
    hp->mrope = found && (sec[0] | sec[1] | sec[2]) != 0;
    hp->rope_mode = hp->mrope ? TDM_ROPE_NEOX : TDM_ROPE_ADJACENT;
    for (int i = 0; i < 3; ++i) hp->sections[i] = int32_t(sec[i]);
    // no token_embd.weight: an MTP-only file (n_vocab stays 0; the head takes the target's)
    if (top.has_tensor("token_embd.weight")) {
        tdm_tensor_info ti;
        TDM_SDK_TRY(top.tensor_info("token_embd.weight", &ti));
        if (ti.ne[1] < 1 || ti.ne[1] > (1 << 24))
            return err.fail(TDM_ERR_BAD_MODEL, "%s: token_embd.weight has %lld rows, outside [1, %d]", r.path(),
                            (long long)ti.ne[1], 1 << 24);
        hp->n_vocab = uint32_t(ti.ne[1]);
    }
    hp->tied = !top.has_tensor("output.weight");  // llama.cpp's rule
    // the key without the layer's tensors (a converter that dropped them): no head
    if (hp->n_nextn > 0) {
        const std::string probe = "blk." + std::to_string(hp->n_layer) + ".nextn.eh_proj.weight";
        if (!top.has_tensor(probe.c_str())) hp->n_nextn = 0;
    }
    return TDM_OK;
}

tdm_status read_hf(const HparamReader& top, GlmHparams* hp) {
    const Err err = top.err();
    // GLM-OCR's config.json wraps the decoder's fields in text_config; a text-only config
    // has them at the top level
    const bool wrapped = top.has("text_config.hidden_size");
    const HparamReader r = top.with_prefix(wrapped ? "text_config." : "");
    TDM_SDK_TRY(r.u32("hidden_size", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("num_hidden_layers", 1, 4096, &hp->n_layer));
    TDM_SDK_TRY(r.u32_or("num_nextn_predict_layers", 0, 16, 0, &hp->n_nextn));
    TDM_SDK_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
    TDM_SDK_TRY(r.u32_or("max_position_embeddings", 1, 1u << 24, 131072, &hp->n_ctx_train));
    TDM_SDK_TRY(r.f32_or("rms_norm_eps", kMinEps, 1.0, 1e-5f, &hp->rms_eps));
    TDM_SDK_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("head_dim", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    TDM_SDK_TRY(r.u32("intermediate_size", 1, kMaxWidth * 8, &hp->n_ff));
    // rope_parameters.* (transformers 5) or the older flat fields; GLM-OCR rotates whole
    // heads when the config does not say (transformers' GlmOcrTextRotaryEmbedding default)
    float partial = 1.0f;
    TDM_SDK_TRY(r.f32_or({"rope_parameters.partial_rotary_factor", "partial_rotary_factor"}, 1e-6, 1.0, 1.0f,
                         &partial));
    const char* rope_type = "default";
    TDM_SDK_TRY(r.string_or({"rope_parameters.rope_type", "rope_scaling.rope_type", "rope_scaling.type"}, "default",
                            &rope_type));
    if (std::string(rope_type) != "default")
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: glm_ocr: rope_type '%s' is not supported (GLM-OCR uses default)",
                        r.path(), rope_type);
    hp->n_rot = uint32_t(float(hp->head_dim) * partial + 0.5f) & ~1u;
    TDM_SDK_TRY(r.f32_or({"rope_parameters.rope_theta", "rope_theta"}, 1.0, 1e12, 10000.0f, &hp->rope_theta));
    uint32_t sec[3] = {0, 0, 0};
    bool found = false;
    TDM_SDK_TRY(r.u32_array_opt({"rope_parameters.mrope_section", "rope_scaling.mrope_section", "mrope_section"}, 0,
                                1024, sec, 3, &found));
    hp->mrope = found && (sec[0] | sec[1] | sec[2]) != 0;
    for (int i = 0; i < 3; ++i) hp->sections[i] = int32_t(sec[i]);
    hp->rope_mode = TDM_ROPE_ADJACENT;  // HF GLM: rotate_half_llm, pairs (2i, 2i+1)
    // tied only when the config says so: a missing lm_head.weight is then a missing tensor
    bool tied = false;
    TDM_SDK_TRY(r.boolean_or("tie_word_embeddings", false, &tied));
    if (wrapped && !r.has("tie_word_embeddings")) TDM_SDK_TRY(top.boolean_or("tie_word_embeddings", false, &tied));
    hp->tied = tied;
    // the checkpoint stores the MTP layer as layers.<n_layer>; a directory without it has no head
    if (hp->n_nextn > 0) {
        const std::string probe = "model.language_model.layers." + std::to_string(hp->n_layer) + ".eh_proj.weight";
        if (!top.has_tensor(probe.c_str())) hp->n_nextn = 0;
    }
    return TDM_OK;
}

tdm_status check(const HparamReader& r, const GlmHparams& hp) {
    const Err err = r.err();
    if (hp.n_head % hp.n_head_kv != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: glm4: %u attention heads are not a multiple of %u KV heads", r.path(),
                        hp.n_head, hp.n_head_kv);
    if (hp.n_head / hp.n_head_kv > kMaxGqa)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: glm4: %u query heads per KV head; attention takes at most %u",
                        r.path(), hp.n_head / hp.n_head_kv, kMaxGqa);
    if (hp.head_dim % 4 != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: glm4: head_dim %u is not a multiple of 4", r.path(), hp.head_dim);
    if (hp.n_rot < 2 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: glm4: %u rotated dims do not fit a head of %u", r.path(), hp.n_rot,
                        hp.head_dim);
    const uint32_t slots = uint32_t(hp.sections[0]) + uint32_t(hp.sections[1]) + uint32_t(hp.sections[2]);
    if (hp.mrope && slots > hp.n_rot / 2)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: glm4: M-RoPE sections [%d, %d, %d] cover %u frequency slots, more than "
                        "the %u of %u rotated dims",
                        r.path(), hp.sections[0], hp.sections[1], hp.sections[2], slots, hp.n_rot / 2, hp.n_rot);
    return TDM_OK;
}

}  // namespace

tdm_status glm_read_hparams(const tdm_host_api* host, const tdm_model_source* src, GlmHparams* hp, Err err) {
    const HparamReader r(host, src, err);
    TDM_SDK_TRY(r.hf() ? read_hf(r, hp) : read_gguf(r, hp));
    // GLM-4-0414 and GLM-4 chat checkpoints have q/k/v biases, which the decoder adds
    // (load.cpp); no GLM-4 has an output-projection bias, and this decoder adds none: refused
    // here, so that `tandem info` says so too, not silently run without it
    const bool out_biased = r.hf() ? r.has_tensor("model.language_model.layers.0.self_attn.o_proj.bias")
                                   : r.has_tensor("blk.0.attn_output.bias");
    if (out_biased)
        return err.fail(TDM_ERR_UNSUPPORTED,
                        "%s: glm4: the file has an attention output bias (attn_output.bias / o_proj.bias), which no "
                        "GLM-4 has; this plugin adds biases after the q/k/v projections only",
                        r.path());
    return check(r, *hp);
}

std::string glm_describe(const GlmHparams& hp) {
    auto u = [](uint32_t v) { return std::to_string(v); };
    std::string rope = hp.rope_mode == TDM_ROPE_NEOX ? "neox" : "adjacent";
    if (hp.mrope)
        rope += ", sections [" + std::to_string(hp.sections[0]) + ", " + std::to_string(hp.sections[1]) + ", " +
                std::to_string(hp.sections[2]) + "]";
    return "n_vocab = " + u(hp.n_vocab) + "\nn_embd = " + u(hp.n_embd) + "\nn_layer = " + u(hp.n_layer) +
           "\nn_nextn = " + u(hp.n_nextn) + "\nn_head = " + u(hp.n_head) + "\nn_head_kv = " + u(hp.n_head_kv) +
           "\nhead_dim = " + u(hp.head_dim) + "\nn_ff = " + u(hp.n_ff) + "\nn_ctx_train = " + u(hp.n_ctx_train) +
           "\nn_rot = " + u(hp.n_rot) + "\nrope = " + rope + "\nrope_theta = " + std::to_string(hp.rope_theta) +
           "\nrms_eps = " + std::to_string(hp.rms_eps) + "\ntied_embeddings = " + (hp.tied ? "true" : "false");
}

}  // namespace glm
