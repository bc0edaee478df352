// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/qwen35/create.cpp: the create and destroy callbacks of
// the qwen35 / qwen35moe architectures and the qwen35-mtp draft head:
// hyper-parameters and options -> the memory declared to the host.
// Not here: descriptors (../plugin.cpp), weights (load.cpp).
#include <cstring>
#include <memory>
#include <string>

#include <tandem/ext/batched_draft.h>

#include "arch.h"

namespace qwen {
namespace {

using tdm::sdk::Err;

// Declares one KV layer per gated-attention layer and two recurrent states
// per DeltaNet layer: the conv state (the K-1 previous qkv inputs) and the
// fp32 SSM state [Nv][dk][dv].
void declare_memory(Qwen35Model* m) {
    const Qwen35Hparams& hp = m->hp;
    m->layers.assign(hp.n_layer, Qwen35Layer{});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        Qwen35Layer& l = m->layers[il];
        l.full_attention = hp.full_attention[il] != 0;
        if (l.full_attention) {
            l.kv = uint32_t(m->attention.size());
            m->attention.push_back(tdm::sdk::full_attention(hp.n_head_kv, hp.head_dim, hp.head_dim));
        } else {
            l.state = uint32_t(m->states.size());
            m->states.push_back(tdm::sdk::recurrent_state(uint64_t(hp.conv_dim()) * (hp.conv_kernel - 1)));
            m->states.push_back(tdm::sdk::recurrent_state(uint64_t(hp.gdn_nv) * hp.gdn_dk * hp.gdn_dv));
        }
    }
}

// Option gdn_chunk: the chunked delta rule for prefill batches of more tokens
// (0 = never, the default).
tdm_status read_gdn_chunk(const tdm_host_api* host, const tdm_options* options, uint32_t* out, Err err) {
    *out = 0;
    int64_t chunk = 0;
    if (!options || host->option_get_int(options, "gdn_chunk", &chunk) != TDM_OK) return TDM_OK;
    if (chunk < 0 || chunk > 64)
        return err.fail(TDM_ERR_INVALID_ARGUMENT, "gdn_chunk = %lld: use 0 (recurrent form) or 1..64", (long long)chunk);
    if (chunk > 0) {
        tdm::sdk::Host h;
        TDM_SDK_TRY(h.init(host, "qwen-nextn", err));
        TDM_SDK_TRY(qwen35_require_chunked_delta_rule(h, uint32_t(chunk), err));
    }
    *out = uint32_t(chunk);
    return TDM_OK;
}

// The head's hyper-parameters must be the trunk's: the head reads the trunk's
// hidden states and shares its embedding and LM head.
tdm_status check_matches_target(const Qwen35Hparams& h, const Qwen35Hparams& t, const char* path, Err err) {
    if (h.moe != t.moe || h.n_embd != t.n_embd || h.n_head != t.n_head || h.n_head_kv != t.n_head_kv ||
        h.head_dim != t.head_dim || h.n_ff != t.n_ff || h.n_expert != t.n_expert || h.n_ff_exp != t.n_ff_exp ||
        (h.n_vocab && h.n_vocab != t.n_vocab))
        return err.fail(TDM_ERR_BAD_MODEL,
                        "%s: the MTP head's shape (%s, hidden %u, %u heads of %u) does not match the target's (%s, "
                        "hidden %u, %u heads of %u)",
                        path, h.moe ? "MoE" : "dense", h.n_embd, h.n_head, h.head_dim, t.moe ? "MoE" : "dense",
                        t.n_embd, t.n_head, t.head_dim);
    return TDM_OK;
}

// Options of the head: mtp_hidden (post-norm, the default, or pre-norm) and
// draft_vocab (0 = the whole vocabulary).
tdm_status read_mtp_options(const tdm_host_api* host, const tdm_options* options, Qwen35Mtp* h, Err err) {
    if (!options) return TDM_OK;
    const char* hidden = nullptr;
    if (host->option_get_string(options, "mtp_hidden", &hidden) == TDM_OK && hidden) {
        if (std::strcmp(hidden, "pre-norm") == 0)
            h->hidden = TDM_HIDDEN_PRE_NORM;
        else if (std::strcmp(hidden, "post-norm") != 0)
            return err.fail(TDM_ERR_INVALID_ARGUMENT, "mtp_hidden = '%s': use post-norm or pre-norm", hidden);
    }
    int64_t dv = 0;
    if (host->option_get_int(options, "draft_vocab", &dv) == TDM_OK) {
        if (dv < 0)
            return err.fail(TDM_ERR_INVALID_ARGUMENT, "draft_vocab = %lld: use 0 (all) or a token count",
                            (long long)dv);
        if (dv > 0 && h->hp.n_vocab && uint64_t(dv) < h->hp.n_vocab) h->draft_vocab = uint32_t(dv);
    }
    return TDM_OK;
}

}  // namespace

tdm_status qwen35_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                         tdm_model_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "qwen35: create", [&]() -> tdm_status {
        auto m = std::make_unique<Qwen35Model>();
        m->host = host;
        m->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
        TDM_SDK_TRY(qwen35_read_hparams(host, src, &m->hp, e));
        if (m->hp.n_vocab == 0)
            return e.fail(TDM_ERR_BAD_MODEL, "%s: no token_embd.weight (an MTP-only file? load it with --mtp-head)",
                          host->source_path(src));
        TDM_SDK_TRY(read_gdn_chunk(host, options, &m->gdn_chunk, e));
        declare_memory(m.get());
        m->description = qwen35_describe(m->hp);
        tdm_model_info mine{};
        mine.n_vocab = m->hp.n_vocab;
        mine.n_embd = m->hp.n_embd;
        mine.n_ctx_train = m->hp.n_ctx_train;
        mine.n_attention_layers = uint32_t(m->attention.size());
        mine.attention_layers = m->attention.data();
        mine.n_recurrent_states = uint32_t(m->states.size());
        mine.recurrent_states = m->states.data();
        mine.description = m->description.c_str();
        // Both forms of the delta rule run each sequence of a batch from its own
        // checkpoint. But which form a row gets depends on the batch's size when
        // gdn_chunk is set: a request's decode row beside another's prompt would
        // change form, and its output with it, so such a model runs one sequence a pass.
        if (m->gdn_chunk == 0) mine.flags |= TDM_MODEL_BATCHED_STATES;
        tdm::sdk::set_model_info(info, mine);
        // every layer's input, the last layer's output and the final norm's (forward.cpp)
        if (host->abi_version >= 3)
            m->features = static_cast<const tdm_ext_target_features*>(
                host->get_extension(TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION, nullptr));
        if (m->features && m->features->provide(info, m->hp.n_layer) != TDM_OK)
            return e.fail(TDM_ERR_INVALID_ARGUMENT, "qwen35: %s", host->last_error());
        *out = m.release();
        return TDM_OK;
    });
}

void qwen35_destroy(void* model) { delete static_cast<Qwen35Model*>(model); }

tdm_status qwen35_mtp_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                             const tdm_options* options, tdm_draft_head_info* info, void** out, char* err,
                             size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "qwen35-mtp: create", [&]() -> tdm_status {
        auto h = std::make_unique<Qwen35Mtp>();
        h->host = host;
        h->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
        h->target = static_cast<const Qwen35Model*>(target);
        const char* path = host->source_path(src);
        TDM_SDK_TRY(qwen35_read_hparams(host, src, &h->hp, e));
        if (h->hp.n_nextn == 0)
            return e.fail(TDM_ERR_NOT_FOUND,
                          "%s has no NextN/MTP layers (%s), so --spec-type mtp has no head to draft with. Use a file "
                          "that keeps the checkpoint's mtp.* weights: the HF directory itself, or a GGUF converted "
                          "with llama.cpp's convert_hf_to_gguf.py from it (it writes them as blk.N.nextn.*); or pass "
                          "an MTP-only GGUF with --mtp-head FILE",
                          path, h->hf ? "no mtp.* tensors in the directory" : "nextn_predict_layers is 0 or absent");
        if (h->target) {
            TDM_SDK_TRY(check_matches_target(h->hp, h->target->hp, path, e));
            if (h->hp.n_vocab == 0) h->hp.n_vocab = h->target->hp.n_vocab;
            h->hp.tied = h->target->hp.tied;
        }
        TDM_SDK_TRY(read_mtp_options(host, options, h.get(), e));
        h->block = h->hp.n_layer;
        h->layer.full_attention = true;
        h->layer.kv = 0;
        h->own = tdm::sdk::full_attention(h->hp.n_head_kv, h->hp.head_dim, h->hp.head_dim);
        tdm_draft_head_info mine{};
        mine.hidden = h->hidden;
        mine.n_own_layers = 1;
        mine.own_layers = &h->own;
        mine.n_embd = h->hp.n_embd;
        // its step is written for any rows of any sequences: one graph drafts for all of a
        // server's requests (the flag is read from ABI 3 plugins, on hosts that offer it)
        if (host->abi_version >= 3 && host->get_extension(TDM_EXT_BATCHED_DRAFT, TDM_EXT_BATCHED_DRAFT_VERSION, nullptr))
            mine.flags |= TDM_DRAFT_HEAD_BATCHED;
        tdm::sdk::set_draft_head_info(info, mine);
        *out = h.release();
        return TDM_OK;
    });
}

void qwen35_mtp_destroy(void* head) { delete static_cast<Qwen35Mtp*>(head); }

}  // namespace qwen
