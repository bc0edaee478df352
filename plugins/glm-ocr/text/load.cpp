// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/text/load.cpp: GLM tensor names -> weights, for the trunk and the MTP
// layer. GGUF names are llama.cpp's (arch glm4, the NextN layer as blk.N.nextn.*); HF names
// are GLM-OCR's (model.language_model.*, the MTP layer as model.language_model.layers.N.*).
// Beware the norm names (docs/models/glm-ocr.md §6, pitfall 1): HF's post_attention_layernorm is the
// pre-MLP norm (GGUF ffn_norm), post_self_attn_layernorm the norm on the attention output
// (GGUF post_attention_norm). All four are [n_embd], so a wrong mapping would load silently.
#include "arch.h"

namespace glm {
namespace {

using tdm::sdk::Err;
using tdm::sdk::TensorName;
using tdm::sdk::WeightLoader;

constexpr uint32_t kF32 = TDM_WEIGHT_F32;

constexpr TensorName kTokEmbd = {"token_embd.weight", "model.language_model.embed_tokens.weight"};
constexpr TensorName kOutNorm = {"output_norm.weight", "model.language_model.norm.weight", kF32};
constexpr TensorName kOutput = {"output.weight", "lm_head.weight"};

// One block's tensors, after the layer prefix ("blk.3." or "model.language_model.layers.3.").
constexpr TensorName kAttnNorm = {"attn_norm.weight", "input_layernorm.weight", kF32};
constexpr TensorName kWq = {"attn_q.weight", "self_attn.q_proj.weight"};
constexpr TensorName kWk = {"attn_k.weight", "self_attn.k_proj.weight"};
constexpr TensorName kWv = {"attn_v.weight", "self_attn.v_proj.weight"};
constexpr TensorName kWo = {"attn_output.weight", "self_attn.o_proj.weight"};
constexpr TensorName kBq = {"attn_q.bias", "self_attn.q_proj.bias", kF32};  // GLM-4-0414 / GLM-4 chat only
constexpr TensorName kBk = {"attn_k.bias", "self_attn.k_proj.bias", kF32};
constexpr TensorName kBv = {"attn_v.bias", "self_attn.v_proj.bias", kF32};
constexpr TensorName kPostAttnNorm = {"post_attention_norm.weight", "post_self_attn_layernorm.weight", kF32};
constexpr TensorName kFfnNorm = {"ffn_norm.weight", "post_attention_layernorm.weight", kF32};
constexpr TensorName kFfnUp = {"ffn_up.weight", "mlp.gate_up_proj.weight"};  // gate rows first
constexpr TensorName kFfnDown = {"ffn_down.weight", "mlp.down_proj.weight"};
constexpr TensorName kPostFfwNorm = {"post_ffw_norm.weight", "post_mlp_layernorm.weight", kF32};

// The MTP layer's own tensors (after the same layer prefix).
constexpr TensorName kEhProj = {"nextn.eh_proj.weight", "eh_proj.weight"};
constexpr TensorName kENorm = {"nextn.enorm.weight", "enorm.weight", kF32};
constexpr TensorName kHNorm = {"nextn.hnorm.weight", "hnorm.weight", kF32};
constexpr TensorName kHeadNorm = {"nextn.shared_head_norm.weight", "shared_head.norm.weight", kF32};
constexpr TensorName kMtpEmbd = {"nextn.embed_tokens.weight", "embed_tokens.weight"};
constexpr TensorName kMtpOutput = {"nextn.shared_head_head.weight", "shared_head.head.weight"};

WeightLoader layers_of(const WeightLoader& L) { return L.with_prefix("blk.%d.", "model.language_model.layers.%d."); }

tdm_status load_block(const WeightLoader& Ll, const GlmHparams& hp, GlmLayer* l) {
    const int64_t E = hp.n_embd, F = hp.n_ff, D = hp.head_dim;
    const int64_t q_dim = int64_t(hp.n_head) * D, kv_dim = int64_t(hp.n_head_kv) * D;
    TDM_SDK_TRY(Ll.get(kAttnNorm, {E}, &l->attn_norm));
    TDM_SDK_TRY(Ll.get(kWq, {E, q_dim}, &l->wq));
    TDM_SDK_TRY(Ll.get(kWk, {E, kv_dim}, &l->wk));
    TDM_SDK_TRY(Ll.get(kWv, {E, kv_dim}, &l->wv));
    TDM_SDK_TRY(Ll.get_optional(kBq, {q_dim}, &l->bq));
    TDM_SDK_TRY(Ll.get_optional(kBk, {kv_dim}, &l->bk));
    TDM_SDK_TRY(Ll.get_optional(kBv, {kv_dim}, &l->bv));
    TDM_SDK_TRY(Ll.get(kWo, {q_dim, E}, &l->wo));
    TDM_SDK_TRY(Ll.get(kPostAttnNorm, {E}, &l->post_attn_norm));
    TDM_SDK_TRY(Ll.get(kFfnNorm, {E}, &l->ffn_norm));
    TDM_SDK_TRY(Ll.get(kFfnUp, {E, 2 * F}, &l->ffn_up));
    TDM_SDK_TRY(Ll.get(kFfnDown, {F, E}, &l->ffn_down));
    TDM_SDK_TRY(Ll.get(kPostFfwNorm, {E}, &l->post_ffw_norm));
    return TDM_OK;
}

}  // namespace

tdm_status glm_load_trunk(GlmModel* m, tdm_loader* loader, Err err) {
    const GlmHparams& hp = m->hp;
    const WeightLoader L(m->host, loader, m->hf, err);
    const int64_t E = hp.n_embd, V = hp.n_vocab;
    TDM_SDK_TRY(L.get(kTokEmbd, {E, V}, &m->tok_embd));
    TDM_SDK_TRY(L.get(kOutNorm, {E}, &m->output_norm));
    if (hp.tied)
        m->output = m->tok_embd;
    else
        TDM_SDK_TRY(L.get(kOutput, {E, V}, &m->output));
    m->layers.resize(hp.n_layer);
    const WeightLoader blocks = layers_of(L);
    for (uint32_t il = 0; il < hp.n_layer; ++il) TDM_SDK_TRY(load_block(blocks.at_layer(int(il)), hp, &m->layers[il]));
    return TDM_OK;
}

// The layer's own embedding and LM head when the file has them (the checkpoint does; spec
// §3.1), else the trunk's, as llama.cpp's NextN loaders fall back.
tdm_status glm_load_mtp(GlmMtp* h, tdm_loader* loader, Err err) {
    const GlmHparams& hp = h->hp;
    const WeightLoader L(h->host, loader, h->hf, err);
    const int64_t E = hp.n_embd, V = hp.n_vocab;
    const WeightLoader own = layers_of(L).at_layer(int(h->block));
    TDM_SDK_TRY(own.get(kEhProj, {2 * E, E}, &h->eh_proj));
    TDM_SDK_TRY(own.get(kENorm, {E}, &h->enorm));
    TDM_SDK_TRY(own.get(kHNorm, {E}, &h->hnorm));
    TDM_SDK_TRY(own.get(kHeadNorm, {E}, &h->head_norm));
    TDM_SDK_TRY(load_block(own, hp, &h->layer));
    TDM_SDK_TRY(own.get_optional(kMtpEmbd, {E, V}, &h->tok_embd));
    TDM_SDK_TRY(own.get_optional(kMtpOutput, {E, V}, &h->output));
    if (!h->tok_embd) {
        if (h->target)
            h->tok_embd = h->target->tok_embd;
        else
            TDM_SDK_TRY(L.get(kTokEmbd, {E, V}, &h->tok_embd));
    }
    if (!h->output) {
        if (h->target)
            h->output = h->target->output;
        else if (hp.tied)
            h->output = h->tok_embd;
        else
            TDM_SDK_TRY(L.get(kOutput, {E, V}, &h->output));
    }
    return TDM_OK;
}

tdm_status glm_load(void* model, tdm_loader* loader, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "glm4: load", [&] { return glm_load_trunk(static_cast<GlmModel*>(model), loader, e); });
}

tdm_status glm_mtp_load(void* head, tdm_loader* loader, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "glm-mtp: load", [&] { return glm_load_mtp(static_cast<GlmMtp*>(head), loader, e); });
}

}  // namespace glm
