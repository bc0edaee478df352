// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/head/hparams.cpp: the head's hyper-parameters, from z-lab's HF config.json (a
// Qwen3 config with block_size, num_target_layers and dflash_config {target_layer_ids,
// mask_token_id}) or from llama.cpp's GGUF architecture "dflash" (dflash.* keys,
// dflash.target_layers, tokenizer.ggml.mask_token_id), the checks that need only the head's
// file and the target's vocabulary and depth, and the create/destroy callbacks (the taps it
// asks for, its block, its KV layers).
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
constexpr uint32_t kDefaultBlock = 16;  // llama.cpp's, for a GGUF without dflash.block_size

bool is_dflash(const HparamReader& r, const char** arch) {
    *arch = "";
    if (!r.hf()) {
        (void)r.string_or("general.architecture", "", arch);
        return std::strcmp(*arch, "dflash") == 0;
    }
    (void)r.string_or("architectures.0", "", arch);
    return r.has("dflash_config") || std::strstr(*arch, "DFlash") != nullptr;
}

// The block's rows (llama.cpp's default when a GGUF names none) and the token of its masked rows.
tdm_status read_block_and_mask(const HparamReader& r, const char* block_key, tdm::sdk::Keys mask_keys,
                               DflashHparams* hp) {
    TDM_SDK_TRY(r.u32_or(block_key, 2, TDM_MAX_DRAFT_BLOCK, kDefaultBlock, &hp->block_size));
    uint32_t mask = 0;
    TDM_SDK_TRY(r.u32(mask_keys, 0, (1u << 24) - 1, &mask));
    hp->mask_token = int32_t(mask);
    return TDM_OK;
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
    if (!r.has("dflash_config.mask_token_id"))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: dflash_config.mask_token_id is missing: the token of the block's "
                        "masked rows", r.path());
    TDM_SDK_TRY(read_block_and_mask(r, "block_size", {"dflash_config.mask_token_id"}, hp));
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
        for (size_t i = 0; i < n; ++i) hp->tap_layers.push_back(uint32_t(ids[i]) + 1);  // the output of layer l
    }
    return TDM_OK;
}

// The variants llama.cpp loads under the same architecture that this head does not run.
tdm_status refuse_variants(const HparamReader& top) {
    const HparamReader r = top.with_prefix("dflash.");
    uint32_t window = 0, hc = 0;
    TDM_SDK_TRY(r.u32_or("attention.sliding_window", 0, 1u << 30, 0, &window));
    TDM_SDK_TRY(r.u32_or("hyper_connection.count", 0, 1024, 0, &hc));
    const char* variant = window ? "sliding-window attention (dflash.attention.sliding_window)"
                          : hc   ? "a hyper-connection (DSpark DeepSeek-V4) backbone"
                          : top.has_tensor("d2t") ? "a reduced draft vocabulary (d2t)"
                          : top.has_tensor("markov_w1.weight") ? "DSpark's Markov head (markov_w1)"
                          : top.has_tensor("selector_hidden.weight") ? "DFlash2's selector (selector_hidden)"
                          : top.has_tensor("blk.0.attn_sinks.weight") ? "attention sinks (blk.N.attn_sinks)"
                                                                      : nullptr;
    if (variant)
        return r.err().fail(TDM_ERR_UNSUPPORTED,
                            "%s: a DFlash head with %s; the dflash head runs the plain block drafter", r.path(), variant);
    return TDM_OK;
}

// llama.cpp's "dflash" GGUF as its converter writes it from z-lab's checkpoint: a Qwen3 body
// under dflash.*, dflash.target_layers already counting the layer whose input is tapped
// (z-lab's l + 1: llama.cpp arms the target's layer-input extraction with these ids),
// dflash.block_size (llama.cpp's default 16 when absent), the mask token as the tokenizer's
// (the first converters wrote dflash.mask_token_id). Variants the head does not run (DSpark's
// Markov head, DFlash2's selector, hyper-connection backbones, sliding windows, a reduced
// draft vocabulary, attention sinks) are refused by name.
tdm_status read_gguf(const HparamReader& top, DflashHparams* hp) {
    const Err err = top.err();
    const HparamReader r = top.with_prefix("dflash.");
    TDM_SDK_TRY(r.u32("block_count", 1, kMaxDraftLayers, &hp->n_layer));
    TDM_SDK_TRY(r.u32("embedding_length", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("feed_forward_length", 1, kMaxWidth * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32("attention.head_count", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("attention.head_count_kv", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("attention.key_length", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    uint32_t value_length = 0;
    TDM_SDK_TRY(r.u32_or("attention.value_length", 4, 1024, hp->head_dim, &value_length));
    if (value_length != hp->head_dim)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: dflash.attention.value_length %u differs from key_length %u",
                        r.path(), value_length, hp->head_dim);
    TDM_SDK_TRY(r.f32_or("rope.freq_base", 1.0, 1e12, 10000.0f, &hp->rope_theta));
    TDM_SDK_TRY(r.f32("attention.layer_norm_rms_epsilon", 0.0, 1.0, &hp->rms_eps));
    TDM_SDK_TRY(r.u32_or("vocab_size", 0, 1u << 24, 0, &hp->n_vocab));
    uint32_t target_width = 0;
    TDM_SDK_TRY(r.u32_or("target_hidden_size", 0, kMaxWidth, hp->n_embd, &target_width));
    if (target_width != hp->n_embd)
        return err.fail(TDM_ERR_UNSUPPORTED,
                        "%s: dflash.target_hidden_size %u differs from the head's width %u (llama.cpp's graph, and "
                        "this head, project taps of the head's own width)",
                        r.path(), target_width, hp->n_embd);
    if (!top.has({"tokenizer.ggml.mask_token_id", "dflash.mask_token_id"}))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: tokenizer.ggml.mask_token_id is missing: the token of the block's "
                        "masked rows", r.path());
    TDM_SDK_TRY(read_block_and_mask(top, "dflash.block_size", {"tokenizer.ggml.mask_token_id", "dflash.mask_token_id"},
                                    hp));
    if (!r.has("target_layers"))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: dflash.target_layers is missing: which target layers' input the head "
                        "reads", r.path());
    int64_t ids[TDM_MAX_FEATURE_TAPS + 1];
    size_t n = 0;
    TDM_SDK_TRY(r.i64_array("target_layers", 0, kMaxLayerId, ids, TDM_MAX_FEATURE_TAPS, &n));
    if (n == 0) return err.fail(TDM_ERR_BAD_MODEL, "%s: dflash.target_layers lists no target layer", r.path());
    for (size_t i = 0; i < n; ++i) hp->tap_layers.push_back(uint32_t(ids[i]));
    const char* scaling = "none";
    TDM_SDK_TRY(r.string_or("rope.scaling.type", "none", &scaling));
    if (std::strcmp(scaling, "none") != 0)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: dflash.rope.scaling.type '%s' is not supported (none only)", r.path(),
                        scaling);
    return refuse_variants(top);
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
        hp->tap_layers = {n_target / 2 + 1};
        return TDM_OK;
    }
    if (n > TDM_MAX_FEATURE_TAPS)
        return r.err().fail(TDM_ERR_UNSUPPORTED, "%s: %u draft layers would read %u target layers; at most %u", r.path(),
                            n, n, TDM_MAX_FEATURE_TAPS);
    for (uint32_t i = 0; i < n; ++i)  // round half to even, as Python's round(); + 1: the output of layer l
        hp->tap_layers.push_back(uint32_t(std::nearbyint(1.0 + double(i) * double(n_target - 4) / double(n - 1))) + 1);
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
    for (size_t i = 0; i < hp.tap_layers.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (hp.tap_layers[i] == hp.tap_layers[j])
                return err.fail(TDM_ERR_BAD_MODEL, "%s: the input of target layer %u is listed twice", r.path(),
                                hp.tap_layers[i]);
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
        const char* arch = "";
        if (!is_dflash(r, &arch)) {
            if (std::strcmp(arch, "dflash-draft") == 0)
                return e.fail(TDM_ERR_UNSUPPORTED,
                              "%s: architecture 'dflash-draft' (a llama.cpp fork's layout) is not read; the dflash "
                              "head reads llama.cpp's 'dflash' GGUF and z-lab's HF directory",
                              r.path());
            return e.fail(TDM_ERR_NOT_FOUND,
                          "%s holds no DFlash head (%s; its architecture is '%s'); pass the head's own file: "
                          "--spec-type dflash -md FILE (a dflash GGUF or the head's HF directory)",
                          r.path(), r.hf() ? "no dflash_config" : "not a dflash GGUF", arch);
        }
        auto h = std::make_unique<DflashHead>();
        h->host = host;
        h->hf = r.hf();
        TDM_SDK_TRY(h->hf ? read_hf(r, &h->hp) : read_gguf(r, &h->hp));
        int64_t n_target = 0;
        if (!options || host->option_get_int(options, "target_n_layer", &n_target) != TDM_OK) n_target = 0;
        if (h->hp.tap_layers.empty())
            TDM_SDK_TRY(default_layers(r, h->hp.n_target_layers ? h->hp.n_target_layers : uint32_t(n_target), &h->hp));
        TDM_SDK_TRY(check(host, options, r, h->hp, uint32_t(n_target)));
        if (h->hf) h->prefix = r.has_tensor("fc.weight") ? "" : "model.";
        h->features = static_cast<const tdm_ext_target_features*>(
            host->get_extension(TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION, nullptr));
        uint32_t block_version = 0;
        const auto* block = static_cast<const tdm_ext_block_draft*>(
            host->get_extension(TDM_EXT_BLOCK_DRAFT, 1, &block_version));
        if (!h->features || !block)
            return e.fail(TDM_ERR_UNSUPPORTED, "dflash: the host lacks extension %s: %s",
                          h->features ? TDM_EXT_BLOCK_DRAFT : TDM_EXT_TARGET_FEATURES, host->last_error());
        for (uint32_t layer : h->hp.tap_layers) h->taps.push_back({TDM_TAP_LAYER_INPUT, layer});
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
        // version 2: the norm and LM head for the drafted rows only (a version 1 host gets
        // every block row's)
        if (block_version >= 2 && TDM_HAS_MEMBER(block, tdm_ext_block_draft, declare_drafted_rows) &&
            block->declare_drafted_rows) {
            if (block->declare_drafted_rows(info) != TDM_OK)
                return e.fail(TDM_ERR_BAD_MODEL, "%s: dflash: drafted rows only were refused: %s", r.path(),
                              host->last_error());
            h->drafted_rows = true;
        }
        *out = h.release();
        return TDM_OK;
    });
}

void dflash_destroy(void* head) { delete static_cast<DflashHead*>(head); }

}  // namespace dflash
