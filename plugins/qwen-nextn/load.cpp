// plugins/qwen-nextn/load.cpp: Qwen3 tensor names -> weights. GGUF names are
// llama.cpp's (blk.N.attn_q.weight ...); HF names are transformers' (one table
// maps them). Shapes are checked by the host against what we request here.
#include <cstdio>
#include <cstring>

#include "arch.h"

namespace qwen {
namespace {

struct Names {
    const char* gguf;  // printf pattern with %u = layer
    const char* hf;
};

// parameter -> file names
constexpr Names kTokEmbd = {"token_embd.weight", "model.embed_tokens.weight"};
constexpr Names kOutNorm = {"output_norm.weight", "model.norm.weight"};
constexpr Names kOutput = {"output.weight", "lm_head.weight"};
constexpr Names kAttnNorm = {"blk.%u.attn_norm.weight", "model.layers.%u.input_layernorm.weight"};
constexpr Names kWq = {"blk.%u.attn_q.weight", "model.layers.%u.self_attn.q_proj.weight"};
constexpr Names kWk = {"blk.%u.attn_k.weight", "model.layers.%u.self_attn.k_proj.weight"};
constexpr Names kWv = {"blk.%u.attn_v.weight", "model.layers.%u.self_attn.v_proj.weight"};
constexpr Names kWo = {"blk.%u.attn_output.weight", "model.layers.%u.self_attn.o_proj.weight"};
constexpr Names kQNorm = {"blk.%u.attn_q_norm.weight", "model.layers.%u.self_attn.q_norm.weight"};
constexpr Names kKNorm = {"blk.%u.attn_k_norm.weight", "model.layers.%u.self_attn.k_norm.weight"};
constexpr Names kFfnNorm = {"blk.%u.ffn_norm.weight", "model.layers.%u.post_attention_layernorm.weight"};
constexpr Names kGate = {"blk.%u.ffn_gate.weight", "model.layers.%u.mlp.gate_proj.weight"};
constexpr Names kUp = {"blk.%u.ffn_up.weight", "model.layers.%u.mlp.up_proj.weight"};
constexpr Names kDown = {"blk.%u.ffn_down.weight", "model.layers.%u.mlp.down_proj.weight"};

struct Loader {
    Qwen3Model* m;
    tdm_loader* loader;
    char* err;
    size_t err_size;

    // Loads `names` (for layer il) with the given ggml shape; norms as f32.
    tdm_status get(const Names& names, unsigned il, int64_t ne0, int64_t ne1, bool norm, const tdm_weight** out) {
        char name[160];
        snprintf(name, sizeof name, m->hf ? names.hf : names.gguf, il);
        tdm_weight_request r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        r.name = name;
        r.n_dims = ne1 ? 2 : 1;
        r.ne[0] = ne0;
        r.ne[1] = ne1 ? ne1 : 1;
        r.flags = norm ? TDM_WEIGHT_F32 : 0;
        if (m->host->load_weight(loader, &r, out) != TDM_OK)
            return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", m->host->last_error());
        return TDM_OK;
    }
};

}  // namespace

tdm_status qwen3_load(Qwen3Model* m, tdm_loader* loader, char* err, size_t err_size) {
    const Qwen3Hparams& hp = m->hp;
    Loader L{m, loader, err, err_size};
    const int64_t q_dim = int64_t(hp.n_head) * hp.head_dim, kv_dim = int64_t(hp.n_head_kv) * hp.head_dim;
#define LOAD(...)                                     \
    do {                                              \
        tdm_status st_ = L.get(__VA_ARGS__);          \
        if (st_ != TDM_OK) return st_;                \
    } while (0)
    LOAD(kTokEmbd, 0, hp.n_embd, hp.n_vocab, false, &m->tok_embd);
    LOAD(kOutNorm, 0, hp.n_embd, 0, true, &m->output_norm);
    if (hp.tied)
        m->output = m->tok_embd;
    else
        LOAD(kOutput, 0, hp.n_embd, hp.n_vocab, false, &m->output);
    m->layers.resize(hp.n_layer);
    for (unsigned il = 0; il < hp.n_layer; ++il) {
        Qwen3Layer& l = m->layers[il];
        LOAD(kAttnNorm, il, hp.n_embd, 0, true, &l.attn_norm);
        LOAD(kWq, il, hp.n_embd, q_dim, false, &l.wq);
        LOAD(kWk, il, hp.n_embd, kv_dim, false, &l.wk);
        LOAD(kWv, il, hp.n_embd, kv_dim, false, &l.wv);
        LOAD(kWo, il, q_dim, hp.n_embd, false, &l.wo);
        LOAD(kQNorm, il, hp.head_dim, 0, true, &l.q_norm);
        LOAD(kKNorm, il, hp.head_dim, 0, true, &l.k_norm);
        LOAD(kFfnNorm, il, hp.n_embd, 0, true, &l.ffn_norm);
        LOAD(kGate, il, hp.n_embd, hp.n_ff, false, &l.ffn_gate);
        LOAD(kUp, il, hp.n_embd, hp.n_ff, false, &l.ffn_up);
        LOAD(kDown, il, hp.n_ff, hp.n_embd, false, &l.ffn_down);
    }
#undef LOAD
    return TDM_OK;
}

}  // namespace qwen
