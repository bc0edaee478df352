// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/qwen35/hparams.cpp: Qwen3.5/3.6 hyper-parameters from
// the GGUF keys llama.cpp's converter writes (qwen35.* / qwen35moe.*) or from
// config.json's text_config (HF names). Every value is range-checked before
// it sizes anything (plugin contract rule 7).
#include <cstring>
#include <string>

#include "arch.h"

namespace qwen {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

constexpr uint32_t kMaxWidth = 1u << 20;

// The trunk layer pattern: layer_types when config.json has it, else every
// `interval`-th layer is full attention ((il + 1) % interval == 0).
tdm_status read_layer_pattern(const HparamReader& r, Qwen35Hparams* hp) {
    uint32_t interval = 4;
    TDM_SDK_TRY(r.u32_or("full_attention_interval", 1, 4096, 4, &interval));
    hp->full_attention.assign(hp->n_layer, 0);
    for (uint32_t il = 0; il < hp->n_layer; ++il) hp->full_attention[il] = (il + 1) % interval == 0;
    if (r.hf() && r.has("layer_types.0")) {
        for (uint32_t il = 0; il < hp->n_layer; ++il) {
            const std::string key = "layer_types." + std::to_string(il);
            size_t type = 0;
            TDM_SDK_TRY(r.choice(key.c_str(), {"linear_attention", "full_attention"}, &type));
            hp->full_attention[il] = type == 1;
        }
    }
    return TDM_OK;
}

tdm_status read_gguf(const HparamReader& top, Qwen35Hparams* hp) {
    const Err err = top.err();
    size_t which = 0;
    TDM_SDK_TRY(top.choice("general.architecture", {"qwen35", "qwen35moe"}, &which));
    hp->moe = which == 1;
    const char* arch = hp->moe ? "qwen35moe" : "qwen35";
    const HparamReader r = top.with_prefix(hp->moe ? "qwen35moe." : "qwen35.");
    uint32_t n_block = 0;
    TDM_SDK_TRY(r.u32("embedding_length", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("block_count", 1, 4096, &n_block));
    TDM_SDK_TRY(r.u32_or("nextn_predict_layers", 0, 16, 0, &hp->n_nextn));
    if (hp->n_nextn >= n_block)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %u NextN layers of %u blocks leave no trunk", r.path(), hp->n_nextn,
                        n_block);
    hp->n_layer = n_block - hp->n_nextn;
    TDM_SDK_TRY(r.u32_or("context_length", 1, 1u << 24, 262144, &hp->n_ctx_train));
    TDM_SDK_TRY(r.f32_or("attention.layer_norm_rms_epsilon", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.u32("attention.head_count", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("attention.head_count_kv", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("attention.key_length", 4, 1024, 256, &hp->head_dim));
    uint32_t vlen = 0;
    TDM_SDK_TRY(r.u32_or("attention.value_length", 4, 1024, hp->head_dim, &vlen));
    if (vlen != hp->head_dim)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %s: value_length %u differs from key_length %u", r.path(), arch, vlen,
                        hp->head_dim);
    TDM_SDK_TRY(r.u32_or("rope.dimension_count", 2, hp->head_dim, hp->head_dim / 4, &hp->n_rot));
    TDM_SDK_TRY(r.f32_or("rope.freq_base", 1.0, 1e12, 1e7f, &hp->rope_theta));
    uint32_t sec[4] = {0, 0, 0, 0};
    TDM_SDK_TRY(r.u32_array("rope.dimension_sections", 0, 1024, sec, 4));
    for (int i = 0; i < 3; ++i) hp->sections[i] = int32_t(sec[i]);
    uint32_t inner = 0;
    TDM_SDK_TRY(r.u32("ssm.conv_kernel", 2, 16, &hp->conv_kernel));
    TDM_SDK_TRY(r.u32("ssm.state_size", 4, 256, &hp->gdn_dk));
    TDM_SDK_TRY(r.u32("ssm.group_count", 1, 1024, &hp->gdn_nk));
    TDM_SDK_TRY(r.u32("ssm.time_step_rank", 1, 1024, &hp->gdn_nv));
    TDM_SDK_TRY(r.u32("ssm.inner_size", 4, kMaxWidth, &inner));
    if (inner % hp->gdn_nv)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %s: ssm.inner_size %u is not a multiple of %u value heads", r.path(),
                        arch, inner, hp->gdn_nv);
    hp->gdn_dv = inner / hp->gdn_nv;
    if (hp->moe) {
        TDM_SDK_TRY(r.u32("expert_count", 1, 4096, &hp->n_expert));
        TDM_SDK_TRY(r.u32("expert_used_count", 1, hp->n_expert, &hp->n_expert_used));
        TDM_SDK_TRY(r.u32("expert_feed_forward_length", 1, kMaxWidth, &hp->n_ff_exp));
        TDM_SDK_TRY(r.u32("expert_shared_feed_forward_length", 1, kMaxWidth, &hp->n_ff_shexp));
    } else {
        TDM_SDK_TRY(r.u32("feed_forward_length", 1, kMaxWidth * 8, &hp->n_ff));
    }
    TDM_SDK_TRY(read_layer_pattern(r, hp));
    // no token_embd.weight: an MTP-only file (n_vocab stays 0; the head takes
    // the target's)
    tdm_tensor_info ti;
    if (top.has_tensor("token_embd.weight")) {
        TDM_SDK_TRY(top.tensor_info("token_embd.weight", &ti));
        if (ti.ne[1] < 1 || ti.ne[1] > (1 << 24))
            return err.fail(TDM_ERR_BAD_MODEL, "%s: token_embd.weight has %lld rows, outside [1, %d]", r.path(),
                            (long long)ti.ne[1], 1 << 24);
        hp->n_vocab = uint32_t(ti.ne[1]);
    }
    hp->tied = !top.has_tensor("output.weight");
    return TDM_OK;
}

tdm_status read_hf(const HparamReader& top, Qwen35Hparams* hp) {
    // released checkpoints are multimodal wrappers with text_config; a text-only
    // config has the same fields at the top level
    const bool wrapped = top.has("text_config.hidden_size");
    const HparamReader r = top.with_prefix(wrapped ? "text_config." : "");
    const char* model_type = "";
    TDM_SDK_TRY(top.string_or("model_type", "", &model_type));
    hp->moe = std::strcmp(model_type, "qwen3_5_moe") == 0 || std::strcmp(model_type, "qwen3_5_moe_text") == 0;
    TDM_SDK_TRY(r.u32("hidden_size", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("num_hidden_layers", 1, 4096, &hp->n_layer));
    TDM_SDK_TRY(r.u32_or("mtp_num_hidden_layers", 0, 16, 0, &hp->n_nextn));
    TDM_SDK_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
    TDM_SDK_TRY(r.u32_or("max_position_embeddings", 1, 1u << 24, 262144, &hp->n_ctx_train));
    TDM_SDK_TRY(r.f32_or("rms_norm_eps", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("head_dim", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    // rope_parameters.* (transformers 5) or the older flat fields
    float partial = 0.25f;
    TDM_SDK_TRY(r.f32_or({"rope_parameters.partial_rotary_factor", "partial_rotary_factor"}, 1e-6, 1.0, 0.25f,
                         &partial));
    hp->n_rot = uint32_t(float(hp->head_dim) * partial + 0.5f);
    TDM_SDK_TRY(r.f32_or({"rope_parameters.rope_theta", "rope_theta"}, 1.0, 1e12, 1e7f, &hp->rope_theta));
    uint32_t sec[3] = {0, 0, 0};
    bool found = false;
    TDM_SDK_TRY(r.u32_array_opt({"rope_parameters.mrope_section", "mrope_section"}, 0, 1024, sec, 3, &found));
    if (!found) sec[0] = hp->n_rot / 2;  // plain RoPE: every frequency slot reads the one text position
    for (int i = 0; i < 3; ++i) hp->sections[i] = int32_t(sec[i]);
    TDM_SDK_TRY(r.u32("linear_num_key_heads", 1, 1024, &hp->gdn_nk));
    TDM_SDK_TRY(r.u32("linear_num_value_heads", 1, 1024, &hp->gdn_nv));
    TDM_SDK_TRY(r.u32("linear_key_head_dim", 4, 256, &hp->gdn_dk));
    TDM_SDK_TRY(r.u32("linear_value_head_dim", 4, 256, &hp->gdn_dv));
    TDM_SDK_TRY(r.u32_or("linear_conv_kernel_dim", 2, 16, 4, &hp->conv_kernel));
    if (hp->moe) {
        TDM_SDK_TRY(r.u32("num_experts", 1, 4096, &hp->n_expert));
        TDM_SDK_TRY(r.u32("num_experts_per_tok", 1, hp->n_expert, &hp->n_expert_used));
        TDM_SDK_TRY(r.u32("moe_intermediate_size", 1, kMaxWidth, &hp->n_ff_exp));
        TDM_SDK_TRY(r.u32("shared_expert_intermediate_size", 1, kMaxWidth, &hp->n_ff_shexp));
    } else {
        TDM_SDK_TRY(r.u32("intermediate_size", 1, kMaxWidth * 8, &hp->n_ff));
    }
    TDM_SDK_TRY(read_layer_pattern(r, hp));
    bool tied = false;
    TDM_SDK_TRY(top.boolean_or("tie_word_embeddings", false, &tied));
    if (!tied && wrapped) TDM_SDK_TRY(r.boolean_or("tie_word_embeddings", false, &tied));
    hp->tied = tied || !top.has_tensor("lm_head.weight");
    // the head counts only if its weights are in the directory
    if (!top.has_tensor("mtp.fc.weight")) hp->n_nextn = 0;
    return TDM_OK;
}

}  // namespace

tdm_status qwen35_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Qwen35Hparams* hp, Err err) {
    const HparamReader r(host, src, err);
    TDM_SDK_TRY(r.hf() ? read_hf(r, hp) : read_gguf(r, hp));
    const char* path = r.path();
    if (hp->n_head % hp->n_head_kv != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %u attention heads are not a multiple of %u KV heads", path,
                        hp->n_head, hp->n_head_kv);
    if (hp->head_dim % 4 || hp->n_rot % 2 || hp->n_rot > hp->head_dim)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: head_dim %u / rotary dims %u are not usable", path, hp->head_dim,
                        hp->n_rot);
    if (uint32_t(hp->sections[0] + hp->sections[1] + hp->sections[2]) > hp->n_rot / 2)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: M-RoPE sections %d+%d+%d exceed the %u frequency slots", path,
                        hp->sections[0], hp->sections[1], hp->sections[2], hp->n_rot / 2);
    if (hp->gdn_nv % hp->gdn_nk)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %u DeltaNet value heads are not a multiple of %u key heads", path,
                        hp->gdn_nv, hp->gdn_nk);
    if (hp->gdn_dk % 4 || hp->gdn_dv % 4)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: DeltaNet head dims %u/%u are not multiples of 4", path, hp->gdn_dk,
                        hp->gdn_dv);
    if (hp->n_embd % 4)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: hidden size %u is not a multiple of 4", path, hp->n_embd);
    return TDM_OK;
}

std::string qwen35_describe(const Qwen35Hparams& hp) {
    uint32_t n_full = 0;
    for (uint8_t f : hp.full_attention) n_full += f;
    auto line = [](const char* k, const std::string& v) { return std::string(k) + " = " + v + "\n"; };
    auto u = [](uint64_t v) { return std::to_string(v); };
    std::string s;
    s += line("n_vocab", u(hp.n_vocab));
    s += line("n_embd", u(hp.n_embd));
    s += line("n_layer", u(hp.n_layer) + " (" + u(hp.n_layer - n_full) + " gated deltanet + " + u(n_full) +
                             " gated attention)");
    s += line("n_head", u(hp.n_head));
    s += line("n_head_kv", u(hp.n_head_kv));
    s += line("head_dim", u(hp.head_dim));
    s += line("n_rot", u(hp.n_rot));
    s += line("rope_sections", u(uint32_t(hp.sections[0])) + "," + u(uint32_t(hp.sections[1])) + "," +
                                   u(uint32_t(hp.sections[2])) + " (interleaved)");
    s += line("rope_theta", std::to_string(hp.rope_theta));
    s += line("deltanet_heads", u(hp.gdn_nk) + " key x " + u(hp.gdn_dk) + ", " + u(hp.gdn_nv) + " value x " +
                                    u(hp.gdn_dv));
    s += line("conv_kernel", u(hp.conv_kernel));
    if (hp.moe) {
        s += line("n_expert", u(hp.n_expert) + " (" + u(hp.n_expert_used) + " used)");
        s += line("n_ff_exp", u(hp.n_ff_exp));
        s += line("n_ff_shexp", u(hp.n_ff_shexp));
    } else {
        s += line("n_ff", u(hp.n_ff));
    }
    s += line("n_ctx_train", u(hp.n_ctx_train));
    s += line("rms_eps", std::to_string(hp.rms_eps));
    s += line("tied_embeddings", hp.tied ? "true" : "false");
    s += line("mtp_layers", u(hp.n_nextn));
    s.pop_back();
    return s;
}

}  // namespace qwen
