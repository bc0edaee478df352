// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/head/load.cpp: the head's tensors (z-lab's HF names), the target's token
// table and LM head (through tdm.target_weights, shared, not copied), and the checks against
// the target that need its weights: the width of its states and tables, its vocabulary.
// Not here: the checks that need only the head's file (hparams.cpp).
#include <tandem/ext/target_weights.h>

#include "dflash.h"

namespace dflash {
namespace {

using tdm::sdk::Err;
using tdm::sdk::TensorName;

constexpr uint32_t F32 = TDM_WEIGHT_F32;

// HF names only: no GGUF layout is read
constexpr TensorName kFc = {nullptr, "fc.weight"};
constexpr TensorName kHiddenNorm = {nullptr, "hidden_norm.weight", F32};
constexpr TensorName kOutNorm = {nullptr, "norm.weight", F32};
constexpr TensorName kAttnNorm = {nullptr, "input_layernorm.weight", F32};
constexpr TensorName kWq = {nullptr, "self_attn.q_proj.weight"};
constexpr TensorName kWk = {nullptr, "self_attn.k_proj.weight"};
constexpr TensorName kWv = {nullptr, "self_attn.v_proj.weight"};
constexpr TensorName kWo = {nullptr, "self_attn.o_proj.weight"};
constexpr TensorName kQNorm = {nullptr, "self_attn.q_norm.weight", F32};
constexpr TensorName kKNorm = {nullptr, "self_attn.k_norm.weight", F32};
constexpr TensorName kFfnNorm = {nullptr, "post_attention_layernorm.weight", F32};
constexpr TensorName kGate = {nullptr, "mlp.gate_proj.weight"};
constexpr TensorName kUp = {nullptr, "mlp.up_proj.weight"};
constexpr TensorName kDown = {nullptr, "mlp.down_proj.weight"};

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
            tdm::sdk::WeightLoader(h->host, loader, true, e).with_prefix("", h->prefix.c_str());
        const int64_t H = hp.n_embd, F = hp.n_ff, D = hp.head_dim;
        const int64_t q_dim = int64_t(hp.n_head) * D, kv_dim = int64_t(hp.n_head_kv) * D;
        TDM_SDK_TRY(L.get(kFc, {int64_t(h->taps.size()) * H, H}, &h->fc));
        TDM_SDK_TRY(L.get(kHiddenNorm, {H}, &h->hidden_norm));
        TDM_SDK_TRY(L.get(kOutNorm, {H}, &h->output_norm));
        h->layers.assign(hp.n_layer, DflashLayer{});
        const tdm::sdk::WeightLoader layers = tdm::sdk::WeightLoader(h->host, loader, true, e)
                                                  .with_prefix("", h->prefix.empty() ? "layers.%d." : "model.layers.%d.");
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
