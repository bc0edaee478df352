// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/text/create.cpp: the create and destroy callbacks of the glm4
// architecture and the glm-mtp draft head: hyper-parameters and options -> the memory
// declared to the host.
// Not here: descriptors (../plugin.cpp), weights (load.cpp).
#include <cstring>
#include <memory>
#include <string>

#include <tandem/ext/batched_draft.h>

#include "arch.h"

namespace glm {
namespace {

using tdm::sdk::Err;

// The head reads the trunk's hidden rows and attends like a trunk layer, so the widths
// must be the trunk's. Its RoPE pairing may differ (an HF side file for a GGUF target): it
// ropes its own q/k against its own KV.
tdm_status check_matches_target(const GlmHparams& h, const GlmHparams& t, const char* path, Err err) {
    if (h.n_embd != t.n_embd || h.n_head != t.n_head || h.n_head_kv != t.n_head_kv || h.head_dim != t.head_dim ||
        h.n_ff != t.n_ff || (h.n_vocab && h.n_vocab != t.n_vocab))
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: the MTP layer's shape (hidden %u, %u heads of %u, vocab %u) does not match the target's "
                        "(hidden %u, %u heads of %u, vocab %u)",
                        path, h.n_embd, h.n_head, h.head_dim, h.n_vocab, t.n_embd, t.n_head, t.head_dim, t.n_vocab);
    return TDM_OK;
}

// draft_vocab (0 = the whole vocabulary): draft logits over the first ids only. mtp_hidden
// may only name what the layer was trained on: the trunk's post-norm hidden (spec §3.2).
tdm_status read_mtp_options(const tdm_host_api* host, const tdm_options* options, GlmMtp* h, Err err) {
    if (!options) return TDM_OK;
    const char* hidden = nullptr;
    if (host->option_get_string(options, "mtp_hidden", &hidden) == TDM_OK && hidden &&
        std::strcmp(hidden, "post-norm") != 0)
        return err.fail(TDM_ERR_INVALID_ARGUMENT,
                        "mtp_hidden = '%s': GLM-OCR's MTP layer reads the trunk's post-norm hidden only", hidden);
    int64_t dv = 0;
    if (host->option_get_int(options, "draft_vocab", &dv) == TDM_OK) {
        if (dv < 0)
            return err.fail(TDM_ERR_INVALID_ARGUMENT, "draft_vocab = %lld: use 0 (all) or a token count",
                            (long long)dv);
        if (dv > 0 && uint64_t(dv) < h->hp.n_vocab) h->draft_vocab = uint32_t(dv);
    }
    return TDM_OK;
}

}  // namespace

tdm_status glm_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options*, tdm_model_info* info,
                      void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "glm4: create", [&]() -> tdm_status {
        auto m = std::make_unique<GlmModel>();
        m->host = host;
        m->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
        if (host->abi_version >= 3)
            m->encoder = static_cast<const tdm_ext_encoder*>(
                host->get_extension(TDM_EXT_ENCODER, TDM_EXT_ENCODER_VERSION, nullptr));
        TDM_SDK_TRY(glm_read_hparams(host, src, &m->hp, e));
        if (m->hp.n_vocab == 0)
            return e.fail(TDM_ERR_BAD_MODEL, "%s: no token_embd.weight (an MTP-only file? load it with --mtp-head)",
                          host->source_path(src));
        const GlmHparams& hp = m->hp;
        m->attention.assign(hp.n_layer, tdm::sdk::full_attention(hp.n_head_kv, hp.head_dim, hp.head_dim));
        m->description = glm_describe(hp);
        tdm_model_info mine{};
        mine.n_vocab = hp.n_vocab;
        mine.n_embd = hp.n_embd;
        mine.n_ctx_train = hp.n_ctx_train;
        mine.n_attention_layers = hp.n_layer;
        mine.attention_layers = m->attention.data();
        mine.description = m->description.c_str();
        tdm::sdk::set_model_info(info, mine);
        // every layer's input, the last layer's output and the final norm's (forward.cpp)
        if (host->abi_version >= 3)
            m->features = static_cast<const tdm_ext_target_features*>(
                host->get_extension(TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION, nullptr));
        if (m->features && m->features->provide(info, hp.n_layer) != TDM_OK)
            return e.fail(TDM_ERR_INVALID_ARGUMENT, "glm4: %s", host->last_error());
        *out = m.release();
        return TDM_OK;
    });
}

void glm_destroy(void* model) { delete static_cast<GlmModel*>(model); }

tdm_status glm_mtp_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                          const tdm_options* options, tdm_draft_head_info* info, void** out, char* err,
                          size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "glm-mtp: create", [&]() -> tdm_status {
        auto h = std::make_unique<GlmMtp>();
        h->host = host;
        h->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
        h->target = static_cast<const GlmModel*>(target);
        const char* path = host->source_path(src);
        TDM_SDK_TRY(glm_read_hparams(host, src, &h->hp, e));
        if (h->hp.n_nextn == 0)
            return e.fail(TDM_ERR_NOT_FOUND,
                          "%s has no NextN/MTP layer (%s), so --spec-type mtp has no head to draft with. Use the HF "
                          "checkpoint itself (it stores the layer as model.language_model.layers.%u.*) or a GGUF "
                          "converted from it that keeps the layer (blk.%u.nextn.*, glm4.nextn_predict_layers = 1)",
                          path, h->hf ? "num_nextn_predict_layers is 0 or its tensors are absent"
                                      : "glm4.nextn_predict_layers is 0 or absent",
                          h->hp.n_layer, h->hp.n_layer);
        if (h->target) {
            TDM_SDK_TRY(check_matches_target(h->hp, h->target->hp, path, e));
            if (h->hp.n_vocab == 0) h->hp.n_vocab = h->target->hp.n_vocab;
        }
        if (h->hp.n_vocab == 0)
            return e.fail(TDM_ERR_BAD_MODEL, "%s: an MTP-only file needs its target (no token_embd.weight)", path);
        TDM_SDK_TRY(read_mtp_options(host, options, h.get(), e));
        h->block = h->hp.n_layer;
        h->own = tdm::sdk::full_attention(h->hp.n_head_kv, h->hp.head_dim, h->hp.head_dim);
        tdm_draft_head_info mine{};
        mine.hidden = TDM_HIDDEN_POST_NORM;  // the trunk's LM-head input (spec §3.2)
        mine.n_own_layers = 1;
        mine.own_layers = &h->own;
        mine.n_embd = h->hp.n_embd;
        // its step is written for any rows of any sequences
        if (host->abi_version >= 3 && host->get_extension(TDM_EXT_BATCHED_DRAFT, TDM_EXT_BATCHED_DRAFT_VERSION, nullptr))
            mine.flags |= TDM_DRAFT_HEAD_BATCHED;
        tdm::sdk::set_draft_head_info(info, mine);
        *out = h.release();
        return TDM_OK;
    });
}

void glm_mtp_destroy(void* head) { delete static_cast<GlmMtp*>(head); }

}  // namespace glm
