// plugins/qwen-nextn/qwen35_load.cpp: Qwen3.5 tensor names -> weights, for
// the trunk and the MTP head. GGUF names are llama.cpp's converter's (norms
// with +1 baked in, DeltaNet value heads tiled, ssm_a = -exp(A_log)); HF names
// are the checkpoints' (model.language_model.*, mtp.*), and the loader turns
// them into the GGUF conventions: +1 on every norm but linear_attn.norm,
// -exp on A_log, grouped -> tiled value heads. Each conversion happens once,
// here; the forward pass has one form.
#include <cstring>
#include <string>
#include <vector>

#include "qwen35.h"

namespace qwen {
namespace {

// A tensor of one layer in both spellings (suffixes after the layer prefix).
struct Names {
    const char* gguf;
    const char* hf;
};

constexpr Names kAttnNorm = {"attn_norm.weight", "input_layernorm.weight"};
constexpr Names kFfnNorm = {"post_attention_norm.weight", "post_attention_layernorm.weight"};
constexpr Names kWq = {"attn_q.weight", "self_attn.q_proj.weight"};
constexpr Names kWk = {"attn_k.weight", "self_attn.k_proj.weight"};
constexpr Names kWv = {"attn_v.weight", "self_attn.v_proj.weight"};
constexpr Names kWo = {"attn_output.weight", "self_attn.o_proj.weight"};
constexpr Names kQNorm = {"attn_q_norm.weight", "self_attn.q_norm.weight"};
constexpr Names kKNorm = {"attn_k_norm.weight", "self_attn.k_norm.weight"};
constexpr Names kQkv = {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"};
constexpr Names kZ = {"attn_gate.weight", "linear_attn.in_proj_z.weight"};
constexpr Names kBeta = {"ssm_beta.weight", "linear_attn.in_proj_b.weight"};
constexpr Names kAlpha = {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"};
constexpr Names kA = {"ssm_a", "linear_attn.A_log"};
constexpr Names kDtBias = {"ssm_dt.bias", "linear_attn.dt_bias"};
constexpr Names kConv = {"ssm_conv1d.weight", "linear_attn.conv1d.weight"};
constexpr Names kSsmNorm = {"ssm_norm.weight", "linear_attn.norm.weight"};
constexpr Names kSsmOut = {"ssm_out.weight", "linear_attn.out_proj.weight"};
constexpr Names kGate = {"ffn_gate.weight", "mlp.gate_proj.weight"};
constexpr Names kUp = {"ffn_up.weight", "mlp.up_proj.weight"};
constexpr Names kDown = {"ffn_down.weight", "mlp.down_proj.weight"};
constexpr Names kRouter = {"ffn_gate_inp.weight", "mlp.gate.weight"};
constexpr Names kGateShexp = {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"};
constexpr Names kUpShexp = {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"};
constexpr Names kDownShexp = {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"};
constexpr Names kShexpGate = {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"};

enum : uint32_t { kNorm = 1u << 0, kPlainNorm = 1u << 1, kNegExp = 1u << 2, kF32 = 1u << 3, kOptional = 1u << 4 };

struct Request {
    std::string name;
    std::vector<int64_t> ne;  // ggml order
    uint32_t kind = 0;
    std::vector<int64_t> row_perm, col_perm;
    std::vector<std::string> parts;
    int64_t slab_first = 0, slab_rows = 0;
};

struct Loader {
    const tdm_host_api* host;
    tdm_loader* loader;
    bool hf;
    char* err;
    size_t err_size;

    tdm_status load(const Request& q, const tdm_weight** out) const {
        tdm_weight_request r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        r.name = q.name.c_str();
        r.n_dims = uint32_t(q.ne.size());
        for (size_t i = 0; i < q.ne.size() && i < 4; ++i) r.ne[i] = q.ne[i];
        if (q.kind & (kNorm | kPlainNorm | kF32)) r.flags |= TDM_WEIGHT_F32;
        if (hf && (q.kind & kNorm)) r.flags |= TDM_WEIGHT_ADD_ONE;  // GGUF has the +1 baked in
        if (hf && (q.kind & kNegExp)) r.flags |= TDM_WEIGHT_NEG_EXP;
        if (q.kind & kOptional) r.flags |= TDM_WEIGHT_OPTIONAL;
        if (!q.row_perm.empty()) {
            r.row_perm = q.row_perm.data();
            r.n_row_perm = q.row_perm.size();
        }
        if (!q.col_perm.empty()) {
            r.col_perm = q.col_perm.data();
            r.n_col_perm = q.col_perm.size();
        }
        std::vector<const char*> parts;
        for (const std::string& p : q.parts) parts.push_back(p.c_str());
        if (!parts.empty()) {
            r.parts = parts.data();
            r.n_parts = uint32_t(parts.size());
        }
        r.slab_row_first = q.slab_first;
        r.slab_rows = q.slab_rows;
        if (host->load_weight(loader, &r, out) != TDM_OK)
            return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
        return TDM_OK;
    }

};

// Loads one layer (trunk or MTP) given its name prefixes.
struct LayerLoader {
    const Loader& L;
    const Qwen35Hparams& hp;
    std::string prefix;  // "blk.3." or "model.language_model.layers.3." or "mtp.layers.0."

    Request req(const Names& n, std::vector<int64_t> ne, uint32_t kind = 0) const {
        Request q;
        q.name = prefix + (L.hf ? n.hf : n.gguf);
        q.ne = std::move(ne);
        q.kind = kind;
        return q;
    }

    tdm_status get(const Names& n, std::vector<int64_t> ne, uint32_t kind, const tdm_weight** out) const {
        return L.load(req(n, std::move(ne), kind), out);
    }

    tdm_status attention(Qwen35Attention* a) const {
        const int64_t E = hp.n_embd, D = hp.head_dim, q = int64_t(hp.n_head) * D, kv = int64_t(hp.n_head_kv) * D;
        QWEN_TRY(get(kWq, {E, 2 * q}, 0, &a->wq));
        QWEN_TRY(get(kWk, {E, kv}, 0, &a->wk));
        QWEN_TRY(get(kWv, {E, kv}, 0, &a->wv));
        QWEN_TRY(get(kWo, {q, E}, 0, &a->wo));
        QWEN_TRY(get(kQNorm, {D}, kNorm, &a->q_norm));
        QWEN_TRY(get(kKNorm, {D}, kNorm, &a->k_norm));
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
        const bool permute = L.hf && r > 1;
        auto heads = [&](int64_t offset, int64_t total, int64_t width) {  // rows/cols of value-head blocks
            std::vector<int64_t> p(static_cast<size_t>(total), 0);
            for (int64_t i = 0; i < total; ++i) p[size_t(i)] = i;
            for (int64_t j = 0; j < Nv; ++j)
                for (int64_t d = 0; d < width; ++d) p[size_t(offset + j * width + d)] = offset + head[size_t(j)] * width + d;
            return p;
        };
        Request qkv = req(kQkv, {E, cd});
        Request z = req(kZ, {E, vd});
        Request beta = req(kBeta, {E, Nv});
        Request alpha = req(kAlpha, {E, Nv});
        Request a = req(kA, {Nv}, kNegExp | kF32);
        Request dt = req(kDtBias, {Nv}, kF32);
        Request conv = req(kConv, L.hf ? std::vector<int64_t>{K, 1, cd} : std::vector<int64_t>{K, cd}, kF32);
        Request out = req(kSsmOut, {vd, E});
        if (permute) {
            qkv.row_perm = heads(2 * kd, cd, dv);
            conv.row_perm = qkv.row_perm;
            z.row_perm = heads(0, vd, dv);
            beta.row_perm = heads(0, Nv, 1);
            alpha.row_perm = beta.row_perm;
            a.col_perm = beta.row_perm;
            dt.col_perm = beta.row_perm;
            out.col_perm = z.row_perm;
        }
        QWEN_TRY(L.load(qkv, &g->wqkv));
        QWEN_TRY(L.load(z, &g->wz));
        QWEN_TRY(L.load(beta, &g->wbeta));
        QWEN_TRY(L.load(alpha, &g->walpha));
        QWEN_TRY(L.load(a, &g->a));
        QWEN_TRY(L.load(dt, &g->dt_bias));
        QWEN_TRY(L.load(conv, &g->conv));
        QWEN_TRY(get(kSsmNorm, {dv}, kPlainNorm, &g->norm));
        QWEN_TRY(L.load(out, &g->wout));
        return TDM_OK;
    }

    tdm_status experts(Qwen35Ffn* f) const {
        const int64_t E = hp.n_embd, X = hp.n_expert, I = hp.n_ff_exp;
        if (!L.hf) {
            QWEN_TRY(L.load({prefix + "ffn_gate_exps.weight", {E, I, X}, 0, {}, {}, {}, 0, 0}, &f->gate_exps));
            QWEN_TRY(L.load({prefix + "ffn_up_exps.weight", {E, I, X}, 0, {}, {}, {}, 0, 0}, &f->up_exps));
            QWEN_TRY(L.load({prefix + "ffn_down_exps.weight", {I, E, X}, 0, {}, {}, {}, 0, 0}, &f->down_exps));
            return TDM_OK;
        }
        // transformers 5 fuses the experts: gate_up_proj [X, 2I, E] (gate first) and down_proj [X, E, I]
        const std::string fused = prefix + "mlp.experts.gate_up_proj";
        QWEN_TRY(L.load({fused, {E, 2 * I, X}, kOptional, {}, {}, {}, 0, I}, &f->gate_exps));
        if (f->gate_exps) {
            QWEN_TRY(L.load({fused, {E, 2 * I, X}, 0, {}, {}, {}, I, I}, &f->up_exps));
            QWEN_TRY(L.load({prefix + "mlp.experts.down_proj", {I, E, X}, 0, {}, {}, {}, 0, 0}, &f->down_exps));
            return TDM_OK;
        }
        Request gate{prefix + "mlp.experts.gate_proj (" + std::to_string(X) + " experts)", {E, I}, 0, {}, {}, {}, 0, 0};
        Request up{prefix + "mlp.experts.up_proj (" + std::to_string(X) + " experts)", {E, I}, 0, {}, {}, {}, 0, 0};
        Request down{prefix + "mlp.experts.down_proj (" + std::to_string(X) + " experts)", {I, E}, 0, {}, {}, {}, 0, 0};
        for (int64_t e = 0; e < X; ++e) {
            const std::string x = prefix + "mlp.experts." + std::to_string(e) + ".";
            gate.parts.push_back(x + "gate_proj.weight");
            up.parts.push_back(x + "up_proj.weight");
            down.parts.push_back(x + "down_proj.weight");
        }
        QWEN_TRY(L.load(gate, &f->gate_exps));
        QWEN_TRY(L.load(up, &f->up_exps));
        QWEN_TRY(L.load(down, &f->down_exps));
        return TDM_OK;
    }

    tdm_status ffn(Qwen35Ffn* f) const {
        const int64_t E = hp.n_embd;
        if (!hp.moe) {
            const int64_t F = hp.n_ff;
            QWEN_TRY(get(kGate, {E, F}, 0, &f->gate));
            QWEN_TRY(get(kUp, {E, F}, 0, &f->up));
            QWEN_TRY(get(kDown, {F, E}, 0, &f->down));
            return TDM_OK;
        }
        const int64_t S = hp.n_ff_shexp;
        QWEN_TRY(get(kRouter, {E, int64_t(hp.n_expert)}, kF32, &f->router));
        QWEN_TRY(experts(f));
        QWEN_TRY(get(kGateShexp, {E, S}, 0, &f->gate_shexp));
        QWEN_TRY(get(kUpShexp, {E, S}, 0, &f->up_shexp));
        QWEN_TRY(get(kDownShexp, {S, E}, 0, &f->down_shexp));
        QWEN_TRY(get(kShexpGate, {E, 1}, kF32, &f->shexp_gate));
        return TDM_OK;
    }

    tdm_status layer(Qwen35Layer* l) const {
        const int64_t E = hp.n_embd;
        QWEN_TRY(get(kAttnNorm, {E}, kNorm, &l->attn_norm));
        QWEN_TRY(l->full_attention ? attention(&l->attn) : delta_net(&l->gdn));
        QWEN_TRY(get(kFfnNorm, {E}, kNorm, &l->ffn_norm));
        return ffn(&l->ffn);
    }
};

}  // namespace

tdm_status qwen35_load(Qwen35Model* m, tdm_loader* loader, char* err, size_t err_size) {
    const Qwen35Hparams& hp = m->hp;
    Loader L{m->host, loader, m->hf, err, err_size};
    const int64_t E = hp.n_embd, V = hp.n_vocab;
    const char* lm = "model.language_model.";
    auto top = [&](const char* gguf, const char* hf) { return m->hf ? std::string(lm) + hf : std::string(gguf); };
    QWEN_TRY(L.load({top("token_embd.weight", "embed_tokens.weight"), {E, V}, 0, {}, {}, {}, 0, 0}, &m->tok_embd));
    QWEN_TRY(L.load({top("output_norm.weight", "norm.weight"), {E}, kNorm, {}, {}, {}, 0, 0}, &m->output_norm));
    if (hp.tied)
        m->output = m->tok_embd;
    else
        QWEN_TRY(L.load({m->hf ? "lm_head.weight" : "output.weight", {E, V}, 0, {}, {}, {}, 0, 0}, &m->output));
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string prefix = m->hf ? std::string(lm) + "layers." + std::to_string(il) + "." : "blk." + std::to_string(il) + ".";
        QWEN_TRY((LayerLoader{L, hp, prefix}.layer(&m->layers[il])));
    }
    return TDM_OK;
}

tdm_status qwen35_mtp_load(Qwen35Mtp* h, tdm_loader* loader, char* err, size_t err_size) {
    const Qwen35Hparams& hp = h->hp;
    Loader L{h->host, loader, h->hf, err, err_size};
    const int64_t E = hp.n_embd, V = hp.n_vocab;
    const std::string g = "blk." + std::to_string(h->block) + ".";
    auto name = [&](const char* gguf, const char* hf) { return h->hf ? std::string(hf) : g + gguf; };
    QWEN_TRY(L.load({name("nextn.eh_proj.weight", "mtp.fc.weight"), {2 * E, E}, 0, {}, {}, {}, 0, 0}, &h->eh_proj));
    QWEN_TRY(L.load({name("nextn.enorm.weight", "mtp.pre_fc_norm_embedding.weight"), {E}, kNorm, {}, {}, {}, 0, 0},
                    &h->enorm));
    QWEN_TRY(L.load({name("nextn.hnorm.weight", "mtp.pre_fc_norm_hidden.weight"), {E}, kNorm, {}, {}, {}, 0, 0},
                    &h->hnorm));
    QWEN_TRY(L.load({name("nextn.shared_head_norm.weight", "mtp.norm.weight"), {E}, kNorm, {}, {}, {}, 0, 0},
                    &h->head_norm));
    QWEN_TRY((LayerLoader{L, hp, h->hf ? std::string("mtp.layers.0.") : g}.layer(&h->layer)));
    if (h->target) {  // the trunk's embedding and LM head, already on the device
        h->tok_embd = h->target->tok_embd;
        h->output = h->target->output;
        return TDM_OK;
    }
    // a head loaded without its trunk: dedicated tensors first, then the trunk's
    const char* lm = "model.language_model.";
    QWEN_TRY(L.load({name("nextn.embed_tokens.weight", "mtp.embed_tokens.weight"), {E, V}, kOptional, {}, {}, {}, 0, 0},
                    &h->tok_embd));
    if (!h->tok_embd)
        QWEN_TRY(L.load({h->hf ? std::string(lm) + "embed_tokens.weight" : "token_embd.weight", {E, V}, 0, {}, {}, {}, 0,
                         0},
                        &h->tok_embd));
    QWEN_TRY(L.load({name("nextn.shared_head_head.weight", "mtp.lm_head.weight"), {E, V}, kOptional, {}, {}, {}, 0, 0},
                    &h->output));
    if (!h->output && !hp.tied)
        QWEN_TRY(L.load({h->hf ? "lm_head.weight" : "output.weight", {E, V}, 0, {}, {}, {}, 0, 0}, &h->output));
    if (!h->output) h->output = h->tok_embd;
    return TDM_OK;
}

}  // namespace qwen
