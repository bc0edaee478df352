// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/qwen3/hparams.cpp: Qwen3 hyper-parameters, from GGUF
// metadata (the keys llama.cpp's converter writes) or an HF config.json, and
// the create/destroy callbacks (hyper-parameters -> declared KV layers).
// Every value is range-checked before it sizes anything (plugin contract rule 7).
#include <memory>
#include <string>

#include "arch.h"

namespace qwen {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

tdm_status qwen3_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Qwen3Hparams* hp, Err err) {
    const HparamReader r(host, src, err);
    constexpr uint32_t kMax = 1u << 20;
    TDM_SDK_TRY(r.u32(r.pick("qwen3.embedding_length", "hidden_size"), 4, kMax, &hp->n_embd));
    TDM_SDK_TRY(r.u32(r.pick("qwen3.block_count", "num_hidden_layers"), 1, 4096, &hp->n_layer));
    TDM_SDK_TRY(r.u32(r.pick("qwen3.attention.head_count", "num_attention_heads"), 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or(r.pick("qwen3.attention.head_count_kv", "num_key_value_heads"), 1, 4096, hp->n_head,
                         &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or(r.pick("qwen3.attention.key_length", "head_dim"), 4, 4096, hp->n_embd / hp->n_head,
                         &hp->head_dim));
    if (!r.hf()) {
        uint32_t vlen = 0;
        TDM_SDK_TRY(r.u32_or("qwen3.attention.value_length", 4, 4096, hp->head_dim, &vlen));
        if (vlen != hp->head_dim)
            return err.fail(TDM_ERR_BAD_MODEL, "%s: qwen3: value_length %u differs from key_length %u", r.path(), vlen,
                            hp->head_dim);
    }
    TDM_SDK_TRY(r.u32(r.pick("qwen3.feed_forward_length", "intermediate_size"), 1, kMax * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32_or(r.pick("qwen3.context_length", "max_position_embeddings"), 1, 1u << 24, 40960,
                         &hp->n_ctx_train));
    TDM_SDK_TRY(r.f32_or(r.pick("qwen3.rope.freq_base", "rope_theta"), 1.0, 1e12, 10000.0f, &hp->rope_theta));
    TDM_SDK_TRY(r.f32_or(r.pick("qwen3.attention.layer_norm_rms_epsilon", "rms_norm_eps"), 0.0, 1.0, 1e-6f,
                         &hp->rms_eps));
    if (!r.hf()) {
        // GGUF: the vocabulary is the embedding's row count; no output.weight = tied
        tdm_tensor_info ti;
        TDM_SDK_TRY(r.tensor_info("token_embd.weight", &ti));
        if (ti.ne[1] < 1 || ti.ne[1] > (1 << 24))
            return err.fail(TDM_ERR_BAD_MODEL, "%s: token_embd.weight has %lld rows, outside [1, %d]", r.path(),
                            (long long)ti.ne[1], 1 << 24);
        hp->n_vocab = uint32_t(ti.ne[1]);
        hp->tied = !r.has_tensor("output.weight");
    } else {
        TDM_SDK_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
        bool tied = false;
        TDM_SDK_TRY(r.boolean_or("tie_word_embeddings", false, &tied));
        hp->tied = tied || !r.has_tensor("lm_head.weight");
    }
    if (hp->n_head % hp->n_head_kv != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: qwen3: %u attention heads are not a multiple of %u KV heads", r.path(),
                        hp->n_head, hp->n_head_kv);
    if (hp->head_dim % 4 != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: qwen3: head_dim %u is not a multiple of 4", r.path(), hp->head_dim);
    return TDM_OK;
}

namespace {

std::string describe(const Qwen3Hparams& hp) {
    return "n_vocab = " + std::to_string(hp.n_vocab) + "\nn_embd = " + std::to_string(hp.n_embd) +
           "\nn_layer = " + std::to_string(hp.n_layer) + "\nn_head = " + std::to_string(hp.n_head) +
           "\nn_head_kv = " + std::to_string(hp.n_head_kv) + "\nhead_dim = " + std::to_string(hp.head_dim) +
           "\nn_ff = " + std::to_string(hp.n_ff) + "\nn_ctx_train = " + std::to_string(hp.n_ctx_train) +
           "\nrope_theta = " + std::to_string(hp.rope_theta) + "\nrms_eps = " + std::to_string(hp.rms_eps) +
           "\ntied_embeddings = " + (hp.tied ? "true" : "false");
}

}  // namespace

tdm_status qwen3_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options*,
                        tdm_model_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "qwen3: create", [&]() -> tdm_status {
        auto m = std::make_unique<Qwen3Model>();
        m->host = host;
        m->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
        TDM_SDK_TRY(qwen3_read_hparams(host, src, &m->hp, e));
        const Qwen3Hparams& hp = m->hp;
        // one full-attention KV layer per transformer layer
        m->attention.assign(hp.n_layer, tdm::sdk::full_attention(hp.n_head_kv, hp.head_dim, hp.head_dim));
        m->description = describe(hp);
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
            return e.fail(TDM_ERR_INVALID_ARGUMENT, "qwen3: %s", host->last_error());
        *out = m.release();
        return TDM_OK;
    });
}

void qwen3_destroy(void* model) { delete static_cast<Qwen3Model*>(model); }

}  // namespace qwen
