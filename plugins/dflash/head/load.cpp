// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/head/load.cpp: the head's tensors (z-lab's HF names or llama.cpp's GGUF
// names), the target's token table and LM head (through tdm.target_weights, shared, not
// copied) unless a GGUF carries its own, and the checks against the target that need its
// weights: the width of its states and tables, its vocabulary.
// Not here: the checks that need only the head's file (hparams.cpp).
#include <tandem/ext/target_weights.h>

#include "dflash.h"

namespace dflash {
namespace {

using tdm::sdk::Err;
using tdm::sdk::TensorName;

constexpr uint32_t F32 = TDM_WEIGHT_F32;

// top level ({GGUF, HF}; HF names after the file's prefix)
constexpr TensorName kFc = {"fc.weight", "fc.weight"};
constexpr TensorName kHiddenNorm = {"enc.output_norm.weight", "hidden_norm.weight", F32};
constexpr TensorName kOutNorm = {"output_norm.weight", "norm.weight", F32};
// a GGUF's own tables (llama.cpp loads them when present; z-lab's heads have none)
constexpr TensorName kTokEmbd = {"token_embd.weight", nullptr};
constexpr TensorName kOutput = {"output.weight", nullptr};
// each layer (after blk.N. / layers.N.)
constexpr TensorName kAttnNorm = {"attn_norm.weight", "input_layernorm.weight", F32};
constexpr TensorName kWq = {"attn_q.weight", "self_attn.q_proj.weight"};
constexpr TensorName kWk = {"attn_k.weight", "self_attn.k_proj.weight"};
constexpr TensorName kWv = {"attn_v.weight", "self_attn.v_proj.weight"};
constexpr TensorName kWo = {"attn_output.weight", "self_attn.o_proj.weight"};
constexpr TensorName kQNorm = {"attn_q_norm.weight", "self_attn.q_norm.weight", F32};
constexpr TensorName kKNorm = {"attn_k_norm.weight", "self_attn.k_norm.weight", F32};
constexpr TensorName kFfnNorm = {"ffn_norm.weight", "post_attention_layernorm.weight", F32};
constexpr TensorName kGate = {"ffn_gate.weight", "mlp.gate_proj.weight"};
constexpr TensorName kUp = {"ffn_up.weight", "mlp.up_proj.weight"};
constexpr TensorName kDown = {"ffn_down.weight", "mlp.down_proj.weight"};

// The target's embedding and LM head, by whichever name its layout gave them; checked
// against the head's width and the file's vocabulary.
tdm_status target_tables(DflashHead& h, tdm_loader* loader, Err err) {
    const auto* tw = static_cast<const tdm_ext_target_weights*>(
        h.host->get_extension(TDM_EXT_TARGET_WEIGHTS, TDM_EXT_TARGET_WEIGHTS_VERSION, nullptr));
    if (!tw)
        return err.fail(TDM_ERR_UNSUPPORTED, "dflash: the host lacks extension %s: %s", TDM_EXT_TARGET_WEIGHTS,
                        h.host->last_error());
    for (const char* name : {"token_embd.weight", "model.embed_tokens.weight"})
        if (tw->get(loader, name, &h.tok_embd) == TDM_OK && h.tok_embd) break;
    if (!h.tok_embd)
        return err.fail(TDM_ERR_NOT_FOUND, "dflash: the target loaded no token embedding: %s", h.host->last_error());
    for (const char* name : {"output.weight", "lm_head.weight"})
        if (tw->get(loader, name, &h.output) == TDM_OK && h.output) break;
    if (!h.output) h.output = h.tok_embd;  // tied
    tdm_tensor_shape s{};
    s.struct_size = sizeof s;
    if (h.host->weight_shape(h.tok_embd, &s) != TDM_OK)
        return err.fail(TDM_ERR_INTERNAL, "dflash: the target's embedding has no shape: %s", h.host->last_error());
    const DflashHparams& hp = h.hp;
    if (s.ne[0] != int64_t(hp.n_embd))
        return err.fail(TDM_ERR_BAD_MODEL,
                        "dflash: the head is %u wide and reads the target's states, embedding and LM head; the "
                        "target's are %lld wide",
                        hp.n_embd, (long long)s.ne[0]);
    if (hp.n_vocab && s.ne[1] != int64_t(hp.n_vocab))
        return err.fail(TDM_ERR_BAD_MODEL, "dflash: the head is for a vocabulary of %u tokens, the target's has %lld",
                        hp.n_vocab, (long long)s.ne[1]);
    h.hp.n_vocab = uint32_t(s.ne[1]);
    return TDM_OK;
}

}  // namespace

tdm_status dflash_load(void* head, tdm_loader* loader, char* err, size_t err_size) {
    DflashHead* h = static_cast<DflashHead*>(head);
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "dflash: load", [&]() -> tdm_status {
        const DflashHparams& hp = h->hp;
        TDM_SDK_TRY(target_tables(*h, loader, e));
        const tdm::sdk::WeightLoader L =
            tdm::sdk::WeightLoader(h->host, loader, h->hf, e).with_prefix("", h->prefix.c_str());
        const int64_t H = hp.n_embd, F = hp.n_ff, D = hp.head_dim, V = hp.n_vocab;
        if (!h->hf) {  // own tables replace the target's, at the target's shape
            const tdm_weight* own = nullptr;
            TDM_SDK_TRY(L.get_optional(kTokEmbd, {H, V}, &own));
            if (own) h->tok_embd = own;
            own = nullptr;
            TDM_SDK_TRY(L.get_optional(kOutput, {H, V}, &own));
            if (own) h->output = own;
        }
        const int64_t q_dim = int64_t(hp.n_head) * D, kv_dim = int64_t(hp.n_head_kv) * D;
        TDM_SDK_TRY(L.get(kFc, {int64_t(h->taps.size()) * H, H}, &h->fc));
        TDM_SDK_TRY(L.get(kHiddenNorm, {H}, &h->hidden_norm));
        TDM_SDK_TRY(L.get(kOutNorm, {H}, &h->output_norm));
        h->layers.assign(hp.n_layer, DflashLayer{});
        const tdm::sdk::WeightLoader layers =
            tdm::sdk::WeightLoader(h->host, loader, h->hf, e)
                .with_prefix("blk.%d.", h->prefix.empty() ? "layers.%d." : "model.layers.%d.");
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            const tdm::sdk::WeightLoader Ll = layers.at_layer(int(il));
            DflashLayer& l = h->layers[il];
            TDM_SDK_TRY(Ll.get(kAttnNorm, {H}, &l.attn_norm));
            TDM_SDK_TRY(Ll.get(kWq, {H, q_dim}, &l.wq));
            TDM_SDK_TRY(Ll.get(kWk, {H, kv_dim}, &l.wk));
            TDM_SDK_TRY(Ll.get(kWv, {H, kv_dim}, &l.wv));
            TDM_SDK_TRY(Ll.get(kWo, {q_dim, H}, &l.wo));
            TDM_SDK_TRY(Ll.get(kQNorm, {D}, &l.q_norm));
            TDM_SDK_TRY(Ll.get(kKNorm, {D}, &l.k_norm));
            TDM_SDK_TRY(Ll.get(kFfnNorm, {H}, &l.ffn_norm));
            TDM_SDK_TRY(Ll.get(kGate, {H, F}, &l.ffn_gate));
            TDM_SDK_TRY(Ll.get(kUp, {H, F}, &l.ffn_up));
            TDM_SDK_TRY(Ll.get(kDown, {F, H}, &l.ffn_down));
        }
        return TDM_OK;
    });
}

}  // namespace dflash
