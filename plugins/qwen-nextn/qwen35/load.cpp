// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/qwen35/load.cpp: Qwen3.5 tensor names -> weights, for
// the trunk and the MTP head. GGUF names are llama.cpp's converter's (norms
// with +1 baked in, DeltaNet value heads tiled, ssm_a = -exp(A_log)); HF names
// are the checkpoints' (model.language_model.*, mtp.*), and the loader turns
// them into the GGUF conventions: +1 on every norm but linear_attn.norm,
// -exp on A_log, grouped -> tiled value heads. Each conversion happens once,
// here; the forward pass has one form.
#include <string>
#include <vector>

#include "arch.h"

namespace qwen {
namespace {

using tdm::sdk::Err;
using tdm::sdk::TensorName;
using tdm::sdk::WeightLoader;

// Norms: f32, and HF's stored w - 1 gets its +1 (GGUF has it baked in).
constexpr uint32_t kF32 = TDM_WEIGHT_F32;
constexpr uint32_t kPlusOneHf = TDM_WEIGHT_ADD_ONE;

// Whole-model tensors (no prefix).
constexpr TensorName kTokEmbd = {"token_embd.weight", "model.language_model.embed_tokens.weight"};
constexpr TensorName kOutNorm = {"output_norm.weight", "model.language_model.norm.weight", kF32, kPlusOneHf};
constexpr TensorName kOutput = {"output.weight", "lm_head.weight"};

// One layer's tensors, after the layer prefix ("blk.3." or
// "model.language_model.layers.3.", an MTP layer's "blk.N." or "mtp.layers.0.").
constexpr TensorName kAttnNorm = {"attn_norm.weight", "input_layernorm.weight", kF32, kPlusOneHf};
constexpr TensorName kFfnNorm = {"post_attention_norm.weight", "post_attention_layernorm.weight", kF32, kPlusOneHf};
constexpr TensorName kWq = {"attn_q.weight", "self_attn.q_proj.weight"};
constexpr TensorName kWk = {"attn_k.weight", "self_attn.k_proj.weight"};
constexpr TensorName kWv = {"attn_v.weight", "self_attn.v_proj.weight"};
constexpr TensorName kWo = {"attn_output.weight", "self_attn.o_proj.weight"};
constexpr TensorName kQNorm = {"attn_q_norm.weight", "self_attn.q_norm.weight", kF32, kPlusOneHf};
constexpr TensorName kKNorm = {"attn_k_norm.weight", "self_attn.k_norm.weight", kF32, kPlusOneHf};
constexpr TensorName kQkv = {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"};
constexpr TensorName kZ = {"attn_gate.weight", "linear_attn.in_proj_z.weight"};
constexpr TensorName kBeta = {"ssm_beta.weight", "linear_attn.in_proj_b.weight"};
constexpr TensorName kAlpha = {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"};
constexpr TensorName kA = {"ssm_a", "linear_attn.A_log", kF32, TDM_WEIGHT_NEG_EXP};
constexpr TensorName kDtBias = {"ssm_dt.bias", "linear_attn.dt_bias", kF32};
constexpr TensorName kConv = {"ssm_conv1d.weight", "linear_attn.conv1d.weight", kF32};
constexpr TensorName kSsmNorm = {"ssm_norm.weight", "linear_attn.norm.weight", kF32};  // a plain weight in both
constexpr TensorName kSsmOut = {"ssm_out.weight", "linear_attn.out_proj.weight"};
constexpr TensorName kGate = {"ffn_gate.weight", "mlp.gate_proj.weight"};
constexpr TensorName kUp = {"ffn_up.weight", "mlp.up_proj.weight"};
constexpr TensorName kDown = {"ffn_down.weight", "mlp.down_proj.weight"};
constexpr TensorName kRouter = {"ffn_gate_inp.weight", "mlp.gate.weight", kF32};
constexpr TensorName kGateShexp = {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"};
constexpr TensorName kUpShexp = {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"};
constexpr TensorName kDownShexp = {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"};
constexpr TensorName kShexpGate = {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight", kF32};

// The MTP head's own tensors (GGUF: after "blk.N."; HF: whole names).
constexpr TensorName kEhProj = {"nextn.eh_proj.weight", "mtp.fc.weight"};
constexpr TensorName kENorm = {"nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight", kF32, kPlusOneHf};
constexpr TensorName kHNorm = {"nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight", kF32, kPlusOneHf};
constexpr TensorName kHeadNorm = {"nextn.shared_head_norm.weight", "mtp.norm.weight", kF32, kPlusOneHf};
constexpr TensorName kMtpEmbd = {"nextn.embed_tokens.weight", "mtp.embed_tokens.weight"};
constexpr TensorName kMtpOutput = {"nextn.shared_head_head.weight", "mtp.lm_head.weight"};

// Loads one layer (trunk or MTP) through a loader scoped to its prefix.
struct LayerLoader {
    const WeightLoader& L;
    const Qwen35Hparams& hp;

    tdm_status attention(Qwen35Attention* a) const {
        const int64_t E = hp.n_embd, D = hp.head_dim, q = int64_t(hp.n_head) * D, kv = int64_t(hp.n_head_kv) * D;
        TDM_SDK_TRY(L.get(kWq, {E, 2 * q}, &a->wq));
        TDM_SDK_TRY(L.get(kWk, {E, kv}, &a->wk));
        TDM_SDK_TRY(L.get(kWv, {E, kv}, &a->wv));
        TDM_SDK_TRY(L.get(kWo, {q, E}, &a->wo));
        TDM_SDK_TRY(L.get(kQNorm, {D}, &a->q_norm));
        TDM_SDK_TRY(L.get(kKNorm, {D}, &a->k_norm));
        return TDM_OK;
    }

    tdm_status delta_net(Qwen35DeltaNet* g) const {
        const int64_t E = hp.n_embd, Nk = hp.gdn_nk, Nv = hp.gdn_nv, dv = hp.gdn_dv;
        const int64_t kd = hp.key_dim(), vd = hp.value_dim(), cd = hp.conv_dim(), K = hp.conv_kernel;
        // HF value heads are grouped by key head (h -> h / r); the runtime uses
        // the converter's tiled order (j -> j % Nk): tiled head j is grouped head
        // (j % Nk) * r + j / Nk.
        const int64_t r = Nv / Nk;
        std::vector<int64_t> head(size_t(Nv), 0);
        for (int64_t j = 0; j < Nv; ++j) head[size_t(j)] = (j % Nk) * r + j / Nk;
        auto heads = [&](int64_t offset, int64_t total, int64_t width) {  // rows/cols of value-head blocks
            std::vector<int64_t> p(static_cast<size_t>(total), 0);
            for (int64_t i = 0; i < total; ++i) p[size_t(i)] = i;
            for (int64_t j = 0; j < Nv; ++j)
                for (int64_t d = 0; d < width; ++d) p[size_t(offset + j * width + d)] = offset + head[size_t(j)] * width + d;
            return p;
        };
        // the permutations (empty: none) of the qkv rows, the z rows and the per-head rows
        std::vector<int64_t> qkv_rows, z_rows, head_rows;
        if (L.hf() && r > 1) {
            qkv_rows = heads(2 * kd, cd, dv);
            z_rows = heads(0, vd, dv);
            head_rows = heads(0, Nv, 1);
        }
        TDM_SDK_TRY(L.request(kQkv, {E, cd}).row_perm(qkv_rows).load(&g->wqkv));
        TDM_SDK_TRY(L.request(kZ, {E, vd}).row_perm(z_rows).load(&g->wz));
        TDM_SDK_TRY(L.request(kBeta, {E, Nv}).row_perm(head_rows).load(&g->wbeta));
        TDM_SDK_TRY(L.request(kAlpha, {E, Nv}).row_perm(head_rows).load(&g->walpha));
        TDM_SDK_TRY(L.request(kA, {Nv}).col_perm(head_rows).load(&g->a));
        TDM_SDK_TRY(L.request(kDtBias, {Nv}).col_perm(head_rows).load(&g->dt_bias));
        if (L.hf())  // HF keeps Conv1d's [channels, 1, K] layout
            TDM_SDK_TRY(L.request(kConv, {K, 1, cd}).row_perm(qkv_rows).load(&g->conv));
        else
            TDM_SDK_TRY(L.request(kConv, {K, cd}).row_perm(qkv_rows).load(&g->conv));
        TDM_SDK_TRY(L.get(kSsmNorm, {dv}, &g->norm));
        TDM_SDK_TRY(L.request(kSsmOut, {vd, E}).col_perm(z_rows).load(&g->wout));
        return TDM_OK;
    }

    tdm_status experts(Qwen35Ffn* f) const {
        const int64_t E = hp.n_embd, X = hp.n_expert, I = hp.n_ff_exp;
        if (!L.hf()) {
            TDM_SDK_TRY(L.request("ffn_gate_exps.weight", {E, I, X}).load(&f->gate_exps));
            TDM_SDK_TRY(L.request("ffn_up_exps.weight", {E, I, X}).load(&f->up_exps));
            TDM_SDK_TRY(L.request("ffn_down_exps.weight", {I, E, X}).load(&f->down_exps));
            return TDM_OK;
        }
        // transformers 5 fuses the experts: gate_up_proj [X, 2I, E] (gate first) and down_proj [X, E, I]
        TDM_SDK_TRY(L.request("mlp.experts.gate_up_proj", {E, 2 * I, X}).optional().slab(0, I).load(&f->gate_exps));
        if (f->gate_exps) {
            TDM_SDK_TRY(L.request("mlp.experts.gate_up_proj", {E, 2 * I, X}).slab(I, I).load(&f->up_exps));
            TDM_SDK_TRY(L.request("mlp.experts.down_proj", {I, E, X}).load(&f->down_exps));
            return TDM_OK;
        }
        // older checkpoints: one tensor per expert, stacked by the host
        const std::string n = " (" + std::to_string(X) + " experts)";
        tdm::sdk::NameList gate, up, down;
        TDM_SDK_TRY(L.part_names("mlp.experts.%d.gate_proj.weight", uint32_t(X), &gate));
        TDM_SDK_TRY(L.part_names("mlp.experts.%d.up_proj.weight", uint32_t(X), &up));
        TDM_SDK_TRY(L.part_names("mlp.experts.%d.down_proj.weight", uint32_t(X), &down));
        TDM_SDK_TRY(L.request(("mlp.experts.gate_proj" + n).c_str(), {E, I}).stack(gate).load(&f->gate_exps));
        TDM_SDK_TRY(L.request(("mlp.experts.up_proj" + n).c_str(), {E, I}).stack(up).load(&f->up_exps));
        TDM_SDK_TRY(L.request(("mlp.experts.down_proj" + n).c_str(), {I, E}).stack(down).load(&f->down_exps));
        return TDM_OK;
    }

    tdm_status ffn(Qwen35Ffn* f) const {
        const int64_t E = hp.n_embd;
        if (!hp.moe) {
            const int64_t F = hp.n_ff;
            TDM_SDK_TRY(L.get(kGate, {E, F}, &f->gate));
            TDM_SDK_TRY(L.get(kUp, {E, F}, &f->up));
            TDM_SDK_TRY(L.get(kDown, {F, E}, &f->down));
            return TDM_OK;
        }
        const int64_t S = hp.n_ff_shexp;
        TDM_SDK_TRY(L.get(kRouter, {E, int64_t(hp.n_expert)}, &f->router));
        TDM_SDK_TRY(experts(f));
        TDM_SDK_TRY(L.get(kGateShexp, {E, S}, &f->gate_shexp));
        TDM_SDK_TRY(L.get(kUpShexp, {E, S}, &f->up_shexp));
        TDM_SDK_TRY(L.get(kDownShexp, {S, E}, &f->down_shexp));
        TDM_SDK_TRY(L.get(kShexpGate, {E, 1}, &f->shexp_gate));
        return TDM_OK;
    }

    tdm_status layer(Qwen35Layer* l) const {
        const int64_t E = hp.n_embd;
        TDM_SDK_TRY(L.get(kAttnNorm, {E}, &l->attn_norm));
        TDM_SDK_TRY(l->full_attention ? attention(&l->attn) : delta_net(&l->gdn));
        TDM_SDK_TRY(L.get(kFfnNorm, {E}, &l->ffn_norm));
        return ffn(&l->ffn);
    }
};

}  // namespace

tdm_status qwen35_load_trunk(Qwen35Model* m, tdm_loader* loader, Err err) {
    const Qwen35Hparams& hp = m->hp;
    const WeightLoader L(m->host, loader, m->hf, err);
    const int64_t E = hp.n_embd, V = hp.n_vocab;
    TDM_SDK_TRY(L.get(kTokEmbd, {E, V}, &m->tok_embd));
    TDM_SDK_TRY(L.get(kOutNorm, {E}, &m->output_norm));
    if (hp.tied)
        m->output = m->tok_embd;
    else
        TDM_SDK_TRY(L.get(kOutput, {E, V}, &m->output));
    const WeightLoader layers = L.with_prefix("blk.%d.", "model.language_model.layers.%d.");
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const WeightLoader Ll = layers.at_layer(int(il));
        TDM_SDK_TRY((LayerLoader{Ll, hp}.layer(&m->layers[il])));
    }
    return TDM_OK;
}

tdm_status qwen35_load_mtp(Qwen35Mtp* h, tdm_loader* loader, Err err) {
    const Qwen35Hparams& hp = h->hp;
    const WeightLoader L(h->host, loader, h->hf, err);
    const int64_t E = hp.n_embd, V = hp.n_vocab;
    // GGUF: the head is block N (after the trunk's layers); HF: mtp.*
    const WeightLoader own = L.with_prefix("blk.%d.", "").at_layer(int(h->block));
    TDM_SDK_TRY(own.get(kEhProj, {2 * E, E}, &h->eh_proj));
    TDM_SDK_TRY(own.get(kENorm, {E}, &h->enorm));
    TDM_SDK_TRY(own.get(kHNorm, {E}, &h->hnorm));
    TDM_SDK_TRY(own.get(kHeadNorm, {E}, &h->head_norm));
    const WeightLoader layer = L.with_prefix("blk.%d.", "mtp.layers.0.").at_layer(int(h->block));
    TDM_SDK_TRY((LayerLoader{layer, hp}.layer(&h->layer)));
    if (h->target) {  // the trunk's embedding and LM head, already on the device
        h->tok_embd = h->target->tok_embd;
        h->output = h->target->output;
        return TDM_OK;
    }
    // a head loaded without its trunk: dedicated tensors first, then the trunk's
    TDM_SDK_TRY(own.get_optional(kMtpEmbd, {E, V}, &h->tok_embd));
    if (!h->tok_embd) TDM_SDK_TRY(L.get(kTokEmbd, {E, V}, &h->tok_embd));
    TDM_SDK_TRY(own.get_optional(kMtpOutput, {E, V}, &h->output));
    if (!h->output && !hp.tied) TDM_SDK_TRY(L.get(kOutput, {E, V}, &h->output));
    if (!h->output) h->output = h->tok_embd;
    return TDM_OK;
}

tdm_status qwen35_load(void* model, tdm_loader* loader, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "qwen35: load",
                           [&] { return qwen35_load_trunk(static_cast<Qwen35Model*>(model), loader, e); });
}

tdm_status qwen35_mtp_load(void* head, tdm_loader* loader, char* err, size_t err_size) {
    const Err e(err, err_size);
    return tdm::sdk::guard(e, "qwen35-mtp: load",
                           [&] { return qwen35_load_mtp(static_cast<Qwen35Mtp*>(head), loader, e); });
}

}  // namespace qwen
