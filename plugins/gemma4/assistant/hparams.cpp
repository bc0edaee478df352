// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/assistant/hparams.cpp: the assistant's hyper-parameters (GGUF keys
// "gemma4-assistant.*", or config.json with text_config), the checks against its target
// (every mismatch names both values), and the create/destroy callbacks.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include <tandem/ext/batched_draft.h>

#include "assistant.h"

namespace gemma4 {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

constexpr uint32_t kMaxWidth = 1u << 20;
constexpr uint32_t kMaxHeadDim = 1024;

tdm_status read_gguf(const HparamReader& top, AssistantHparams* hp) {
    const Err err = top.err();
    const HparamReader r = top.with_prefix("gemma4-assistant.");
    TDM_SDK_TRY(r.u32("embedding_length", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("embedding_length_out", 4, kMaxWidth, &hp->n_embd_target));
    TDM_SDK_TRY(r.u32("block_count", 1, 64, &hp->n_layer));
    uint32_t nextn = 0;
    TDM_SDK_TRY(r.u32_or("nextn_predict_layers", 0, 64, hp->n_layer, &nextn));
    if (nextn != hp->n_layer)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4-assistant: nextn_predict_layers %u differs from block_count %u",
                        r.path(), nextn, hp->n_layer);
    TDM_SDK_TRY(r.u32("feed_forward_length", 1, kMaxWidth * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32("attention.head_count", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32("attention.key_length", 4, kMaxHeadDim, &hp->head_dim_full));
    TDM_SDK_TRY(r.u32("attention.key_length_swa", 4, kMaxHeadDim, &hp->head_dim_swa));
    TDM_SDK_TRY(r.u32("attention.sliding_window", 1, 1u << 24, &hp->window));
    TDM_SDK_TRY(r.f32_or("attention.layer_norm_rms_epsilon", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.f32_or("rope.freq_base", 1.0, 1e12, 1e6f, &hp->theta_full));
    TDM_SDK_TRY(r.f32_or("rope.freq_base_swa", 1.0, 1e12, 1e4f, &hp->theta_swa));
    TDM_SDK_TRY(r.f32_or("final_logit_softcapping", 0.0, 1e6, 0.0f, &hp->softcap));
    std::vector<uint32_t> sliding(hp->n_layer);
    TDM_SDK_TRY(r.u32_array("attention.sliding_window_pattern", 0, 1, sliding.data(), hp->n_layer));
    hp->sliding.assign(sliding.begin(), sliding.end());
    tdm_tensor_info ti;
    TDM_SDK_TRY(top.tensor_info("token_embd.weight", &ti));
    if (ti.ne[1] < 1 || ti.ne[1] > (1 << 24))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: token_embd.weight has %lld rows, outside [1, %d]", r.path(),
                        (long long)ti.ne[1], 1 << 24);
    hp->n_vocab = uint32_t(ti.ne[1]);
    hp->rope_freqs = top.has_tensor("rope_freqs.weight");
    if (!hp->rope_freqs)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4-assistant: tensor rope_freqs.weight not found", r.path());
    hp->ordered = top.has_tensor("masked_embd_centroids.weight");
    if (hp->ordered) {
        TDM_SDK_TRY(top.tensor_info("masked_embd_centroids.weight", &ti));
        if (ti.ne[1] < 1 || ti.ne[1] > (1 << 20))
            return err.fail(TDM_ERR_BAD_MODEL, "%s: masked_embd_centroids.weight has %lld rows", r.path(),
                            (long long)ti.ne[1]);
        hp->n_centroids = uint32_t(ti.ne[1]);
        TDM_SDK_TRY(r.u32_or("centroid_intermediate_top_k", 1, 256, 32, &hp->top_k_centroids));
    }
    return TDM_OK;
}

tdm_status read_hf(const HparamReader& top, AssistantHparams* hp) {
    const Err err = top.err();
    TDM_SDK_TRY(top.u32("backbone_hidden_size", 4, kMaxWidth, &hp->n_embd_target));
    TDM_SDK_TRY(top.boolean_or("use_ordered_embeddings", false, &hp->ordered));
    if (hp->ordered) {
        TDM_SDK_TRY(top.u32_or("num_centroids", 1, 1u << 20, 2048, &hp->n_centroids));
        TDM_SDK_TRY(top.u32_or("centroid_intermediate_top_k", 1, 256, 32, &hp->top_k_centroids));
    }
    const bool wrapped = top.has("text_config.hidden_size");
    const HparamReader r = top.with_prefix(wrapped ? "text_config." : "");
    TDM_SDK_TRY(r.u32("hidden_size", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("num_hidden_layers", 1, 64, &hp->n_layer));
    TDM_SDK_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
    TDM_SDK_TRY(r.u32("intermediate_size", 1, kMaxWidth * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32("head_dim", 4, kMaxHeadDim, &hp->head_dim_swa));
    TDM_SDK_TRY(r.u32_or("global_head_dim", 4, kMaxHeadDim, hp->head_dim_swa, &hp->head_dim_full));
    TDM_SDK_TRY(r.u32("sliding_window", 1, 1u << 24, &hp->window));
    TDM_SDK_TRY(r.f32_or("rms_norm_eps", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.f32_or("final_logit_softcapping", 0.0, 1e6, 0.0f, &hp->softcap));
    TDM_SDK_TRY(r.f32_or("rope_parameters.sliding_attention.rope_theta", 1.0, 1e12, 1e4f, &hp->theta_swa));
    TDM_SDK_TRY(r.f32_or("rope_parameters.full_attention.rope_theta", 1.0, 1e12, 1e6f, &hp->theta_full));
    float partial = 0.25f;
    TDM_SDK_TRY(r.f32_or("rope_parameters.full_attention.partial_rotary_factor", 1e-6, 1.0, 0.25f, &partial));
    const char* rope_type = "proportional";
    TDM_SDK_TRY(r.string_or("rope_parameters.full_attention.rope_type", "proportional", &rope_type));
    const bool proportional = std::strcmp(rope_type, "proportional") == 0;
    if (!proportional && std::strcmp(rope_type, "default") != 0)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: gemma4-assistant: full-layer rope_type '%s' (known: proportional, "
                        "default)", r.path(), rope_type);
    hp->sliding.assign(hp->n_layer, 0);
    // the newer form gives head dims per layer (per_layer_config.N.head_dim) instead of
    // global_head_dim; each layer type must keep one, as the target's does
    bool seen[2] = {false, false};
    for (uint32_t il = 0; il < hp->n_layer; ++il) {
        const std::string key = "layer_types." + std::to_string(il);
        size_t type = 0;
        TDM_SDK_TRY(r.choice(key.c_str(), {"sliding_attention", "full_attention"}, &type));
        hp->sliding[il] = type == 0;
        uint32_t& dim = type == 0 ? hp->head_dim_swa : hp->head_dim_full;
        const std::string plc = "per_layer_config." + std::to_string(il) + ".head_dim";
        uint32_t d = dim;
        TDM_SDK_TRY(r.u32_or(plc.c_str(), 4, kMaxHeadDim, dim, &d));
        if (seen[type] && d != dim)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4-assistant: %s layer %u has head dim %u, an earlier one %u",
                            r.path(), type == 0 ? "sliding" : "full", il, d, dim);
        dim = d;
        seen[type] = true;
    }
    if (r.has(("layer_types." + std::to_string(hp->n_layer)).c_str()))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: gemma4-assistant: layer_types must have one type per layer (%u)",
                        r.path(), hp->n_layer);
    hp->n_freq_full = proportional ? uint32_t(partial * float(hp->head_dim_full) / 2.0f) : 0;
    return TDM_OK;
}

// The declared KV layer of the target's last layer of this type that stores K/V: the one its
// KV-shared layers read, and the one the assistant reads (spec §1 "Derived").
int32_t last_stored(const Gemma4Hparams& t, bool sliding) {
    int32_t kv = -1;
    for (const LayerShape& s : t.layers)
        if (s.kv_layer >= 0 && s.sliding == sliding) kv = s.kv_layer;
    return kv;
}

const LayerShape* layer_of_kv(const Gemma4Hparams& t, int32_t kv) {
    for (const LayerShape& s : t.layers)
        if (s.kv_layer == kv) return &s;
    return nullptr;
}

// Every way the assistant could disagree with its target, each message naming both values.
tdm_status check_target(const HparamReader& r, Assistant* a) {
    const Err err = r.err();
    const AssistantHparams& hp = a->hp;
    const Gemma4Hparams& t = a->target->hp;
    if (hp.n_embd_target != t.n_embd)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: the assistant is for a backbone of hidden size %u, the target's is %u",
                        r.path(), hp.n_embd_target, t.n_embd);
    if (hp.n_vocab != t.n_vocab)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: the assistant's vocabulary has %u tokens, the target's %u", r.path(),
                        hp.n_vocab, t.n_vocab);
    if (hp.head_dim_swa != t.head_dim_swa || hp.head_dim_full != t.head_dim_full)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: the assistant's head dims (%u sliding, %u full) differ from the target's (%u, %u)",
                        r.path(), hp.head_dim_swa, hp.head_dim_full, t.head_dim_swa, t.head_dim_full);
    if (hp.window != t.window)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: the assistant's sliding window is %u, the target's %u", r.path(),
                        hp.window, t.window);
    // its queries meet the target's keys: the rotations must be the same
    if (hp.theta_swa != t.theta_swa || hp.theta_full != t.theta_full)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: the assistant's RoPE bases (%g sliding, %g full) differ from the target's (%g, %g)",
                        r.path(), double(hp.theta_swa), double(hp.theta_full), double(t.theta_swa),
                        double(t.theta_full));
    if (!hp.rope_freqs && !t.rope_freqs) {  // both from config.json: compare the rotated slots
        const uint32_t mine = hp.n_freq_full ? hp.n_freq_full : hp.head_dim_full / 2;
        const uint32_t theirs = t.n_freq_full ? t.n_freq_full : t.head_dim_full / 2;
        if (mine != theirs)
            return err.fail(TDM_ERR_BAD_MODEL,
                            "%s: the assistant rotates %u frequency slots of its full layers, the target %u",
                            r.path(), mine, theirs);
    }
    for (int sliding = 0; sliding < 2; ++sliding) {
        bool used = false;
        for (uint8_t s : hp.sliding) used |= s == sliding;
        if (!used) continue;
        const int32_t kv = last_stored(t, sliding != 0);
        if (kv < 0)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: the assistant has %s layers, the target stores no %s-layer K/V",
                            r.path(), sliding ? "sliding" : "full", sliding ? "sliding" : "full");
        const LayerShape* s = layer_of_kv(t, kv);
        if (hp.n_head % s->n_head_kv || hp.n_head / s->n_head_kv > 16)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: the assistant's %u heads cannot share the target's %u KV heads",
                            r.path(), hp.n_head, s->n_head_kv);
        a->target_kv[sliding] = uint32_t(kv);
    }
    return TDM_OK;
}

}  // namespace

tdm_status assistant_create(const tdm_host_api* host, const tdm_model_source* src, void* target, const tdm_options*,
                            tdm_draft_head_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "gemma4-assistant: create", [&]() -> tdm_status {
        const HparamReader r(host, src, e);
        const char* arch = "";
        TDM_SDK_TRY(r.string_or(r.pick("general.architecture", "model_type"), "", &arch));
        if (std::strcmp(arch, "gemma4-assistant") != 0 && std::strcmp(arch, "gemma4_assistant") != 0)
            return e.fail(TDM_ERR_NOT_FOUND,
                          "%s holds no Gemma 4 assistant (its architecture is '%s'); pass the assistant's own file: "
                          "-md gemma-4-*-assistant.gguf (or its HF directory)",
                          r.path(), arch);
        if (!target)
            return e.fail(TDM_ERR_UNSUPPORTED, "%s: the Gemma 4 assistant drafts only for gemma4 targets", r.path());
        auto a = std::make_unique<Assistant>();
        a->host = host;
        a->hf = r.hf();
        a->target = static_cast<const Gemma4Model*>(target);
        TDM_SDK_TRY(r.hf() ? read_hf(r, &a->hp) : read_gguf(r, &a->hp));
        if (a->hp.ordered && (a->hp.n_vocab % a->hp.n_centroids || a->hp.top_k_centroids > a->hp.n_centroids ||
                              (a->hp.n_vocab / a->hp.n_centroids) % 4))
            return e.fail(TDM_ERR_BAD_MODEL,
                          "%s: %u centroids (top %u) must divide the %u-token vocabulary in clusters of a multiple "
                          "of 4 tokens",
                          r.path(), a->hp.n_centroids, a->hp.top_k_centroids, a->hp.n_vocab);
        if (a->hp.ordered) {
            tdm::sdk::Host h;
            TDM_SDK_TRY(h.init(host, "gemma4", e));
            TDM_SDK_TRY(assistant_require_masked_head_ops(h, e));
        }
        TDM_SDK_TRY(check_target(r, a.get()));
        // declare only the target layers the assistant's layer types read
        uint32_t n_read = 0;
        for (int sliding = 0; sliding < 2; ++sliding) {
            bool used = false;
            for (uint8_t s : a->hp.sliding) used |= s == sliding;
            const bool dup = n_read && a->target_kv_list[0] == a->target_kv[sliding];
            if (used && !dup) a->target_kv_list[n_read++] = a->target_kv[sliding];
        }
        tdm_draft_head_info mine{};
        mine.struct_size = sizeof mine;
        mine.hidden = TDM_HIDDEN_POST_NORM;
        mine.n_own_layers = 0;
        mine.n_target_kv_layers = n_read;
        mine.target_kv_layers = a->target_kv_list;
        mine.n_embd = a->hp.n_embd_target;
        mine.flags = TDM_DRAFT_HEAD_CONSTANT_POSITION | TDM_DRAFT_HEAD_STATELESS;
        // the full head's step is written for any rows; the centroid-masked head picks one
        // row's token (a top-k over one row), so it drafts one sequence per graph
        if (!a->hp.ordered && host->get_extension(TDM_EXT_BATCHED_DRAFT, TDM_EXT_BATCHED_DRAFT_VERSION, nullptr))
            mine.flags |= TDM_DRAFT_HEAD_BATCHED;
        tdm::sdk::set_draft_head_info(info, mine);
        *out = a.release();
        return TDM_OK;
    });
}

void assistant_destroy(void* head) { delete static_cast<Assistant*>(head); }

}  // namespace gemma4
