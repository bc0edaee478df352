// SPDX-License-Identifier: Apache-2.0
// plugins/llama/text/load.cpp: Llama tensor names -> weights. GGUF names are llama.cpp's
// (blk.N.attn_q.weight ..., rope_freqs.weight); HF names are transformers' (one table maps
// them). The host checks each shape against what is requested here; the q/k rows are
// loaded as stored (the rope pairing follows the layout, arch.h).
// Not here: which tensors a file has (hparams.cpp decides tied, rope_freqs, refuses biases).
#include "arch.h"

namespace llama {
namespace {

using tdm::sdk::TensorName;

// parameter -> file names; %d = the layer. Norms are converted to f32.
constexpr TensorName kTokEmbd = {"token_embd.weight", "model.embed_tokens.weight"};
constexpr TensorName kOutNorm = {"output_norm.weight", "model.norm.weight", TDM_WEIGHT_F32};
constexpr TensorName kOutput = {"output.weight", "lm_head.weight"};
constexpr TensorName kRopeFreqs = {"rope_freqs.weight", nullptr, TDM_WEIGHT_F32};
constexpr TensorName kAttnNorm = {"blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", TDM_WEIGHT_F32};
constexpr TensorName kWq = {"blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight"};
constexpr TensorName kWk = {"blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight"};
constexpr TensorName kWv = {"blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight"};
constexpr TensorName kWo = {"blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight"};
constexpr TensorName kFfnNorm = {"blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight",
                                 TDM_WEIGHT_F32};
constexpr TensorName kGate = {"blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight"};
constexpr TensorName kUp = {"blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight"};
constexpr TensorName kDown = {"blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight"};

}  // namespace

tdm_status llama_load(void* model, tdm_loader* loader, char* err, size_t err_size) {
    LlamaModel* m = static_cast<LlamaModel*>(model);
    const tdm::sdk::Err e(err, err_size);
    return tdm::sdk::guard(e, "llama: load", [&]() -> tdm_status {
        const LlamaHparams& hp = m->hp;
        const tdm::sdk::WeightLoader L(m->host, loader, m->hf, e);
        const int64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff, D = hp.head_dim;
        const int64_t q_dim = int64_t(hp.n_head) * D, kv_dim = int64_t(hp.n_head_kv) * D;
        TDM_SDK_TRY(L.get(kTokEmbd, {E, V}, &m->tok_embd));
        TDM_SDK_TRY(L.get(kOutNorm, {E}, &m->output_norm));
        if (hp.tied)
            m->output = m->tok_embd;
        else
            TDM_SDK_TRY(L.get(kOutput, {E, V}, &m->output));
        if (hp.rope_freqs) TDM_SDK_TRY(L.get(kRopeFreqs, {int64_t(hp.n_rot / 2)}, &m->rope_freqs));
        m->layers.resize(hp.n_layer);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            const tdm::sdk::WeightLoader Ll = L.at_layer(int(il));
            LlamaLayer& l = m->layers[il];
            TDM_SDK_TRY(Ll.get(kAttnNorm, {E}, &l.attn_norm));
            TDM_SDK_TRY(Ll.get(kWq, {E, q_dim}, &l.wq));
            TDM_SDK_TRY(Ll.get(kWk, {E, kv_dim}, &l.wk));
            TDM_SDK_TRY(Ll.get(kWv, {E, kv_dim}, &l.wv));
            TDM_SDK_TRY(Ll.get(kWo, {q_dim, E}, &l.wo));
            TDM_SDK_TRY(Ll.get(kFfnNorm, {E}, &l.ffn_norm));
            TDM_SDK_TRY(Ll.get(kGate, {E, F}, &l.ffn_gate));
            TDM_SDK_TRY(Ll.get(kUp, {E, F}, &l.ffn_up));
            TDM_SDK_TRY(Ll.get(kDown, {F, E}, &l.ffn_down));
        }
        return TDM_OK;
    });
}

}  // namespace llama
