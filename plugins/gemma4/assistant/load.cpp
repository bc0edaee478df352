// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/assistant/load.cpp: the assistant's tensors (docs/models/gemma4.md §3.2; GGUF names
// as llama.cpp's converter writes arch gemma4-assistant, HF names of
// Gemma4AssistantForCausalLM), and the target's token table it embeds with, reached through
// the host (target_weight) so that nothing is copied.
#include <tandem/ext/target_weights.h>

#include "assistant.h"

namespace gemma4 {
namespace {

using tdm::sdk::TensorName;

constexpr uint32_t F32 = TDM_WEIGHT_F32;

constexpr TensorName kTokEmbd = {"token_embd.weight", "model.embed_tokens.weight"};
constexpr TensorName kOutNorm = {"output_norm.weight", "model.norm.weight", F32};
constexpr TensorName kPreProj = {"nextn.pre_projection.weight", "pre_projection.weight"};
constexpr TensorName kPostProj = {"nextn.post_projection.weight", "post_projection.weight"};
constexpr TensorName kRopeFreqs = {"rope_freqs.weight", nullptr, F32};
constexpr TensorName kCentroids = {"masked_embd_centroids.weight", "masked_embedding.centroids.weight"};
// integer token ids (I32 in GGUF, I64 in HF), held as f32: exact below 2^24
constexpr TensorName kOrdering = {"masked_embd_ordering.weight", "masked_embedding.token_ordering", F32};

constexpr TensorName kAttnNorm = {"attn_norm.weight", "input_layernorm.weight", F32};
constexpr TensorName kWq = {"attn_q.weight", "self_attn.q_proj.weight"};
constexpr TensorName kQNorm = {"attn_q_norm.weight", "self_attn.q_norm.weight", F32};
constexpr TensorName kWo = {"attn_output.weight", "self_attn.o_proj.weight"};
constexpr TensorName kPostAttnNorm = {"post_attention_norm.weight", "post_attention_layernorm.weight", F32};
constexpr TensorName kFfnNorm = {"ffn_norm.weight", "pre_feedforward_layernorm.weight", F32};
constexpr TensorName kGate = {"ffn_gate.weight", "mlp.gate_proj.weight"};
constexpr TensorName kUp = {"ffn_up.weight", "mlp.up_proj.weight"};
constexpr TensorName kDown = {"ffn_down.weight", "mlp.down_proj.weight"};
constexpr TensorName kPostFfnNorm = {"post_ffw_norm.weight", "post_feedforward_layernorm.weight", F32};
constexpr TensorName kOutScale = {"layer_output_scale.weight", "layer_scalar", F32};

// The target's token table, through extension tdm.target_weights (by whichever name the
// target's layout gave it), as any third-party drafter would reach it.
tdm_status target_embedding(Assistant* a, tdm_loader* loader, tdm::sdk::Err err) {
    const auto* tw = static_cast<const tdm_ext_target_weights*>(
        a->host->get_extension(TDM_EXT_TARGET_WEIGHTS, TDM_EXT_TARGET_WEIGHTS_VERSION, nullptr));
    if (!tw)
        return err.fail(TDM_ERR_UNSUPPORTED, "gemma4-assistant: the host lacks extension %s: %s",
                        TDM_EXT_TARGET_WEIGHTS, a->host->last_error());
    for (const char* name : {"token_embd.weight", "model.language_model.embed_tokens.weight", "model.embed_tokens.weight"})
        if (tw->get(loader, name, &a->target_embd) == TDM_OK && a->target_embd) return TDM_OK;
    return err.fail(TDM_ERR_NOT_FOUND, "gemma4-assistant: the target loaded no token embedding: %s",
                    a->host->last_error());
}

}  // namespace

tdm_status assistant_load(void* head, tdm_loader* loader, char* err, size_t err_size) {
    Assistant* a = static_cast<Assistant*>(head);
    const tdm::sdk::Err e(err, err_size);
    return tdm::sdk::guard(e, "gemma4-assistant: load", [&]() -> tdm_status {
        const AssistantHparams& hp = a->hp;
        TDM_SDK_TRY(target_embedding(a, loader, e));
        a->target_embd_scale = a->target->hp.embd_scale;  // the target's own sqrt(H) rule
        const tdm::sdk::WeightLoader L(a->host, loader, a->hf, e);
        const int64_t Ha = hp.n_embd, Hb = hp.n_embd_target, V = hp.n_vocab;
        TDM_SDK_TRY(L.get(kTokEmbd, {Ha, V}, &a->tok_embd));
        TDM_SDK_TRY(L.get(kOutNorm, {Ha}, &a->output_norm));
        TDM_SDK_TRY(L.get(kPreProj, {2 * Hb, Ha}, &a->pre_proj));
        TDM_SDK_TRY(L.get(kPostProj, {Ha, Hb}, &a->post_proj));
        if (!a->hf) TDM_SDK_TRY(L.get(kRopeFreqs, {hp.head_dim_full / 2}, &a->rope_freqs));
        if (hp.ordered) {
            const int64_t C = hp.n_centroids;
            TDM_SDK_TRY(L.get(kCentroids, {Ha, C}, &a->centroids));
            // token ids, never quantized: cluster c's tokens are row c of [V / C, C]
            TDM_SDK_TRY(L.request(kOrdering, {V}).load(&a->ordering));
        }
        const tdm::sdk::WeightLoader blocks = L.with_prefix("blk.%d.", "model.layers.%d.");
        a->layers.resize(hp.n_layer);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            const tdm::sdk::WeightLoader Ll = blocks.at_layer(int(il));
            AssistantLayer& l = a->layers[il];
            const int64_t D = hp.sliding[il] ? hp.head_dim_swa : hp.head_dim_full, Q = int64_t(hp.n_head) * D;
            const int64_t F = hp.n_ff;
            TDM_SDK_TRY(Ll.get(kAttnNorm, {Ha}, &l.attn_norm));
            TDM_SDK_TRY(Ll.get(kWq, {Ha, Q}, &l.wq));
            TDM_SDK_TRY(Ll.get(kQNorm, {D}, &l.q_norm));
            TDM_SDK_TRY(Ll.get(kWo, {Q, Ha}, &l.wo));
            TDM_SDK_TRY(Ll.get(kPostAttnNorm, {Ha}, &l.post_attn_norm));
            TDM_SDK_TRY(Ll.get(kFfnNorm, {Ha}, &l.ffn_norm));
            TDM_SDK_TRY(Ll.get(kGate, {Ha, F}, &l.ffn_gate));
            TDM_SDK_TRY(Ll.get(kUp, {Ha, F}, &l.ffn_up));
            TDM_SDK_TRY(Ll.get(kDown, {F, Ha}, &l.ffn_down));
            TDM_SDK_TRY(Ll.get(kPostFfnNorm, {Ha}, &l.post_ffn_norm));
            TDM_SDK_TRY(Ll.get(kOutScale, {1}, &l.out_scale));
        }
        return TDM_OK;
    });
}

}  // namespace gemma4
