// plugins/qwen-nextn/hparams.cpp: Qwen3 hyper-parameters, from GGUF metadata
// (the keys llama.cpp's converter writes) or an HF config.json; every value is
// checked before it sizes anything (plugin contract rule 7).
#include "arch.h"
#include "meta.h"

namespace qwen {

tdm_status qwen3_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Qwen3Hparams* hp, char* err,
                              size_t err_size) {
    const MetaReader r{host, src, err, err_size, ""};
    const bool hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
    const uint32_t kMax = 1u << 20;
    if (!hf) {
        QWEN_TRY(r.u32("qwen3.embedding_length", 4, kMax, &hp->n_embd));
        QWEN_TRY(r.u32("qwen3.block_count", 1, 4096, &hp->n_layer));
        QWEN_TRY(r.u32("qwen3.attention.head_count", 1, 4096, &hp->n_head));
        QWEN_TRY(r.u32_or("qwen3.attention.head_count_kv", 1, 4096, hp->n_head, &hp->n_head_kv));
        QWEN_TRY(r.u32_or("qwen3.attention.key_length", 4, 4096, hp->n_embd / hp->n_head, &hp->head_dim));
        uint32_t vlen = 0;
        QWEN_TRY(r.u32_or("qwen3.attention.value_length", 4, 4096, hp->head_dim, &vlen));
        if (vlen != hp->head_dim)
            return fail(err, err_size, TDM_ERR_BAD_MODEL, "qwen3: value_length %u differs from key_length %u", vlen,
                        hp->head_dim);
        QWEN_TRY(r.u32("qwen3.feed_forward_length", 1, kMax * 8, &hp->n_ff));
        QWEN_TRY(r.u32_or("qwen3.context_length", 1, 1u << 24, 40960, &hp->n_ctx_train));
        QWEN_TRY(r.f32_or("qwen3.rope.freq_base", 10000.0f, &hp->rope_theta));
        QWEN_TRY(r.f32_or("qwen3.attention.layer_norm_rms_epsilon", 1e-6f, &hp->rms_eps));
        tdm_tensor_info ti{sizeof(tdm_tensor_info)};
        if (host->tensor_info(src, "token_embd.weight", &ti) != TDM_OK)
            return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
        hp->n_vocab = uint32_t(ti.ne[1]);
        tdm_tensor_info to{sizeof(tdm_tensor_info)};
        hp->tied = host->tensor_info(src, "output.weight", &to) != TDM_OK;
    } else {
        QWEN_TRY(r.u32("hidden_size", 4, kMax, &hp->n_embd));
        QWEN_TRY(r.u32("num_hidden_layers", 1, 4096, &hp->n_layer));
        QWEN_TRY(r.u32("num_attention_heads", 1, 4096, &hp->n_head));
        QWEN_TRY(r.u32_or("num_key_value_heads", 1, 4096, hp->n_head, &hp->n_head_kv));
        QWEN_TRY(r.u32_or("head_dim", 4, 4096, hp->n_embd / hp->n_head, &hp->head_dim));
        QWEN_TRY(r.u32("intermediate_size", 1, kMax * 8, &hp->n_ff));
        QWEN_TRY(r.u32_or("max_position_embeddings", 1, 1u << 24, 40960, &hp->n_ctx_train));
        QWEN_TRY(r.u32("vocab_size", 1, 1u << 24, &hp->n_vocab));
        QWEN_TRY(r.f32_or("rope_theta", 10000.0f, &hp->rope_theta));
        QWEN_TRY(r.f32_or("rms_norm_eps", 1e-6f, &hp->rms_eps));
        int tied = 0;
        hp->tied = host->meta_has(src, "tie_word_embeddings") && host->meta_get_bool(src, "tie_word_embeddings", &tied) == TDM_OK && tied;
        tdm_tensor_info to{sizeof(tdm_tensor_info)};
        if (host->tensor_info(src, "lm_head.weight", &to) != TDM_OK) hp->tied = true;
    }
    if (hp->n_head % hp->n_head_kv != 0)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "qwen3: %u attention heads are not a multiple of %u KV heads",
                    hp->n_head, hp->n_head_kv);
    if (hp->head_dim % 4 != 0)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "qwen3: head_dim %u is not a multiple of 4", hp->head_dim);
    if (!(hp->rope_theta > 0.0f) || !(hp->rms_eps >= 0.0f))
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "qwen3: invalid rope theta %g or rms eps %g", hp->rope_theta,
                    hp->rms_eps);
    return TDM_OK;
}

}  // namespace qwen
