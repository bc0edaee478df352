// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/head/hparams.cpp: the head's hyper-parameters (GGUF keys "eagle3.*" as
// llama.cpp's converter writes them, or an HF config.json of LlamaForCausalLMEagle3), the
// checks that need only the head's file and the target's vocabulary size, and the
// create/destroy callbacks (the feature taps it asks for, its one KV layer).
// Not here: the checks against the target's weights (load.cpp).
#include <cstring>
#include <memory>
#include <string>

#include <tandem/ext/batched_draft.h>

#include "eagle3.h"

namespace eagle3 {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

constexpr uint32_t kMaxWidth = 1u << 20;
constexpr uint32_t kMaxLayerId = 4095;

// The file is an EAGLE-3 head: GGUF architecture "eagle3"; an HF config whose first
// architecture names Eagle3 (the EAGLE authors' and SpecForge's LlamaForCausalLMEagle3; their
// model_type is "llama"), or a speculators config of type eagle3.
bool is_eagle3(const HparamReader& r, const char** arch) {
    *arch = "";
    if (!r.hf()) {
        (void)r.string_or("general.architecture", "", arch);
        return std::strcmp(*arch, "eagle3") == 0;
    }
    const char* spec = "";
    (void)r.string_or("speculators_model_type", "", &spec);
    if (std::strcmp(spec, "eagle3") == 0) return true;
    (void)r.string_or("architectures.0", "", arch);
    return std::strstr(*arch, "Eagle3") != nullptr || std::strstr(*arch, "eagle3") != nullptr;
}

tdm_status read_layer_ids(const HparamReader& r, const char* key, Eagle3Hparams* hp, bool* found) {
    *found = r.has(key);
    if (!*found) return TDM_OK;
    int64_t ids[TDM_MAX_FEATURE_TAPS + 1];
    size_t n = 0;
    TDM_SDK_TRY(r.i64_array(key, 0, kMaxLayerId, ids, TDM_MAX_FEATURE_TAPS, &n));
    if (n == 0) return r.err().fail(TDM_ERR_BAD_MODEL, "%s: %s lists no target layer", r.path(), key);
    hp->target_layers.assign(ids, ids + n);
    return TDM_OK;
}

tdm_status read_gguf(const HparamReader& top, Eagle3Hparams* hp) {
    const Err err = top.err();
    const HparamReader r = top.with_prefix("eagle3.");
    uint32_t n_layer = 0;
    TDM_SDK_TRY(r.u32("block_count", 1, 64, &n_layer));
    if (n_layer != 1)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: eagle3.block_count is %u; an EAGLE-3 head has one decoder layer",
                        r.path(), n_layer);
    TDM_SDK_TRY(r.u32("embedding_length", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32_or("target_hidden_size", 4, kMaxWidth, hp->n_embd, &hp->n_embd_target));
    TDM_SDK_TRY(r.u32("feed_forward_length", 1, kMaxWidth * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32("attention.head_count", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("attention.head_count_kv", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("attention.key_length", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    TDM_SDK_TRY(r.f32_or("rope.freq_base", 1.0, 1e12, 10000.0f, &hp->rope_theta));
    TDM_SDK_TRY(r.f32("attention.layer_norm_rms_epsilon", 0.0, 1.0, &hp->rms_eps));
    TDM_SDK_TRY(r.boolean_or("norm_before_residual", false, &hp->norm_before_residual));
    TDM_SDK_TRY(r.u32_or("vocab_size", 0, 1u << 24, 0, &hp->n_vocab));
    // llama.cpp's converter permutes q/k for its adjacent-pair RoPE, as for llama targets
    hp->rope_mode = TDM_ROPE_ADJACENT;
    bool found = false;
    // the key's two spellings: the converter's current and its first
    TDM_SDK_TRY(read_layer_ids(r, "target_layers", hp, &found));
    if (!found) TDM_SDK_TRY(read_layer_ids(r, "extract_layers", hp, &found));
    if (!found)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: eagle3.target_layers is missing: which target layers' input the head "
                        "reads", r.path());
    tdm_tensor_info ti;
    if (top.has_tensor("token_embd.weight") && hp->n_vocab == 0) {
        TDM_SDK_TRY(top.tensor_info("token_embd.weight", &ti));
        hp->n_vocab = uint32_t(ti.ne[1]);
    }
    hp->d2t = top.has_tensor("d2t") ? D2tForm::absolute : D2tForm::none;
    if (hp->d2t != D2tForm::none) {
        TDM_SDK_TRY(top.tensor_info("d2t", &ti));
        hp->n_vocab_draft = uint32_t(ti.ne[0]);
    } else if (top.has_tensor("output.weight")) {
        TDM_SDK_TRY(top.tensor_info("output.weight", &ti));
        hp->n_vocab_draft = uint32_t(ti.ne[1]);
    }
    return TDM_OK;
}

tdm_status read_hf(const HparamReader& top, Eagle3Hparams* hp, std::vector<float>* rope_divisors) {
    const Err err = top.err();
    // speculators configs nest the decoder layer's shape
    const bool nested = !top.has("hidden_size") && top.has("transformer_layer_config.hidden_size");
    const HparamReader r = top.with_prefix(nested ? "transformer_layer_config." : "");
    uint32_t n_layer = 1;
    TDM_SDK_TRY(r.u32_or("num_hidden_layers", 1, 64, 1, &n_layer));
    if (n_layer != 1)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: num_hidden_layers is %u; an EAGLE-3 head has one decoder layer",
                        r.path(), n_layer);
    TDM_SDK_TRY(r.u32("hidden_size", 4, kMaxWidth, &hp->n_embd));
    TDM_SDK_TRY(r.u32("intermediate_size", 1, kMaxWidth * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("head_dim", 4, 1024, hp->n_embd / hp->n_head, &hp->head_dim));
    TDM_SDK_TRY(r.f32_or("rope_theta", 1.0, 1e12, 10000.0f, &hp->rope_theta));
    TDM_SDK_TRY(r.f32_or("rms_norm_eps", 0.0, 1.0, 1e-6f, &hp->rms_eps));
    TDM_SDK_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
    TDM_SDK_TRY(top.u32_or("draft_vocab_size", 1, 1u << 24, hp->n_vocab, &hp->n_vocab_draft));
    TDM_SDK_TRY(top.u32_or("target_hidden_size", 4, kMaxWidth, hp->n_embd, &hp->n_embd_target));
    TDM_SDK_TRY(top.boolean_or("norm_before_residual", false, &hp->norm_before_residual));
    const char* scaling = "default";
    TDM_SDK_TRY(r.string_or({"rope_scaling.rope_type", "rope_scaling.type"}, "default", &scaling));
    if (std::strcmp(scaling, "llama3") == 0) {
        TDM_SDK_TRY(read_llama3_scaling(r, hp->rope_theta, hp->head_dim, rope_divisors));
        if (hp->head_dim / 2 > hp->n_embd)  // the divisors are built from embedding rows
            return err.fail(TDM_ERR_BAD_MODEL, "%s: head_dim %u is over twice hidden_size %u", r.path(), hp->head_dim,
                            hp->n_embd);
    } else if (std::strcmp(scaling, "default") != 0) {
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: rope_scaling of type '%s' is not supported (default or llama3)",
                        r.path(), scaling);
    }
    hp->rope_mode = TDM_ROPE_NEOX;
    bool found = false;
    TDM_SDK_TRY(read_layer_ids(top, "eagle_config.eagle_aux_hidden_state_layer_ids", hp, &found));
    if (!found) TDM_SDK_TRY(read_layer_ids(top, "eagle_aux_hidden_state_layer_ids", hp, &found));
    hp->d2t = top.has_tensor({"d2t", "model.d2t"}) ? D2tForm::offset : D2tForm::none;
    if (hp->d2t != D2tForm::none) {
        tdm_tensor_info ti;
        TDM_SDK_TRY(top.tensor_info({"d2t", "model.d2t"}, &ti));
        if (ti.ne[0] != int64_t(hp->n_vocab_draft))
            return err.fail(TDM_ERR_BAD_MODEL, "%s: d2t maps %lld draft ids, draft_vocab_size is %u", r.path(),
                            (long long)ti.ne[0], hp->n_vocab_draft);
    }
    return TDM_OK;
}

// The decoder layer's and the top-level tensors' prefixes in this file.
tdm_status find_names(const HparamReader& r, Eagle3Names* n) {
    if (!r.hf()) {
        *n = {"blk.0.", "", "attn_norm_2.weight"};
        return TDM_OK;
    }
    n->hidden_norm = "hidden_norm.weight";
    n->top_prefix = r.has_tensor("fc.weight") ? "" : "model.";
    for (const char* p : {"midlayer.", "layers.0.", "model.layers.0.", "model.midlayer."}) {
        if (r.has_tensor((std::string(p) + "self_attn.q_proj.weight").c_str())) {
            n->layer_prefix = p;
            return TDM_OK;
        }
    }
    return r.err().fail(TDM_ERR_BAD_MODEL,
                        "%s: no decoder layer (midlayer.self_attn.q_proj.weight, layers.0.*, model.layers.0.*)",
                        r.path());
}

// EAGLE-3's default taps when the file names none (vLLM's): the input of layers 2, L/2 and
// L-3 of an L-layer target.
tdm_status default_layers(const tdm_host_api* host, const tdm_options* options, const HparamReader& r,
                          Eagle3Hparams* hp) {
    int64_t n = 0;
    if (!options || host->option_get_int(options, "target_n_layer", &n) != TDM_OK || n < 6)
        return r.err().fail(TDM_ERR_BAD_MODEL,
                            "%s: config.json names no target layers (eagle_config.eagle_aux_hidden_state_layer_ids) "
                            "and the target's layer count is unknown here",
                            r.path());
    hp->target_layers = {2u, uint32_t(n / 2), uint32_t(n - 3)};
    return TDM_OK;
}

// Everything that needs only the file (and the target's vocabulary size).
tdm_status check(const tdm_host_api* host, const tdm_options* options, const HparamReader& r, const Eagle3Hparams& hp) {
    const Err err = r.err();
    if (hp.n_head % hp.n_head_kv || hp.n_head / hp.n_head_kv > 16)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: %u attention heads cannot share %u KV heads", r.path(), hp.n_head,
                        hp.n_head_kv);
    if (hp.head_dim % 4)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: head_dim %u is not a multiple of 4", r.path(), hp.head_dim);
    for (size_t i = 0; i < hp.target_layers.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (hp.target_layers[i] == hp.target_layers[j])
                return err.fail(TDM_ERR_BAD_MODEL, "%s: target layer %u is listed twice", r.path(), hp.target_layers[i]);
    int64_t n_vocab = 0;
    if (options && host->option_get_int(options, "n_vocab", &n_vocab) == TDM_OK && hp.n_vocab &&
        int64_t(hp.n_vocab) != n_vocab)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: the head is for a vocabulary of %u tokens, the target's has %lld",
                        r.path(), hp.n_vocab, (long long)n_vocab);
    const uint32_t target_vocab = hp.n_vocab ? hp.n_vocab : uint32_t(n_vocab);
    if (hp.d2t == D2tForm::none && hp.n_vocab_draft && target_vocab && hp.n_vocab_draft != target_vocab)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: the head drafts over %u tokens, the target has %u, and the file has no d2t to map them",
                        r.path(), hp.n_vocab_draft, target_vocab);
    if (hp.d2t != D2tForm::none && hp.n_vocab_draft % 4)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: a draft vocabulary of %u tokens: only multiples of 4 are supported",
                        r.path(), hp.n_vocab_draft);
    return TDM_OK;
}

}  // namespace

tdm_status eagle3_create(const tdm_host_api* host, const tdm_model_source* src, void*, const tdm_options* options,
                         tdm_draft_head_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "eagle3: create", [&]() -> tdm_status {
        const HparamReader r(host, src, e);
        const char* arch = "";
        if (!is_eagle3(r, &arch))
            return e.fail(TDM_ERR_NOT_FOUND,
                          "%s holds no EAGLE-3 head (its architecture is '%s'); pass the head's own file: "
                          "--spec-type eagle3 -md FILE (an eagle3 GGUF or the head's HF directory)",
                          r.path(), arch);
        auto h = std::make_unique<Eagle3Head>();
        h->host = host;
        h->hf = r.hf();
        TDM_SDK_TRY(r.hf() ? read_hf(r, &h->hp, &h->rope_divisors) : read_gguf(r, &h->hp));
        if (h->hp.target_layers.empty()) TDM_SDK_TRY(default_layers(host, options, r, &h->hp));
        TDM_SDK_TRY(find_names(r, &h->names));
        TDM_SDK_TRY(check(host, options, r, h->hp));
        h->features = static_cast<const tdm_ext_target_features*>(
            host->get_extension(TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION, nullptr));
        if (!h->features)
            return e.fail(TDM_ERR_UNSUPPORTED, "eagle3: the host lacks extension %s (the target's layer states): %s",
                          TDM_EXT_TARGET_FEATURES, host->last_error());
        for (uint32_t layer : h->hp.target_layers) h->taps.push_back({TDM_TAP_LAYER_INPUT, layer});
        h->own = tdm::sdk::full_attention(h->hp.n_head_kv, h->hp.head_dim, h->hp.head_dim);
        tdm_draft_head_info mine{};
        mine.struct_size = sizeof mine;
        mine.hidden = TDM_HIDDEN_NONE;  // the taps instead
        mine.n_own_layers = 1;
        mine.own_layers = &h->own;
        mine.n_embd = h->hp.n_embd;
        if (host->get_extension(TDM_EXT_BATCHED_DRAFT, TDM_EXT_BATCHED_DRAFT_VERSION, nullptr))
            mine.flags |= TDM_DRAFT_HEAD_BATCHED;
        tdm::sdk::set_draft_head_info(info, mine);
        if (h->features->request(info, h->taps.data(), uint32_t(h->taps.size())) != TDM_OK)
            return e.fail(TDM_ERR_BAD_MODEL, "%s: eagle3: the target layers the head reads were refused: %s", r.path(),
                          host->last_error());
        *out = h.release();
        return TDM_OK;
    });
}

void eagle3_destroy(void* head) { delete static_cast<Eagle3Head*>(head); }

}  // namespace eagle3
