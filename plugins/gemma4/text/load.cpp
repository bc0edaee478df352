// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/text/load.cpp: Gemma 4 tensor names -> weights (docs/models/gemma4.md §2.1). GGUF
// names are llama.cpp's (blk.N.attn_q.weight ...); HF names are transformers', under
// "model.language_model." in the released multimodal checkpoints ("model." in a text-only
// one). Norm weights are plain (x_hat * w: Gemma 4 dropped Gemma 1-3's 1 + w), converted to
// f32. The host checks every shape against what is requested here.
#include <cstring>

#include "arch.h"

namespace gemma4 {
namespace {

using tdm::sdk::TensorName;

constexpr uint32_t F32 = TDM_WEIGHT_F32;

constexpr TensorName kTokEmbd = {"token_embd.weight", "embed_tokens.weight"};
constexpr TensorName kOutNorm = {"output_norm.weight", "norm.weight", F32};
constexpr TensorName kRopeFreqs = {"rope_freqs.weight", nullptr, F32};
constexpr TensorName kPleTokEmbd = {"per_layer_token_embd.weight", "embed_tokens_per_layer.weight"};
constexpr TensorName kPleModelProj = {"per_layer_model_proj.weight", "per_layer_model_projection.weight"};
constexpr TensorName kPleProjNorm = {"per_layer_proj_norm.weight", "per_layer_projection_norm.weight", F32};

// per layer; the loader's prefix is "blk.%d." / "<root>layers.%d."
constexpr TensorName kAttnNorm = {"attn_norm.weight", "input_layernorm.weight", F32};
constexpr TensorName kWq = {"attn_q.weight", "self_attn.q_proj.weight"};
constexpr TensorName kWk = {"attn_k.weight", "self_attn.k_proj.weight"};
constexpr TensorName kWv = {"attn_v.weight", "self_attn.v_proj.weight"};
constexpr TensorName kWo = {"attn_output.weight", "self_attn.o_proj.weight"};
constexpr TensorName kQNorm = {"attn_q_norm.weight", "self_attn.q_norm.weight", F32};
constexpr TensorName kKNorm = {"attn_k_norm.weight", "self_attn.k_norm.weight", F32};
constexpr TensorName kPostAttnNorm = {"post_attention_norm.weight", "post_attention_layernorm.weight", F32};
constexpr TensorName kFfnNorm = {"ffn_norm.weight", "pre_feedforward_layernorm.weight", F32};
constexpr TensorName kGate = {"ffn_gate.weight", "mlp.gate_proj.weight"};
constexpr TensorName kUp = {"ffn_up.weight", "mlp.up_proj.weight"};
constexpr TensorName kDown = {"ffn_down.weight", "mlp.down_proj.weight"};
constexpr TensorName kPostFfnNorm = {"post_ffw_norm.weight", "post_feedforward_layernorm.weight", F32};
constexpr TensorName kOutScale = {"layer_output_scale.weight", "layer_scalar", F32};
constexpr TensorName kPleGate = {"inp_gate.weight", "per_layer_input_gate.weight"};
constexpr TensorName kPleProj = {"proj.weight", "per_layer_projection.weight"};
constexpr TensorName kPleNorm = {"post_norm.weight", "post_per_layer_input_norm.weight", F32};
constexpr TensorName kRouter = {"ffn_gate_inp.weight", "router.proj.weight"};
constexpr TensorName kRouterScale = {"ffn_gate_inp.scale", "router.scale", F32};
constexpr TensorName kExpertScale = {"ffn_down_exps.scale", "router.per_expert_scale", F32};
// gate rows first in each expert's [H, 2*Ie] matrix; the same ggml shape in both layouts
constexpr TensorName kGateUpExps = {"ffn_gate_up_exps.weight", "experts.gate_up_proj"};
constexpr TensorName kDownExps = {"ffn_down_exps.weight", "experts.down_proj"};
constexpr TensorName kPreFfnNorm2 = {"pre_ffw_norm_2.weight", "pre_feedforward_layernorm_2.weight", F32};
constexpr TensorName kPostFfnNorm1 = {"post_ffw_norm_1.weight", "post_feedforward_layernorm_1.weight", F32};
constexpr TensorName kPostFfnNorm2 = {"post_ffw_norm_2.weight", "post_feedforward_layernorm_2.weight", F32};

}  // namespace

tdm_status gemma4_load(void* model, tdm_loader* loader, char* err, size_t err_size) {
    Gemma4Model* m = static_cast<Gemma4Model*>(model);
    const tdm::sdk::Err e(err, err_size);
    return tdm::sdk::guard(e, "gemma4: load", [&]() -> tdm_status {
        const Gemma4Hparams& hp = m->hp;
        const tdm::sdk::WeightLoader root =
            tdm::sdk::WeightLoader(m->host, loader, m->hf, e).with_prefix("", m->hf_prefix);
        const int64_t H = hp.n_embd, V = hp.n_vocab, P = hp.n_embd_ple, L = hp.n_layer;
        TDM_SDK_TRY(root.get(kTokEmbd, {H, V}, &m->tok_embd));
        TDM_SDK_TRY(root.get(kOutNorm, {H}, &m->output_norm));
        if (!m->hf && hp.rope_freqs) TDM_SDK_TRY(root.get(kRopeFreqs, {hp.head_dim_full / 2}, &m->rope_freqs));
        if (P) {
            // 2.3 GiB in Q8_0 for E2B, read one row per token: the host may keep it in host memory
            m->host_rows =
                static_cast<const tdm_ext_host_rows*>(m->host->get_extension(TDM_EXT_HOST_ROWS, 1, nullptr));
            TDM_SDK_TRY(root.request(kPleTokEmbd, {L * P, hp.n_vocab_ple}).load_token_table(m->host_rows,
                                                                                            &m->ple_tok_embd));
            TDM_SDK_TRY(root.get(kPleModelProj, {H, L * P}, &m->ple_model_proj));
            TDM_SDK_TRY(root.get(kPleProjNorm, {P}, &m->ple_proj_norm));
        }
        const bool wrapped = std::strcmp(m->hf_prefix, "model.language_model.") == 0;
        const tdm::sdk::WeightLoader blocks =
            root.with_prefix("blk.%d.", wrapped ? "model.language_model.layers.%d." : "model.layers.%d.");
        m->layers.resize(hp.n_layer);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            const tdm::sdk::WeightLoader Ll = blocks.at_layer(int(il));
            const LayerShape& s = hp.layers[il];
            Gemma4Layer& l = m->layers[il];
            const int64_t D = s.head_dim, q_dim = int64_t(hp.n_head) * D, kv_dim = int64_t(s.n_head_kv) * D;
            const int64_t F = s.n_ff;
            TDM_SDK_TRY(Ll.get(kAttnNorm, {H}, &l.attn_norm));
            TDM_SDK_TRY(Ll.get(kWq, {H, q_dim}, &l.wq));
            TDM_SDK_TRY(Ll.get(kWo, {q_dim, H}, &l.wo));
            TDM_SDK_TRY(Ll.get(kQNorm, {D}, &l.q_norm));
            // KV-shared layers read an earlier layer's cache: their K/V weights, which HF
            // checkpoints still carry, are never used, so they are not loaded
            if (s.kv_layer >= 0) {
                TDM_SDK_TRY(Ll.get(kWk, {H, kv_dim}, &l.wk));
                TDM_SDK_TRY(Ll.get(kKNorm, {D}, &l.k_norm));
                if (!s.k_eq_v) TDM_SDK_TRY(Ll.get(kWv, {H, kv_dim}, &l.wv));
            }
            TDM_SDK_TRY(Ll.get(kPostAttnNorm, {H}, &l.post_attn_norm));
            TDM_SDK_TRY(Ll.get(kFfnNorm, {H}, &l.ffn_norm));
            TDM_SDK_TRY(Ll.get(kGate, {H, F}, &l.ffn_gate));
            TDM_SDK_TRY(Ll.get(kUp, {H, F}, &l.ffn_up));
            TDM_SDK_TRY(Ll.get(kDown, {F, H}, &l.ffn_down));
            TDM_SDK_TRY(Ll.get(kPostFfnNorm, {H}, &l.post_ffn_norm));
            TDM_SDK_TRY(Ll.get(kOutScale, {1}, &l.out_scale));
            if (hp.moe) {
                const int64_t E = hp.n_expert, Ie = hp.n_ff_exp;
                TDM_SDK_TRY(Ll.get(kRouter, {H, E}, &l.router));
                TDM_SDK_TRY(Ll.get(kRouterScale, {H}, &l.router_scale));
                TDM_SDK_TRY(Ll.get(kExpertScale, {E}, &l.expert_scale));
                TDM_SDK_TRY(Ll.request(kGateUpExps, {H, 2 * Ie, E}).slab(0, Ie).load(&l.gate_exps));
                TDM_SDK_TRY(Ll.request(kGateUpExps, {H, 2 * Ie, E}).slab(Ie, Ie).load(&l.up_exps));
                TDM_SDK_TRY(Ll.get(kDownExps, {Ie, H, E}, &l.down_exps));
                TDM_SDK_TRY(Ll.get(kPreFfnNorm2, {H}, &l.pre_ffn_norm_2));
                TDM_SDK_TRY(Ll.get(kPostFfnNorm1, {H}, &l.post_ffn_norm_1));
                TDM_SDK_TRY(Ll.get(kPostFfnNorm2, {H}, &l.post_ffn_norm_2));
            }
            if (P) {
                TDM_SDK_TRY(Ll.get(kPleGate, {H, P}, &l.ple_gate));
                TDM_SDK_TRY(Ll.get(kPleProj, {P, H}, &l.ple_proj));
                TDM_SDK_TRY(Ll.get(kPleNorm, {H}, &l.ple_norm));
            }
        }
        return TDM_OK;
    });
}

}  // namespace gemma4
