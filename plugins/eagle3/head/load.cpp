// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/head/load.cpp: the head's tensors (GGUF names of llama.cpp's "eagle3", HF names
// of LlamaForCausalLMEagle3), the target's token table and LM head where the file has none
// (through tdm.target_weights, shared, not copied), and the checks against the target that
// need its weights: tap width, vocabulary, the widths the borrowed tables force.
// Not here: the checks that need only the head's file (hparams.cpp).
#include <tandem/ext/target_weights.h>

#include "eagle3.h"

namespace eagle3 {
namespace {

using tdm::sdk::Err;
using tdm::sdk::TensorName;

constexpr uint32_t F32 = TDM_WEIGHT_F32;

// top level (HF names after the file's top prefix)
constexpr TensorName kFc = {"fc.weight", "fc.weight"};
constexpr TensorName kTokEmbd = {"token_embd.weight", "embed_tokens.weight"};
constexpr TensorName kOutNorm = {"output_norm.weight", "norm.weight", F32};
constexpr TensorName kOutput = {"output.weight", "lm_head.weight"};
// token ids: I64 in both layouts, held as f32 (exact below 2^24)
constexpr TensorName kD2t = {"d2t", "d2t", F32};
constexpr TensorName kRopeFreqs = {"rope_freqs.weight", nullptr, F32};
// the decoder layer (after its prefix); hidden_norm's GGUF name comes from Eagle3Names
constexpr TensorName kAttnNorm = {"attn_norm.weight", "input_layernorm.weight", F32};
constexpr TensorName kWq = {"attn_q.weight", "self_attn.q_proj.weight"};
constexpr TensorName kWk = {"attn_k.weight", "self_attn.k_proj.weight"};
constexpr TensorName kWv = {"attn_v.weight", "self_attn.v_proj.weight"};
constexpr TensorName kWo = {"attn_output.weight", "self_attn.o_proj.weight"};
constexpr TensorName kFfnNorm = {"ffn_norm.weight", "post_attention_layernorm.weight", F32};
constexpr TensorName kGate = {"ffn_gate.weight", "mlp.gate_proj.weight"};
constexpr TensorName kUp = {"ffn_up.weight", "mlp.up_proj.weight"};
constexpr TensorName kDown = {"ffn_down.weight", "mlp.down_proj.weight"};

// The target's tables, by whichever name its layout gave them.
struct TargetTables {
    const tdm_weight* embd = nullptr;    // [Ht, V]
    const tdm_weight* output = nullptr;  // [Ht, V]; the embedding when tied
    int64_t n_embd = 0, n_vocab = 0;
};

tdm_status target_tables(const Eagle3Head& h, tdm_loader* loader, TargetTables* t, Err err) {
    const auto* tw = static_cast<const tdm_ext_target_weights*>(
        h.host->get_extension(TDM_EXT_TARGET_WEIGHTS, TDM_EXT_TARGET_WEIGHTS_VERSION, nullptr));
    if (!tw)
        return err.fail(TDM_ERR_UNSUPPORTED, "eagle3: the host lacks extension %s: %s", TDM_EXT_TARGET_WEIGHTS,
                        h.host->last_error());
    for (const char* name : {"token_embd.weight", "model.embed_tokens.weight", "model.language_model.embed_tokens.weight"})
        if (tw->get(loader, name, &t->embd) == TDM_OK && t->embd) break;
    if (!t->embd)
        return err.fail(TDM_ERR_NOT_FOUND, "eagle3: the target loaded no token embedding: %s", h.host->last_error());
    for (const char* name : {"output.weight", "lm_head.weight", "model.language_model.lm_head.weight"})
        if (tw->get(loader, name, &t->output) == TDM_OK && t->output) break;
    if (!t->output) t->output = t->embd;  // tied
    tdm_tensor_shape s{};
    s.struct_size = sizeof s;
    if (h.host->weight_shape(t->embd, &s) != TDM_OK)
        return err.fail(TDM_ERR_INTERNAL, "eagle3: the target's embedding has no shape: %s", h.host->last_error());
    t->n_embd = s.ne[0];
    t->n_vocab = s.ne[1];
    return TDM_OK;
}

// d2t as the table of target ids by draft id that the step reads with one get_rows: the host
// turns either stored form into it while loading (tdm.weight_transforms: an HF head's offsets
// plus their draft ids, one row per id). A host without the extension gets the vector as
// stored, and the step builds the table from it in every graph (step.cpp, draft_token).
tdm_status load_d2t(Eagle3Head* h, const tdm::sdk::WeightLoader& L, int64_t Vd) {
    const auto* wt = static_cast<const tdm_ext_weight_transforms*>(
        h->host->get_extension(TDM_EXT_WEIGHT_TRANSFORMS, 1, nullptr));
    h->d2t_rows = wt != nullptr;
    if (!wt) return L.get(kD2t, {Vd}, &h->d2t);
    uint32_t transforms = TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS;
    if (h->hp.d2t == D2tForm::offset) transforms |= TDM_WEIGHT_TRANSFORM_ADD_INDEX;
    return L.request(kD2t, {Vd}).load_transformed(wt, transforms, &h->d2t);
}

// The head against its target: every message names both values.
tdm_status check_target(const Eagle3Head& h, const TargetTables& t, bool own_embd, bool own_output, Err err) {
    const Eagle3Hparams& hp = h.hp;
    if (int64_t(hp.n_embd_target) != t.n_embd)
        return err.fail(TDM_ERR_BAD_MODEL, "eagle3: the head reads target states of width %u, the target's are %lld",
                        hp.n_embd_target, (long long)t.n_embd);
    if (hp.n_vocab && int64_t(hp.n_vocab) != t.n_vocab)
        return err.fail(TDM_ERR_BAD_MODEL, "eagle3: the head is for a vocabulary of %u tokens, the target's has %lld",
                        hp.n_vocab, (long long)t.n_vocab);
    if ((!own_embd || !own_output) && int64_t(hp.n_embd) != t.n_embd)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "eagle3: the head (width %u) has no %s of its own, and the target's is %lld wide",
                        hp.n_embd, own_embd ? "LM head" : "token embedding", (long long)t.n_embd);
    if (!own_output && hp.d2t != D2tForm::none)
        return err.fail(TDM_ERR_BAD_MODEL,
                        "eagle3: the head maps a reduced vocabulary (d2t) but has no LM head of its own over it");
    return TDM_OK;
}

}  // namespace

tdm_status eagle3_load(void* head, tdm_loader* loader, char* err, size_t err_size) {
    Eagle3Head* h = static_cast<Eagle3Head*>(head);
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "eagle3: load", [&]() -> tdm_status {
        Eagle3Hparams& hp = h->hp;
        TargetTables t;
        TDM_SDK_TRY(target_tables(*h, loader, &t, e));
        const tdm::sdk::WeightLoader L =
            tdm::sdk::WeightLoader(h->host, loader, h->hf, e).with_prefix("", h->names.top_prefix.c_str());
        const int64_t H = hp.n_embd, Ht = hp.n_embd_target, F = hp.n_ff, D = hp.head_dim;
        const int64_t q_dim = int64_t(hp.n_head) * D, kv_dim = int64_t(hp.n_head_kv) * D;
        TDM_SDK_TRY(L.get_optional(kTokEmbd, {H, t.n_vocab}, &h->tok_embd));
        const bool own_embd = h->tok_embd != nullptr;
        const int64_t Vd = hp.n_vocab_draft ? hp.n_vocab_draft : t.n_vocab;
        TDM_SDK_TRY(L.get_optional(kOutput, {H, Vd}, &h->output));
        const bool own_output = h->output != nullptr;
        TDM_SDK_TRY(check_target(*h, t, own_embd, own_output, e));
        if (!own_embd) h->tok_embd = t.embd;
        if (!own_output) h->output = t.output;
        hp.n_vocab_draft = uint32_t(own_output ? Vd : t.n_vocab);
        TDM_SDK_TRY(L.get(kFc, {int64_t(h->taps.size()) * Ht, H}, &h->fc));
        TDM_SDK_TRY(L.get(kOutNorm, {H}, &h->output_norm));
        if (hp.d2t != D2tForm::none) TDM_SDK_TRY(load_d2t(h, L, Vd));
        if (!h->hf) TDM_SDK_TRY(L.get_optional(kRopeFreqs, {D / 2}, &h->rope_freqs));
        const tdm::sdk::WeightLoader Ll = tdm::sdk::WeightLoader(h->host, loader, h->hf, e)
                                              .with_prefix(h->names.layer_prefix.c_str(), h->names.layer_prefix.c_str());
        const TensorName hidden_norm = {h->names.hidden_norm.c_str(), h->names.hidden_norm.c_str(), F32};
        TDM_SDK_TRY(Ll.get(kAttnNorm, {H}, &h->attn_norm));
        TDM_SDK_TRY(Ll.get(hidden_norm, {H}, &h->hidden_norm));
        TDM_SDK_TRY(Ll.get(kWq, {2 * H, q_dim}, &h->wq));
        TDM_SDK_TRY(Ll.get(kWk, {2 * H, kv_dim}, &h->wk));
        TDM_SDK_TRY(Ll.get(kWv, {2 * H, kv_dim}, &h->wv));
        TDM_SDK_TRY(Ll.get(kWo, {q_dim, H}, &h->wo));
        TDM_SDK_TRY(Ll.get(kFfnNorm, {H}, &h->ffn_norm));
        TDM_SDK_TRY(Ll.get(kGate, {H, F}, &h->ffn_gate));
        TDM_SDK_TRY(Ll.get(kUp, {H, F}, &h->ffn_up));
        TDM_SDK_TRY(Ll.get(kDown, {F, H}, &h->ffn_down));
        return TDM_OK;
    });
}

}  // namespace eagle3
