// SPDX-License-Identifier: Apache-2.0
// plugins/llama/text/hparams.cpp: Llama hyper-parameters, from GGUF metadata (the keys
// llama.cpp's converter writes, docs/models/llama.md §1) or an HF config.json, and the
// create/destroy callbacks (hyper-parameters -> declared KV layers). Every value is
// range-checked before it sizes anything (plugin contract rule 7).
// Not here: the llama3 frequency factors themselves (rope_factors.cpp).
#include <cstring>
#include <memory>
#include <string>

#include "arch.h"

namespace llama {
namespace {

using tdm::sdk::Err;
using tdm::sdk::HparamReader;

constexpr uint32_t kMax = 1u << 20;
constexpr uint32_t kMaxGqa = 16;  // query heads per KV head the attention op takes (ops.h)

tdm_status read_gguf(const HparamReader& r, LlamaHparams* hp) {
    const Err err = r.err();
    TDM_SDK_TRY(r.u32("llama.embedding_length", 4, kMax, &hp->n_embd));
    TDM_SDK_TRY(r.u32("llama.block_count", 1, 4096, &hp->n_layer));
    TDM_SDK_TRY(r.u32("llama.attention.head_count", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("llama.attention.head_count_kv", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("llama.attention.key_length", 4, 4096, hp->n_embd / hp->n_head, &hp->head_dim));
    uint32_t vlen = 0;
    TDM_SDK_TRY(r.u32_or("llama.attention.value_length", 4, 4096, hp->head_dim, &vlen));
    if (vlen != hp->head_dim)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: llama: value_length %u differs from key_length %u", r.path(), vlen,
                        hp->head_dim);
    TDM_SDK_TRY(r.u32_or("llama.rope.dimension_count", 2, 4096, hp->head_dim, &hp->n_rot));
    TDM_SDK_TRY(r.u32("llama.feed_forward_length", 1, kMax * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32_or("llama.context_length", 1, 1u << 24, 8192, &hp->n_ctx_train));
    TDM_SDK_TRY(r.f32_or("llama.rope.freq_base", 1.0, 1e12, 10000.0f, &hp->rope_theta));
    TDM_SDK_TRY(r.f32_or("llama.attention.layer_norm_rms_epsilon", 0.0, 1.0, 1e-5f, &hp->rms_eps));
    const char* scaling = nullptr;
    TDM_SDK_TRY(r.string_or("llama.rope.scaling.type", "none", &scaling));
    if (std::strcmp(scaling, "none") != 0)
        return err.fail(TDM_ERR_UNSUPPORTED,
                        "%s: llama: rope scaling '%s' is not supported (Llama 3.x scales through rope_freqs.weight)",
                        r.path(), scaling);
    // the vocabulary is the embedding's row count; no output.weight = tied
    tdm_tensor_info ti;
    TDM_SDK_TRY(r.tensor_info("token_embd.weight", &ti));
    if (ti.ne[1] < 1 || ti.ne[1] > (1 << 24))
        return err.fail(TDM_ERR_BAD_MODEL, "%s: token_embd.weight has %lld rows, outside [1, %d]", r.path(),
                        (long long)ti.ne[1], 1 << 24);
    hp->n_vocab = uint32_t(ti.ne[1]);
    uint32_t vocab_key = 0;
    TDM_SDK_TRY(r.u32_or("llama.vocab_size", 1, 1u << 24, hp->n_vocab, &vocab_key));
    if (vocab_key != hp->n_vocab)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: llama: vocab_size %u differs from token_embd.weight's %u rows", r.path(),
                        vocab_key, hp->n_vocab);
    hp->tied = !r.has_tensor("output.weight");
    hp->rope_freqs = r.has_tensor("rope_freqs.weight");
    hp->rope_mode = TDM_ROPE_ADJACENT;  // the converter permuted q/k rows for llama.cpp's NORM rope
    if (r.has_tensor({"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias", "blk.0.attn_output.bias"}) ||
        r.has_tensor({"blk.0.ffn_gate.bias", "blk.0.ffn_up.bias", "blk.0.ffn_down.bias"}))
        return err.fail(TDM_ERR_UNSUPPORTED,
                        "%s: llama: the file has attention or MLP biases (blk.0.attn_q.bias ...); Llama 3.x has none "
                        "and this plugin adds none",
                        r.path());
    return TDM_OK;
}

tdm_status read_hf(const HparamReader& r, LlamaHparams* hp) {
    const Err err = r.err();
    TDM_SDK_TRY(r.u32("hidden_size", 4, kMax, &hp->n_embd));
    TDM_SDK_TRY(r.u32("num_hidden_layers", 1, 4096, &hp->n_layer));
    TDM_SDK_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
    TDM_SDK_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &hp->n_head_kv));
    TDM_SDK_TRY(r.u32_or("head_dim", 4, 4096, hp->n_embd / hp->n_head, &hp->head_dim));
    hp->n_rot = hp->head_dim;
    TDM_SDK_TRY(r.u32("intermediate_size", 1, kMax * 8, &hp->n_ff));
    TDM_SDK_TRY(r.u32_or("max_position_embeddings", 1, 1u << 24, 8192, &hp->n_ctx_train));
    TDM_SDK_TRY(r.f32_or({"rope_parameters.rope_theta", "rope_theta"}, 1.0, 1e12, 10000.0f, &hp->rope_theta));
    TDM_SDK_TRY(r.f32_or("rms_norm_eps", 0.0, 1.0, 1e-5f, &hp->rms_eps));
    TDM_SDK_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
    bool tied = false;
    TDM_SDK_TRY(r.boolean_or("tie_word_embeddings", false, &tied));
    hp->tied = tied;
    bool attention_bias = false, mlp_bias = false;
    TDM_SDK_TRY(r.boolean_or("attention_bias", false, &attention_bias));
    TDM_SDK_TRY(r.boolean_or("mlp_bias", false, &mlp_bias));
    if (attention_bias || mlp_bias)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: llama: %s is true; Llama 3.x has no biases and this plugin adds none",
                        r.path(), attention_bias ? "attention_bias" : "mlp_bias");
    hp->rope_mode = TDM_ROPE_NEOX;  // HF rotate_half over q/k rows as trained

    const char* rope_type = nullptr;
    TDM_SDK_TRY(r.string_or({"rope_parameters.rope_type", "rope_scaling.rope_type", "rope_scaling.type"}, "default",
                            &rope_type));
    if (std::strcmp(rope_type, "llama3") == 0) {
        const char* p = r.has("rope_parameters.rope_type") ? "rope_parameters." : "rope_scaling.";
        const std::string factor = std::string(p) + "factor", low = std::string(p) + "low_freq_factor",
                          high = std::string(p) + "high_freq_factor",
                          original = std::string(p) + "original_max_position_embeddings";
        Llama3RopeScaling& s = hp->scaling;
        TDM_SDK_TRY(r.f32_or(factor.c_str(), 1.0, 1e6, 8.0f, &s.factor));
        TDM_SDK_TRY(r.f32_or(low.c_str(), 1e-6, 1e6, 1.0f, &s.low_freq_factor));
        TDM_SDK_TRY(r.f32_or(high.c_str(), 1e-6, 1e6, 4.0f, &s.high_freq_factor));
        TDM_SDK_TRY(r.u32_or(original.c_str(), 1, 1u << 24, 8192, &s.original_context));
        if (!(s.high_freq_factor > s.low_freq_factor))
            return err.fail(TDM_ERR_BAD_MODEL, "%s: llama: rope_scaling high_freq_factor %g must exceed low_freq_factor %g",
                            r.path(), double(s.high_freq_factor), double(s.low_freq_factor));
        hp->llama3_scaling = true;
    } else if (std::strcmp(rope_type, "default") != 0) {
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: llama: rope_type '%s' is not supported (default or llama3)",
                        r.path(), rope_type);
    }
    return TDM_OK;
}

tdm_status check(const HparamReader& r, const LlamaHparams& hp) {
    const Err err = r.err();
    if (hp.n_head % hp.n_head_kv != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: llama: %u attention heads are not a multiple of %u KV heads", r.path(),
                        hp.n_head, hp.n_head_kv);
    if (hp.n_head / hp.n_head_kv > kMaxGqa)
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: llama: %u query heads per KV head; attention takes at most %u",
                        r.path(), hp.n_head / hp.n_head_kv, kMaxGqa);
    if (hp.head_dim % 4 != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: llama: head_dim %u is not a multiple of 4", r.path(), hp.head_dim);
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        return err.fail(TDM_ERR_BAD_MODEL, "%s: llama: %u rotated dims do not fit a head of %u", r.path(), hp.n_rot,
                        hp.head_dim);
    if (hp.llama3_scaling && hp.n_rot / 2 > hp.n_embd)  // the divisors are built from embedding rows
        return err.fail(TDM_ERR_UNSUPPORTED, "%s: llama: %u rotated pairs exceed the hidden size %u", r.path(),
                        hp.n_rot / 2, hp.n_embd);
    return TDM_OK;
}

std::string describe(const LlamaHparams& hp) {
    auto u = [](uint32_t v) { return std::to_string(v); };
    std::string rope = hp.rope_mode == TDM_ROPE_NEOX ? "neox" : "adjacent";
    if (hp.rope_freqs) rope += ", rope_freqs";
    if (hp.llama3_scaling) rope += ", llama3 scaling x" + std::to_string(hp.scaling.factor);
    return "n_vocab = " + u(hp.n_vocab) + "\nn_embd = " + u(hp.n_embd) + "\nn_layer = " + u(hp.n_layer) +
           "\nn_head = " + u(hp.n_head) + "\nn_head_kv = " + u(hp.n_head_kv) + "\nhead_dim = " + u(hp.head_dim) +
           "\nn_rot = " + u(hp.n_rot) + "\nn_ff = " + u(hp.n_ff) + "\nn_ctx_train = " + u(hp.n_ctx_train) +
           "\nrope = " + rope + "\nrope_theta = " + std::to_string(hp.rope_theta) +
           "\nrms_eps = " + std::to_string(hp.rms_eps) + "\ntied_embeddings = " + (hp.tied ? "true" : "false");
}

}  // namespace

tdm_status llama_read_hparams(const tdm_host_api* host, const tdm_model_source* src, LlamaHparams* hp, Err err) {
    const HparamReader r(host, src, err);
    TDM_SDK_TRY(r.hf() ? read_hf(r, hp) : read_gguf(r, hp));
    return check(r, *hp);
}

tdm_status llama_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options*,
                        tdm_model_info* info, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "llama: create", [&]() -> tdm_status {
        auto m = std::make_unique<LlamaModel>();
        m->host = host;
        m->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
        TDM_SDK_TRY(llama_read_hparams(host, src, &m->hp, e));
        const LlamaHparams& hp = m->hp;
        if (hp.llama3_scaling) m->rope_factors = llama3_rope_factors(hp);
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
            return e.fail(TDM_ERR_INVALID_ARGUMENT, "llama: %s", host->last_error());
        *out = m.release();
        return TDM_OK;
    });
}

void llama_destroy(void* model) { delete static_cast<LlamaModel*>(model); }

}  // namespace llama
