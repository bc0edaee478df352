// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/head/hparams.cpp: the head's hyper-parameters (z-lab's HF config.json: a
// Qwen3 config with block_size, num_target_layers and dflash_config {target_layer_ids,
// mask_token_id}), the checks that need only the head's file and the target's vocabulary
// and depth, and the create/destroy callbacks (the taps it asks for, its block, its KV
// layers). A GGUF file is refused naming its architecture: llama.cpp's DFlash layout is not
// read here.
// Not here: the checks against the target's weights (load.cpp).
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "dflash.h"

namespace dflash {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

constexpr uint32_t kMaxWidth = 1u << 20;
constexpr uint32_t kMaxLayerId = 4095;
constexpr uint32_t kMaxDraftLayers = 64;

bool is_dflash(const HparamReader& r, const char** arch) {
    *arch = "";
    (void)r.string_or("architectures.0", "", arch);
    return r.has("dflash_config") || std::strstr(*arch, "DFlash") != nullptr;
}

tdm_status read_hf(const HparamReader& r, DflashHparams* hp) {
    const Err err = r.err();
    TDM_SDK_TRY(r.u32("num_hidden_layers", 1, kMaxDraftLayers, &hp->n_layer));
    TDM_SDK_TRY(r.u32("hidden_size", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("intermediate_size", 1, kMaxWidth * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("head_dim", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    TDM_SDK_TRY(r.f32_or("rope_theta", 1.0, 1e12, 10000.0f, &hp->rope_theta));
    TDM_SDK_TRY(r.f32_or("rms_norm_eps", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.u32_or("vocab_size", 0, 1u << 24, 0, &hp->n_vocab));
    TDM_SDK_TRY(r.u32_or("num_target_layers", 0, kMaxLayerId + 1, 0, &hp->n_target_layers));
    if (!r.has("block_size"))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: block_size is missing: how many rows the head drafts at once", r.path());
    TDM_SDK_TRY(r.u32("block_size", 2, TDM_MAX_DRAFT_BLOCK, &hp->block_size));
    if (!r.has("dflash_config.mask_token_id"))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: dflash_config.mask_token_id is missing: the token of the block's "
                        "masked rows", r.path());
    uint32_t mask = 0;
    TDM_SDK_TRY(r.u32("dflash_config.mask_token_id", 0, (1u << 24) - 1, &mask));
    hp->mask_token = int32_t(mask);
    const char* scaling = "default";
    TDM_SDK_TRY(r.string_or({"rope_scaling.rope_type", "rope_scaling.type"}, "default", &scaling));
    if (std::strcmp(scaling, "default") != 0)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: rope_scaling of type '%s' is not supported (default only)", r.path(),
                        scaling);
    const char* key = "dflash_config.target_layer_ids";
    if (r.has(key)) {
        int64_t ids[TDM_MAX_FEATURE_TAPS + 1];
        size_t n = 0;
        TDM_SDK_TRY(r.i64_array(key, 0, kMaxLayerId, ids, TDM_MAX_FEATURE_TAPS, &n));
        if (n == 0) return err.fail(TDM_ERR_BAD_MODEL, "%s: %s lists no target layer", r.path(), key);
        hp->target_layers.assign(ids, ids + n);
    }
    return TDM_OK;
}

// The target layers of a config that lists none (z-lab's build_target_layer_ids): one draft
// layer reads L // 2; n > 1 draft layers read round(1 + i * (L - 4) / (n - 1)), i < n.
tdm_status default_layers(const HparamReader& r, uint32_t n_target, DflashHparams* hp) {
    if (n_target < 5)
        return r.err().fail(TDM_ERR_BAD_MODEL,
                            "%s: config.json names no target layers (dflash_config.target_layer_ids) and the target's "
                            "layer count (%u) is unknown or too small to spread them over",
                            r.path(), n_target);
    const uint32_t n = hp->n_layer;
    if (n == 1) {
        hp->target_layers = {n_target / 2};
        return TDM_OK;
    }
    if (n > TDM_MAX_FEATURE_TAPS)
        return r.err().fail(TDM_ERR_UNSUPPORTED, "%s: %u draft layers would read %u target layers; at most %u", r.path(),
                            n, n, TDM_MAX_FEATURE_TAPS);
    for (uint32_t i = 0; i < n; ++i)  // round half to even, as Python's round()
        hp->target_layers.push_back(uint32_t(std::nearbyint(1.0 + double(i) * double(n_target - 4) / double(n - 1))));
    return TDM_OK;
}

// Everything that needs only the file and the target's vocabulary size and depth.
tdm_status check(const tdm_host_api* host, const tdm_options* options, const HparamReader& r, const DflashHparams& hp,
                 uint32_t n_target) {
    const Err err = r.err();
    if (hp.n_head % hp.n_head_kv || hp.n_head / hp.n_head_kv > 16)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %u attention heads cannot share %u KV heads", r.path(), hp.n_head,
                        hp.n_head_kv);
    if (hp.head_dim % 4)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: head_dim %u is not a multiple of 4", r.path(), hp.head_dim);
    if (hp.n_target_layers && n_target && hp.n_target_layers != n_target)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: the head is for a target of %u layers (num_target_layers), this one has %u",
                        r.path(), hp.n_target_layers, n_target);
    for (size_t i = 0; i < hp.target_layers.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (hp.target_layers[i] == hp.target_layers[j])
                return err.fail(TDM_ERR_BAD_MODEL, "%s: target layer %u is listed twice", r.path(), hp.target_layers[i]);
    int64_t n_vocab = 0;
    if (options && host->option_get_int(options, "n_vocab", &n_vocab) == TDM_OK) {
        if (hp.n_vocab && int64_t(hp.n_vocab) != n_vocab)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: the head is for a vocabulary of %u tokens, the target's has %lld",
                            r.path(), hp.n_vocab, (long long)n_vocab);
        if (hp.mask_token >= n_vocab)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: mask_token_id %d is outside the target's vocabulary of %lld tokens",
                            r.path(), hp.mask_token, (long long)n_vocab);
    }
    return TDM_OK;
}

}  // namespace

tdm_status dflash_create(const tdm_host_api* host, const tdm_model_source* src, void*, const tdm_options* options,
                         tdm_draft_head_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "dflash: create", [&]() -> tdm_status {
        const HparamReader r(host, src, e);
        if (!r.hf()) {
            const char* arch = "";
            (void)r.string_or("general.architecture", "", &arch);
            return e.fail(TDM_ERR_UNSUPPORTED,
                          "%s: a GGUF file (architecture '%s'); the dflash head reads z-lab's HF layout only (the "
                          "head's directory with config.json and model.safetensors): --spec-type dflash -md DIR",
                          r.path(), arch);
        }
        const char* arch = "";
        if (!is_dflash(r, &arch))
            return e.fail(TDM_ERR_NOT_FOUND,
                          "%s holds no DFlash head (no dflash_config; its architecture is '%s'); pass the head's own "
                          "directory: --spec-type dflash -md DIR",
                          r.path(), arch);
        auto h = std::make_unique<DflashHead>();
        h->host = host;
        TDM_SDK_TRY(read_hf(r, &h->hp));
        int64_t n_target = 0;
        if (!options || host->option_get_int(options, "target_n_layer", &n_target) != TDM_OK) n_target = 0;
        if (h->hp.target_layers.empty())
            TDM_SDK_TRY(default_layers(r, h->hp.n_target_layers ? h->hp.n_target_layers : uint32_t(n_target), &h->hp));
        TDM_SDK_TRY(check(host, options, r, h->hp, uint32_t(n_target)));
        h->prefix = r.has_tensor("fc.weight") ? "" : "model.";
        h->features = static_cast<const tdm_ext_target_features*>(
            host->get_extension(TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION, nullptr));
        const auto* block = static_cast<const tdm_ext_block_draft*>(
            host->get_extension(TDM_EXT_BLOCK_DRAFT, TDM_EXT_BLOCK_DRAFT_VERSION, nullptr));
        if (!h->features || !block)
            return e.fail(TDM_ERR_UNSUPPORTED, "dflash: the host lacks extension %s: %s",
                          h->features ? TDM_EXT_BLOCK_DRAFT : TDM_EXT_TARGET_FEATURES, host->last_error());
        // HF's hidden_states[l + 1], the output of layer l: the input of layer l + 1
        for (uint32_t layer : h->hp.target_layers) h->taps.push_back({TDM_TAP_LAYER_INPUT, layer + 1});
        h->own.assign(h->hp.n_layer, tdm::sdk::full_attention(h->hp.n_head_kv, h->hp.head_dim, h->hp.head_dim));
        tdm_draft_head_info mine{};
        mine.struct_size = sizeof mine;
        mine.hidden = TDM_HIDDEN_NONE;  // the taps instead
        mine.n_own_layers = h->hp.n_layer;
        mine.own_layers = h->own.data();
        mine.n_embd = h->hp.n_embd;
        tdm::sdk::set_draft_head_info(info, mine);
        if (h->features->request(info, h->taps.data(), uint32_t(h->taps.size())) != TDM_OK)
            return e.fail(TDM_ERR_BAD_MODEL, "%s: dflash: the target layers the head reads were refused: %s", r.path(),
                          host->last_error());
        if (block->declare(info, h->hp.block_size, h->hp.mask_token) != TDM_OK)
            return e.fail(TDM_ERR_BAD_MODEL, "%s: dflash: the block was refused: %s", r.path(), host->last_error());
        *out = h.release();
        return TDM_OK;
    });
}

void dflash_destroy(void* head) { delete static_cast<DflashHead*>(head); }

}  // namespace dflash
