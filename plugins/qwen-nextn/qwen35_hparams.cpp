// plugins/qwen-nextn/qwen35_hparams.cpp: Qwen3.5/3.6 hyper-parameters from the
// GGUF keys llama.cpp's converter writes (qwen35.* / qwen35moe.*) or from
// config.json's text_config (HF names). Every value is range-checked before
// it sizes anything.
#include <string>

#include "qwen35.h"

namespace qwen {
namespace {

constexpr uint32_t kMaxWidth = 1u << 20;

// The trunk layer pattern: layer_types when config.json has it, else every
// `interval`-th layer is full attention ((il + 1) % interval == 0).
tdm_status read_layer_pattern(const MetaReader& r, bool hf, Qwen35Hparams* hp) {
    uint32_t interval = 4;
    QWEN_TRY(r.u32_or("full_attention_interval", 1, 4096, 4, &interval));
    hp->full_attention.assign(hp->n_layer, 0);
    for (uint32_t il = 0; il < hp->n_layer; ++il) hp->full_attention[il] = (il + 1) % interval == 0;
    if (hf && r.has("layer_types.0")) {
        for (uint32_t il = 0; il < hp->n_layer; ++il) {
            const std::string key = "layer_types." + std::to_string(il);
            std::string type;
            QWEN_TRY(r.string_or(key.c_str(), "", &type));
            if (type != "full_attention" && type != "linear_attention")
                return fail(r.err, r.err_size, TDM_ERR_BAD_MODEL,
                            "%s: text_config.layer_types[%u] = '%s' (expected full_attention or linear_attention)",
                            r.host->source_path(r.src), il, type.c_str());
            hp->full_attention[il] = type == "full_attention";
        }
    }
    return TDM_OK;
}

tdm_status read_gguf(const tdm_host_api* host, const tdm_model_source* src, Qwen35Hparams* hp, char* err,
                     size_t err_size) {
    const char* arch = nullptr;
    if (host->meta_get_string(src, "general.architecture", &arch) != TDM_OK || !arch)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
    hp->moe = std::string(arch) == "qwen35moe";
    const MetaReader r{host, src, err, err_size, std::string(arch) + "."};
    uint32_t n_block = 0;
    QWEN_TRY(r.u32("embedding_length", 4, kMaxWidth, &hp->n_embd));
    QWEN_TRY(r.u32("block_count", 1, 4096, &n_block));
    QWEN_TRY(r.u32_or("nextn_predict_layers", 0, 16, 0, &hp->n_nextn));
    if (hp->n_nextn >= n_block)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: %u NextN layers of %u blocks leave no trunk",
                    host->source_path(src), hp->n_nextn, n_block);
    hp->n_layer = n_block - hp->n_nextn;
    QWEN_TRY(r.u32_or("context_length", 1, 1u << 24, 262144, &hp->n_ctx_train));
    QWEN_TRY(r.f32_or("attention.layer_norm_rms_epsilon", 1e-6f, &hp->rms_eps));
    QWEN_TRY(r.u32("attention.head_count", 1, 4096, &hp->n_head));
    QWEN_TRY(r.u32_or("attention.head_count_kv", 1, 4096, hp->n_head, &hp->n_head_kv));
    QWEN_TRY(r.u32_or("attention.key_length", 4, 1024, 256, &hp->head_dim));
    uint32_t vlen = 0;
    QWEN_TRY(r.u32_or("attention.value_length", 4, 1024, hp->head_dim, &vlen));
    if (vlen != hp->head_dim)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: value_length %u differs from key_length %u", arch, vlen,
                    hp->head_dim);
    QWEN_TRY(r.u32_or("rope.dimension_count", 2, hp->head_dim, hp->head_dim / 4, &hp->n_rot));
    QWEN_TRY(r.f32_or("rope.freq_base", 1e7f, &hp->rope_theta));
    uint32_t sec[4] = {0, 0, 0, 0};
    bool found = false;
    QWEN_TRY(r.u32_array("rope.dimension_sections", 4, 0, 1024, sec, &found));
    if (!found)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: %s.rope.dimension_sections is missing (required)",
                    host->source_path(src), arch);
    for (int i = 0; i < 3; ++i) hp->sections[i] = int32_t(sec[i]);
    uint32_t inner = 0;
    QWEN_TRY(r.u32("ssm.conv_kernel", 2, 16, &hp->conv_kernel));
    QWEN_TRY(r.u32("ssm.state_size", 4, 256, &hp->gdn_dk));
    QWEN_TRY(r.u32("ssm.group_count", 1, 1024, &hp->gdn_nk));
    QWEN_TRY(r.u32("ssm.time_step_rank", 1, 1024, &hp->gdn_nv));
    QWEN_TRY(r.u32("ssm.inner_size", 4, kMaxWidth, &inner));
    if (inner % hp->gdn_nv)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: ssm.inner_size %u is not a multiple of %u value heads",
                    arch, inner, hp->gdn_nv);
    hp->gdn_dv = inner / hp->gdn_nv;
    if (hp->moe) {
        QWEN_TRY(r.u32("expert_count", 1, 4096, &hp->n_expert));
        QWEN_TRY(r.u32("expert_used_count", 1, hp->n_expert, &hp->n_expert_used));
        QWEN_TRY(r.u32("expert_feed_forward_length", 1, kMaxWidth, &hp->n_ff_exp));
        QWEN_TRY(r.u32("expert_shared_feed_forward_length", 1, kMaxWidth, &hp->n_ff_shexp));
    } else {
        QWEN_TRY(r.u32("feed_forward_length", 1, kMaxWidth * 8, &hp->n_ff));
    }
    QWEN_TRY(read_layer_pattern(r, false, hp));
    tdm_tensor_info ti{sizeof(tdm_tensor_info), TDM_DTYPE_INVALID, 0, {0, 0, 0, 0}};
    if (host->tensor_info(src, "token_embd.weight", &ti) == TDM_OK) hp->n_vocab = uint32_t(ti.ne[1]);
    tdm_tensor_info to{sizeof(tdm_tensor_info), TDM_DTYPE_INVALID, 0, {0, 0, 0, 0}};
    hp->tied = host->tensor_info(src, "output.weight", &to) != TDM_OK;
    return TDM_OK;
}

tdm_status read_hf(const tdm_host_api* host, const tdm_model_source* src, Qwen35Hparams* hp, char* err,
                   size_t err_size) {
    // released checkpoints are multimodal wrappers with text_config; a text-only
    // config has the same fields at the top level
    const bool wrapped = host->meta_has(src, "text_config.hidden_size");
    const MetaReader r{host, src, err, err_size, wrapped ? "text_config." : ""};
    const MetaReader top{host, src, err, err_size, ""};
    std::string model_type;
    QWEN_TRY(top.string_or("model_type", "", &model_type));
    hp->moe = model_type == "qwen3_5_moe" || model_type == "qwen3_5_moe_text";
    QWEN_TRY(r.u32("hidden_size", 4, kMaxWidth, &hp->n_embd));
    QWEN_TRY(r.u32("num_hidden_layers", 1, 4096, &hp->n_layer));
    QWEN_TRY(r.u32_or("mtp_num_hidden_layers", 0, 16, 0, &hp->n_nextn));
    QWEN_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
    QWEN_TRY(r.u32_or("max_position_embeddings", 1, 1u << 24, 262144, &hp->n_ctx_train));
    QWEN_TRY(r.f32_or("rms_norm_eps", 1e-6f, &hp->rms_eps));
    QWEN_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    QWEN_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &hp->n_head_kv));
    QWEN_TRY(r.u32_or("head_dim", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    // rope_parameters (transformers 5) or the older flat fields
    const bool params = r.has("rope_parameters");
    const std::string rp = params ? "rope_parameters." : "";
    float partial = 0.25f;
    QWEN_TRY(r.f32_or((rp + "partial_rotary_factor").c_str(), 0.25f, &partial));
    if (!(partial > 0.0f && partial <= 1.0f))
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: partial_rotary_factor %g is outside (0, 1]",
                    host->source_path(src), double(partial));
    hp->n_rot = uint32_t(float(hp->head_dim) * partial + 0.5f);
    QWEN_TRY(r.f32_or((rp + "rope_theta").c_str(), 1e7f, &hp->rope_theta));
    uint32_t sec[3] = {0, 0, 0};
    bool found = false;
    QWEN_TRY(r.u32_array((rp + "mrope_section").c_str(), 3, 0, 1024, sec, &found));
    if (!found) {  // plain RoPE: every frequency slot reads the one text position
        sec[0] = hp->n_rot / 2;
    }
    for (int i = 0; i < 3; ++i) hp->sections[i] = int32_t(sec[i]);
    QWEN_TRY(r.u32("linear_num_key_heads", 1, 1024, &hp->gdn_nk));
    QWEN_TRY(r.u32("linear_num_value_heads", 1, 1024, &hp->gdn_nv));
    QWEN_TRY(r.u32("linear_key_head_dim", 4, 256, &hp->gdn_dk));
    QWEN_TRY(r.u32("linear_value_head_dim", 4, 256, &hp->gdn_dv));
    QWEN_TRY(r.u32_or("linear_conv_kernel_dim", 2, 16, 4, &hp->conv_kernel));
    if (hp->moe) {
        QWEN_TRY(r.u32("num_experts", 1, 4096, &hp->n_expert));
        QWEN_TRY(r.u32("num_experts_per_tok", 1, hp->n_expert, &hp->n_expert_used));
        QWEN_TRY(r.u32("moe_intermediate_size", 1, kMaxWidth, &hp->n_ff_exp));
        QWEN_TRY(r.u32("shared_expert_intermediate_size", 1, kMaxWidth, &hp->n_ff_shexp));
    } else {
        QWEN_TRY(r.u32("intermediate_size", 1, kMaxWidth * 8, &hp->n_ff));
    }
    QWEN_TRY(read_layer_pattern(r, true, hp));
    bool tied = false;
    QWEN_TRY(top.bool_or("tie_word_embeddings", false, &tied));
    if (!tied && wrapped) QWEN_TRY(r.bool_or("tie_word_embeddings", false, &tied));
    tdm_tensor_info to{sizeof(tdm_tensor_info), TDM_DTYPE_INVALID, 0, {0, 0, 0, 0}};
    hp->tied = tied || host->tensor_info(src, "lm_head.weight", &to) != TDM_OK;
    // the head counts only if its weights are in the directory
    tdm_tensor_info tm{sizeof(tdm_tensor_info), TDM_DTYPE_INVALID, 0, {0, 0, 0, 0}};
    if (host->tensor_info(src, "mtp.fc.weight", &tm) != TDM_OK) hp->n_nextn = 0;
    return TDM_OK;
}

}  // namespace

tdm_status qwen35_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Qwen35Hparams* hp, char* err,
                               size_t err_size) {
    const bool hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
    QWEN_TRY(hf ? read_hf(host, src, hp, err, err_size) : read_gguf(host, src, hp, err, err_size));
    const char* path = host->source_path(src);
    if (hp->n_head % hp->n_head_kv != 0)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: %u attention heads are not a multiple of %u KV heads", path,
                    hp->n_head, hp->n_head_kv);
    if (hp->head_dim % 4 || hp->n_rot % 2 || hp->n_rot > hp->head_dim)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: head_dim %u / rotary dims %u are not usable", path,
                    hp->head_dim, hp->n_rot);
    if (uint32_t(hp->sections[0] + hp->sections[1] + hp->sections[2]) > hp->n_rot / 2)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: M-RoPE sections %d+%d+%d exceed the %u frequency slots",
                    path, hp->sections[0], hp->sections[1], hp->sections[2], hp->n_rot / 2);
    if (hp->gdn_nv % hp->gdn_nk)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: %u DeltaNet value heads are not a multiple of %u key heads",
                    path, hp->gdn_nv, hp->gdn_nk);
    if (hp->gdn_dk % 4 || hp->gdn_dv % 4)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: DeltaNet head dims %u/%u are not multiples of 4", path,
                    hp->gdn_dk, hp->gdn_dv);
    if (!(hp->rope_theta > 0.0f) || !(hp->rms_eps >= 0.0f))
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: invalid rope theta %g or rms eps %g", path,
                    double(hp->rope_theta), double(hp->rms_eps));
    if (hp->n_embd % 4)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: hidden size %u is not a multiple of 4", path, hp->n_embd);
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
