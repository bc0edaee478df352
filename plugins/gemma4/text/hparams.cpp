// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/text/hparams.cpp: Gemma 4 hyper-parameters, from the GGUF keys llama.cpp's
// converter writes (gemma4.*) or from config.json's text_config (both the
// global_head_dim / num_global_key_value_heads form and the newer per_layer_config form),
// resolved into one LayerShape per layer; and the create/destroy callbacks. Every value is
// range-checked before it sizes anything (plugin contract rule 7).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "arch.h"

namespace gemma4 {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

constexpr uint32_t kMaxWidth = 1u << 20;
constexpr uint32_t kMaxLayers = 4096;
constexpr uint32_t kMaxHeadDim = 1024;

// The scale HF multiplies embeddings by: sqrt(n) cast to the table's dtype (transformers'
// Gemma4TextScaledWordEmbedding); f32 for f32 tables and for GGUF (llama.cpp uses sqrtf).
float scale_in_dtype(float s, tdm_dtype type) {
    uint32_t u;
    std::memcpy(&u, &s, 4);
    if (type == TDM_DTYPE_BF16) {
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;  // round to nearest even
    } else if (type == TDM_DTYPE_F16) {
        // a positive normal value well inside f16's range: keep 10 mantissa bits, nearest even
        u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    } else {
        return s;
    }
    std::memcpy(&s, &u, 4);
    return s;
}

// Reads an integer key that is either one value for every layer or a per-layer array.
tdm_status per_layer_u32(const HparamReader& r, const char* key, uint32_t lo, uint32_t hi, uint32_t n_layer,
                         std::vector<uint32_t>* out) {
    out->assign(n_layer, 0);
    int64_t one = 0;
    std::string full = std::string(r.prefix()) + key;
    if (r.host()->meta_get_int(r.source(), full.c_str(), &one) == TDM_OK) {
        if (one < int64_t(lo) || one > int64_t(hi))
            return r.err().fail(TDM_ERR_BAD_MODEL, "%s: %s = %lld is outside [%u, %u]", r.path(), full.c_str(),
                                (long long)one, lo, hi);
        out->assign(n_layer, uint32_t(one));
        return TDM_OK;
    }
    return r.u32_array(key, lo, hi, out->data(), n_layer);
}

tdm_status read_gguf(const HparamReader& top, Gemma4Hparams* hp) {
    const Err err = top.err();
    const HparamReader r = top.with_prefix("gemma4.");
    TDM_SDK_TRY(r.u32("embedding_length", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("block_count", 1, kMaxLayers, &hp->n_layer));
    TDM_SDK_TRY(r.u32_or("context_length", 1, 1u << 24, 131072, &hp->n_ctx_train));
    TDM_SDK_TRY(r.u32("attention.head_count", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32("attention.key_length", 4, kMaxHeadDim, &hp->head_dim_full));
    TDM_SDK_TRY(r.u32("attention.key_length_swa", 4, kMaxHeadDim, &hp->head_dim_swa));
    uint32_t v = 0;
    TDM_SDK_TRY(r.u32_or("attention.value_length", 4, kMaxHeadDim, hp->head_dim_full, &v));
    if (v != hp->head_dim_full)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: value_length %u differs from key_length %u", r.path(), v,
                        hp->head_dim_full);
    TDM_SDK_TRY(r.u32_or("attention.value_length_swa", 4, kMaxHeadDim, hp->head_dim_swa, &v));
    if (v != hp->head_dim_swa)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: value_length_swa %u differs from key_length_swa %u", r.path(),
                        v, hp->head_dim_swa);
    uint32_t n_rot = 0;
    TDM_SDK_TRY(r.u32_or("rope.dimension_count", 2, hp->head_dim_full, hp->head_dim_full, &n_rot));
    if (n_rot != hp->head_dim_full)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: gemma4: rope.dimension_count %u differs from the full head dim %u (proportional RoPE "
                        "spans the whole head; rope_freqs selects the rotated slots)",
                        r.path(), n_rot, hp->head_dim_full);
    TDM_SDK_TRY(r.u32_or("rope.dimension_count_swa", 2, hp->head_dim_swa, hp->head_dim_swa, &n_rot));
    if (n_rot != hp->head_dim_swa)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: rope.dimension_count_swa %u differs from key_length_swa %u",
                        r.path(), n_rot, hp->head_dim_swa);
    TDM_SDK_TRY(r.f32_or("rope.freq_base", 1.0, 1e12, 1e6f, &hp->theta_full));
    TDM_SDK_TRY(r.f32_or("rope.freq_base_swa", 1.0, 1e12, 1e4f, &hp->theta_swa));
    TDM_SDK_TRY(r.f32_or("attention.layer_norm_rms_epsilon", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.f32_or("final_logit_softcapping", 0.0, 1e6, 0.0f, &hp->softcap));
    TDM_SDK_TRY(r.u32("attention.sliding_window", 1, 1u << 24, &hp->window));
    TDM_SDK_TRY(r.u32_or("attention.shared_kv_layers", 0, hp->n_layer - 1, 0, &hp->n_kv_shared));
    TDM_SDK_TRY(r.u32_or("embedding_length_per_layer_input", 0, kMaxWidth, 0, &hp->n_embd_ple));
    hp->moe = r.has("expert_count");
    if (hp->moe) {
        TDM_SDK_TRY(r.u32("expert_count", 1, 4096, &hp->n_expert));
        TDM_SDK_TRY(r.u32("expert_used_count", 1, hp->n_expert, &hp->n_expert_used));
        TDM_SDK_TRY(r.u32("expert_feed_forward_length", 1, kMaxWidth, &hp->n_ff_exp));
    }

    const uint32_t L = hp->n_layer;
    std::vector<uint32_t> sliding(L), kv_heads, ff;
    TDM_SDK_TRY(r.u32_array("attention.sliding_window_pattern", 0, 1, sliding.data(), L));
    TDM_SDK_TRY(per_layer_u32(r, "attention.head_count_kv", 1, 4096, L, &kv_heads));
    TDM_SDK_TRY(per_layer_u32(r, "feed_forward_length", 1, kMaxWidth * 8, L, &ff));
    hp->layers.resize(L);
    for (uint32_t il = 0; il < L; ++il) {
        LayerShape& s = hp->layers[il];
        s.sliding = sliding[il] != 0;
        s.head_dim = s.sliding ? hp->head_dim_swa : hp->head_dim_full;
        s.n_head_kv = kv_heads[il];
        s.n_ff = ff[il];
        // llama.cpp's converter writes no attn_v where K doubles as V (full layers only: a
        // sliding layer without one is a missing tensor, reported by load)
        const std::string wv = "blk." + std::to_string(il) + ".attn_v.weight";
        s.k_eq_v = !s.sliding && !top.has_tensor(wv.c_str());
    }
    tdm_tensor_info ti;
    TDM_SDK_TRY(top.tensor_info("token_embd.weight", &ti));
    if (ti.ne[1] < 1 || ti.ne[1] > (1 << 24))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: token_embd.weight has %lld rows, outside [1, %d]", r.path(),
                        (long long)ti.ne[1], 1 << 24);
    hp->n_vocab = uint32_t(ti.ne[1]);
    if (hp->n_embd_ple) {
        TDM_SDK_TRY(top.tensor_info("per_layer_token_embd.weight", &ti));
        if (ti.ne[1] < 1 || ti.ne[1] > (1 << 24))
            return err.fail(TDM_ERR_BAD_MODEL, "%s: per_layer_token_embd.weight has %lld rows, outside [1, %d]",
                            r.path(), (long long)ti.ne[1], 1 << 24);
        hp->n_vocab_ple = uint32_t(ti.ne[1]);
    }
    // llama.cpp's converter emulates proportional RoPE with rope_freqs (1e30 for the still
    // slots); without it nothing says which slots of the full layers rotate
    hp->rope_freqs = top.has_tensor("rope_freqs.weight");
    if (!hp->rope_freqs)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: gemma4: tensor rope_freqs.weight not found (llama.cpp's converter writes it: the full "
                        "layers' proportional RoPE)",
                        r.path());
    hp->n_freq_full = 0;
    hp->embd_scale = std::sqrt(float(hp->n_embd));
    hp->ple_scale = std::sqrt(float(hp->n_embd_ple));
    return TDM_OK;
}

tdm_status read_hf(const HparamReader& top, Gemma4Hparams* hp) {
    const Err err = top.err();
    // released checkpoints are multimodal wrappers with text_config; a text-only
    // Gemma4ForCausalLM config has the same fields at the top level
    const bool wrapped = top.has("text_config.hidden_size");
    const HparamReader r = top.with_prefix(wrapped ? "text_config." : "");
    TDM_SDK_TRY(r.u32("hidden_size", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("num_hidden_layers", 1, kMaxLayers, &hp->n_layer));
    TDM_SDK_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
    TDM_SDK_TRY(r.u32_or("max_position_embeddings", 1, 1u << 24, 131072, &hp->n_ctx_train));
    TDM_SDK_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    uint32_t kv = 0, kv_global = 0, ff = 0;
    TDM_SDK_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &kv));
    TDM_SDK_TRY(r.u32("head_dim", 4, kMaxHeadDim, &hp->head_dim_swa));
    TDM_SDK_TRY(r.u32_or("global_head_dim", 4, kMaxHeadDim, hp->head_dim_swa, &hp->head_dim_full));
    bool k_eq_v = false, double_wide = false;
    TDM_SDK_TRY(r.boolean_or("attention_k_eq_v", false, &k_eq_v));
    TDM_SDK_TRY(r.u32_or("num_global_key_value_heads", 1, 4096, kv, &kv_global));
    if (!k_eq_v) kv_global = kv;  // spec §2: the global count applies to K=V layers only
    TDM_SDK_TRY(r.u32("intermediate_size", 1, kMaxWidth * 8, &ff));
    TDM_SDK_TRY(r.boolean_or("use_double_wide_mlp", false, &double_wide));
    TDM_SDK_TRY(r.boolean_or("enable_moe_block", false, &hp->moe));
    if (hp->moe) {
        TDM_SDK_TRY(r.u32("num_experts", 1, 4096, &hp->n_expert));
        TDM_SDK_TRY(r.u32("top_k_experts", 1, hp->n_expert, &hp->n_expert_used));
        TDM_SDK_TRY(r.u32("moe_intermediate_size", 1, kMaxWidth, &hp->n_ff_exp));
    }
    TDM_SDK_TRY(r.u32("sliding_window", 1, 1u << 24, &hp->window));
    TDM_SDK_TRY(r.u32_or("num_kv_shared_layers", 0, hp->n_layer - 1, 0, &hp->n_kv_shared));
    TDM_SDK_TRY(r.u32_or("hidden_size_per_layer_input", 0, kMaxWidth, 0, &hp->n_embd_ple));
    if (hp->n_embd_ple)
        TDM_SDK_TRY(r.u32_or("vocab_size_per_layer_input", 1, 1u << 24, hp->n_vocab, &hp->n_vocab_ple));
    TDM_SDK_TRY(r.f32_or("rms_norm_eps", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.f32_or("final_logit_softcapping", 0.0, 1e6, 0.0f, &hp->softcap));
    const char* act = "";
    TDM_SDK_TRY(r.string_or({"hidden_activation", "hidden_act"}, "gelu_pytorch_tanh", &act));
    if (std::strcmp(act, "gelu_pytorch_tanh") != 0)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: gemma4: hidden_activation '%s' (only gelu_pytorch_tanh is known)",
                        r.path(), act);
    // rope_parameters per layer type (transformers 5); proportional RoPE rotates only the
    // first partial_rotary_factor * D/2 frequency slots of the full layers
    TDM_SDK_TRY(r.f32_or("rope_parameters.sliding_attention.rope_theta", 1.0, 1e12, 1e4f, &hp->theta_swa));
    TDM_SDK_TRY(r.f32_or("rope_parameters.full_attention.rope_theta", 1.0, 1e12, 1e6f, &hp->theta_full));
    // every released Gemma 4 uses proportional RoPE with factor 0.25 on its full layers: the
    // default when a config does not say
    float partial = 0.25f;
    TDM_SDK_TRY(r.f32_or("rope_parameters.full_attention.partial_rotary_factor", 1e-6, 1.0, 0.25f, &partial));
    const char* rope_type = "proportional";
    TDM_SDK_TRY(r.string_or("rope_parameters.full_attention.rope_type", "proportional", &rope_type));
    if (std::strcmp(rope_type, "proportional") != 0 && std::strcmp(rope_type, "default") != 0)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: gemma4: full-layer rope_type '%s' (known: proportional, default)",
                        r.path(), rope_type);

    const uint32_t L = hp->n_layer;
    hp->layers.resize(L);
    const uint32_t first_shared = L - hp->n_kv_shared;
    if (r.has("layer_types.0") && (!r.has(("layer_types." + std::to_string(L - 1)).c_str()) ||
                                   r.has(("layer_types." + std::to_string(L)).c_str())))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: layer_types must have one type per layer (%u)", r.path(), L);
    for (uint32_t il = 0; il < L; ++il) {
        LayerShape& s = hp->layers[il];
        // transformers' default pattern: every 6th layer full, the last one always
        s.sliding = (il + 1) % 6 != 0 && il + 1 != L;
        const std::string key = "layer_types." + std::to_string(il);
        if (r.has(key.c_str())) {
            size_t type = 0;
            TDM_SDK_TRY(r.choice(key.c_str(), {"sliding_attention", "full_attention"}, &type));
            s.sliding = type == 0;
        }
        s.head_dim = s.sliding ? hp->head_dim_swa : hp->head_dim_full;
        s.n_head_kv = s.sliding ? kv : kv_global;
        s.k_eq_v = k_eq_v && !s.sliding;
        // the newer form: per-layer overrides instead of global_* fields
        const std::string plc = "per_layer_config." + std::to_string(il) + ".";
        TDM_SDK_TRY(r.u32_or((plc + "head_dim").c_str(), 4, kMaxHeadDim, s.head_dim, &s.head_dim));
        TDM_SDK_TRY(r.u32_or((plc + "num_key_value_heads").c_str(), 1, 4096, s.n_head_kv, &s.n_head_kv));
        s.n_ff = double_wide && il >= first_shared ? 2 * ff : ff;
    }
    // one head dim per layer type: RoPE, the KV-sharing and the assistant depend on it
    bool seen[2] = {false, false};
    for (uint32_t il = 0; il < L; ++il) {
        const LayerShape& s = hp->layers[il];
        uint32_t& dim = s.sliding ? hp->head_dim_swa : hp->head_dim_full;
        if (!seen[s.sliding]) {
            dim = s.head_dim;
            seen[s.sliding] = true;
        } else if (s.head_dim != dim) {
            return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: %s layer %u has head dim %u, an earlier one %u", r.path(),
                            s.sliding ? "sliding" : "full", il, s.head_dim, dim);
        }
    }
    hp->n_freq_full = uint32_t(partial * float(hp->head_dim_full) / 2.0f);
    if (std::strcmp(rope_type, "default") == 0) hp->n_freq_full = 0;
    tdm_tensor_info ti;
    const char* emb = top.has_tensor("model.language_model.embed_tokens.weight")
                          ? "model.language_model.embed_tokens.weight"
                          : "model.embed_tokens.weight";
    TDM_SDK_TRY(top.tensor_info(emb, &ti));
    hp->embd_scale = scale_in_dtype(std::sqrt(float(hp->n_embd)), ti.type);
    hp->ple_scale = std::sqrt(float(hp->n_embd_ple));
    const char* ple = top.has_tensor("model.language_model.embed_tokens_per_layer.weight")
                          ? "model.language_model.embed_tokens_per_layer.weight"
                          : "model.embed_tokens_per_layer.weight";
    if (hp->n_embd_ple && top.has_tensor(ple)) {
        TDM_SDK_TRY(top.tensor_info(ple, &ti));
        hp->ple_scale = scale_in_dtype(hp->ple_scale, ti.type);
    }
    return TDM_OK;
}

// Which declared KV layer each layer stores into and attends, and the checks that need the
// whole pattern.
tdm_status resolve_layers(const HparamReader& r, Gemma4Hparams* hp) {
    const Err err = r.err();
    const uint32_t L = hp->n_layer, first_shared = L - hp->n_kv_shared;
    if (hp->head_dim_full % 4 || hp->head_dim_swa % 4)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: head dims %u / %u are not multiples of 4", r.path(),
                        hp->head_dim_swa, hp->head_dim_full);
    if (hp->n_freq_full > hp->head_dim_full / 2)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: %u rotated frequency slots exceed half the head dim %u",
                        r.path(), hp->n_freq_full, hp->head_dim_full);
    if (hp->moe && hp->n_expert_used > 256)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: %u experts per token (the router's top-k takes at most 256)",
                        r.path(), hp->n_expert_used);
    int32_t last_of_type[2] = {-1, -1};  // [sliding] -> declared KV layer
    int32_t n_declared = 0;
    for (uint32_t il = 0; il < L; ++il) {
        LayerShape& s = hp->layers[il];
        if (s.n_head_kv == 0 || hp->n_head % s.n_head_kv)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: layer %u has %u KV heads, not a divisor of %u heads",
                            r.path(), il, s.n_head_kv, hp->n_head);
        if (il < first_shared) {
            s.kv_layer = s.kv_source = n_declared++;
            last_of_type[s.sliding] = s.kv_layer;
            continue;
        }
        // KV-shared: the last non-shared layer of the same type (spec §1 "Derived")
        s.kv_source = last_of_type[s.sliding];
        if (s.kv_source < 0)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: KV-shared layer %u (%s) has no earlier %s layer to share",
                            r.path(), il, s.sliding ? "sliding" : "full", s.sliding ? "sliding" : "full");
    }
    // a shared layer reads its source's cache as is: the shapes must agree
    for (uint32_t il = first_shared; il < L; ++il) {
        const LayerShape& s = hp->layers[il];
        uint32_t src = 0;
        while (hp->layers[src].kv_layer != s.kv_source) ++src;
        if (hp->layers[src].n_head_kv != s.n_head_kv || hp->layers[src].head_dim != s.head_dim)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: KV-shared layer %u (%u x %u) differs from layer %u (%u x %u)",
                            r.path(), il, s.n_head_kv, s.head_dim, src, hp->layers[src].n_head_kv,
                            hp->layers[src].head_dim);
    }
    if (hp->n_embd_ple && hp->n_vocab_ple < hp->n_vocab)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: gemma4: the per-layer embedding table has %u rows, fewer than the %u-token vocabulary",
                        r.path(), hp->n_vocab_ple, hp->n_vocab);
    if (hp->n_embd_ple && uint64_t(hp->n_embd_ple) * L > kMaxWidth * 8)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4: per-layer input width %u x %u layers is too large", r.path(),
                        hp->n_embd_ple, L);
    return TDM_OK;
}

std::string describe(const Gemma4Hparams& hp) {
    uint32_t n_sliding = 0, n_k_eq_v = 0;
    for (const LayerShape& s : hp.layers) {
        n_sliding += s.sliding;
        n_k_eq_v += s.k_eq_v && s.kv_layer >= 0;
    }
    auto line = [](const char* k, const std::string& v) { return std::string(k) + " = " + v + "\n"; };
    std::string d = line("n_vocab", std::to_string(hp.n_vocab)) + line("n_embd", std::to_string(hp.n_embd)) +
                    line("n_layer", std::to_string(hp.n_layer)) +
                    line("layers", std::to_string(n_sliding) + " sliding, " +
                                       std::to_string(hp.n_layer - n_sliding) + " full") +
                    line("n_head", std::to_string(hp.n_head)) +
                    line("head_dim", std::to_string(hp.head_dim_swa) + " sliding, " +
                                         std::to_string(hp.head_dim_full) + " full") +
                    line("sliding_window", std::to_string(hp.window)) +
                    line("kv_shared_layers", std::to_string(hp.n_kv_shared)) +
                    line("k_eq_v_layers", std::to_string(n_k_eq_v)) +
                    line("per_layer_input", std::to_string(hp.n_embd_ple)) +
                    (hp.moe ? line("experts", std::to_string(hp.n_expert) + " (" + std::to_string(hp.n_expert_used) +
                                                  " per token, width " + std::to_string(hp.n_ff_exp) + ")")
                            : std::string()) +
                    line("n_ctx_train", std::to_string(hp.n_ctx_train)) +
                    line("rope_theta", std::to_string(hp.theta_swa) + " sliding, " + std::to_string(hp.theta_full) +
                                           " full") +
                    line("final_logit_softcap", std::to_string(hp.softcap));
    d.pop_back();
    return d;
}

}  // namespace

tdm_status gemma4_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Gemma4Hparams* hp, Err err) {
    const HparamReader r(host, src, err);
    TDM_SDK_TRY(r.hf() ? read_hf(r, hp) : read_gguf(r, hp));
    return resolve_layers(r, hp);
}

tdm_status gemma4_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options*,
                         tdm_model_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "gemma4: create", [&]() -> tdm_status {
        auto m = std::make_unique<Gemma4Model>();
        m->host = host;
        m->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
        TDM_SDK_TRY(gemma4_read_hparams(host, src, &m->hp, e));
        const Gemma4Hparams& hp = m->hp;
        if (m->hf) {
            tdm_tensor_info ti{};
            ti.struct_size = sizeof ti;
            m->hf_prefix = host->tensor_info(src, "model.language_model.embed_tokens.weight", &ti) == TDM_OK
                               ? "model.language_model."
                               : "model.";
        }
        // one KV layer per layer that stores K/V; KV-shared layers store nothing
        for (const LayerShape& s : hp.layers) {
            if (s.kv_layer < 0) continue;
            m->attention.push_back(s.sliding ? tdm::sdk::sliding_attention(s.n_head_kv, s.head_dim, s.head_dim, hp.window)
                                             : tdm::sdk::full_attention(s.n_head_kv, s.head_dim, s.head_dim));
        }
        m->description = describe(hp);
        tdm_model_info mine{};
        mine.n_vocab = hp.n_vocab;
        mine.n_embd = hp.n_embd;
        mine.n_ctx_train = hp.n_ctx_train;
        mine.n_attention_layers = uint32_t(m->attention.size());
        mine.attention_layers = m->attention.data();
        mine.description = m->description.c_str();
        tdm::sdk::set_model_info(info, mine);
        // every layer's input, the last layer's output and the final norm's (forward.cpp)
        if (host->abi_version >= 3)
            m->features = static_cast<const tdm_ext_target_features*>(
                host->get_extension(TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION, nullptr));
        if (m->features && m->features->provide(info, m->hp.n_layer) != TDM_OK)
            return e.fail(TDM_ERR_INVALID_ARGUMENT, "gemma4: %s", host->last_error());
        *out = m.release();
        return TDM_OK;
    });
}

void gemma4_destroy(void* model) { delete static_cast<Gemma4Model*>(model); }

}  // namespace gemma4
