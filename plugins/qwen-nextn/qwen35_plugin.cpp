// plugins/qwen-nextn/qwen35_plugin.cpp: the qwen35 / qwen35moe architecture
// and qwen35-mtp draft head descriptors (create: hparams -> declared memory).
#include <new>
#include <string>

#include "qwen35.h"

namespace qwen {
namespace {

// Declares one KV layer per gated-attention layer and two recurrent states
// per DeltaNet layer: the conv state (the K-1 previous qkv inputs) and the
// fp32 SSM state [Nv][dk][dv].
void declare_memory(Qwen35Model* m) {
    const Qwen35Hparams& hp = m->hp;
    m->layers.assign(hp.n_layer, Qwen35Layer{});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        Qwen35Layer& l = m->layers[il];
        l.full_attention = hp.full_attention[il] != 0;
        if (l.full_attention) {
            l.kv = uint32_t(m->attention.size());
            m->attention.push_back({sizeof(tdm_attention_layer), hp.n_head_kv, hp.head_dim, hp.head_dim, 0});
        } else {
            l.state = uint32_t(m->states.size());
            m->states.push_back({sizeof(tdm_recurrent_state), uint64_t(hp.conv_dim()) * (hp.conv_kernel - 1)});
            m->states.push_back({sizeof(tdm_recurrent_state), uint64_t(hp.gdn_nv) * hp.gdn_dk * hp.gdn_dv});
        }
    }
}

tdm_status qwen35_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                         tdm_model_info* info, void** out, char* err, size_t err_size) {
    Qwen35Model* m = new (std::nothrow) Qwen35Model();
    if (!m) return fail(err, err_size, TDM_ERR_OUT_OF_MEMORY, "out of memory");
    m->host = host;
    m->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
    tdm_status st = qwen35_read_hparams(host, src, &m->hp, err, err_size);
    if (st == TDM_OK && m->hp.n_vocab == 0)
        st = fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: no token_embd.weight (an MTP-only file? load it with --mtp-head)",
                  host->source_path(src));
    int64_t chunk = 0;
    if (st == TDM_OK && options && host->option_get_int(options, "gdn_chunk", &chunk) == TDM_OK &&
        (chunk < 0 || chunk > 64))
        st = fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, "gdn_chunk = %lld: use 0 (recurrent form) or 1..64",
                  (long long)chunk);
    if (st != TDM_OK) {
        delete m;
        return st;
    }
    m->gdn_chunk = uint32_t(chunk);
    declare_memory(m);
    m->description = qwen35_describe(m->hp);
    info->n_vocab = m->hp.n_vocab;
    info->n_embd = m->hp.n_embd;
    info->n_ctx_train = m->hp.n_ctx_train;
    info->n_attention_layers = uint32_t(m->attention.size());
    info->attention_layers = m->attention.data();
    info->n_recurrent_states = uint32_t(m->states.size());
    info->recurrent_states = m->states.data();
    info->description = m->description.c_str();
    *out = m;
    return TDM_OK;
}

tdm_status qwen35_load_cb(void* model, tdm_loader* loader, char* err, size_t err_size) {
    return qwen35_load(static_cast<Qwen35Model*>(model), loader, err, err_size);
}

tdm_status qwen35_build_cb(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    return qwen35_build_graph(static_cast<Qwen35Model*>(model), g, batch, err, err_size);
}

void qwen35_destroy(void* model) { delete static_cast<Qwen35Model*>(model); }

// ---- the MTP head ------------------------------------------------------------------------

// The head's hyper-parameters must be the trunk's: the head reads the trunk's
// hidden states and shares its embedding and LM head.
tdm_status check_matches_target(const Qwen35Hparams& h, const Qwen35Hparams& t, const char* path, char* err,
                                size_t err_size) {
    if (h.moe != t.moe || h.n_embd != t.n_embd || h.n_head != t.n_head || h.n_head_kv != t.n_head_kv ||
        h.head_dim != t.head_dim || h.n_ff != t.n_ff || h.n_expert != t.n_expert || h.n_ff_exp != t.n_ff_exp ||
        (h.n_vocab && h.n_vocab != t.n_vocab))
        return fail(err, err_size, TDM_ERR_BAD_MODEL,
                    "%s: the MTP head's shape (%s, hidden %u, %u heads of %u) does not match the target's (%s, hidden "
                    "%u, %u heads of %u)",
                    path, h.moe ? "MoE" : "dense", h.n_embd, h.n_head, h.head_dim, t.moe ? "MoE" : "dense", t.n_embd,
                    t.n_head, t.head_dim);
    return TDM_OK;
}

tdm_status mtp_create(const tdm_host_api* host, const tdm_model_source* src, void* target, const tdm_options* options,
                      tdm_draft_head_info* info, void** out, char* err, size_t err_size) {
    Qwen35Mtp* h = new (std::nothrow) Qwen35Mtp();
    if (!h) return fail(err, err_size, TDM_ERR_OUT_OF_MEMORY, "out of memory");
    h->host = host;
    h->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
    h->target = static_cast<const Qwen35Model*>(target);
    const char* path = host->source_path(src);
    tdm_status st = qwen35_read_hparams(host, src, &h->hp, err, err_size);
    if (st == TDM_OK && h->hp.n_nextn == 0)
        st = fail(err, err_size, TDM_ERR_NOT_FOUND,
                  "%s has no NextN/MTP layers (%s), so --spec-type mtp has no head to draft with. Use a file that "
                  "keeps the checkpoint's mtp.* weights: the HF directory itself, or a GGUF converted with "
                  "llama.cpp's convert_hf_to_gguf.py from it (it writes them as blk.N.nextn.*); or pass an MTP-only "
                  "GGUF with --mtp-head FILE",
                  path, h->hf ? "no mtp.* tensors in the directory" : "nextn_predict_layers is 0 or absent");
    if (st == TDM_OK && h->target) {
        st = check_matches_target(h->hp, h->target->hp, path, err, err_size);
        if (h->hp.n_vocab == 0) h->hp.n_vocab = h->target->hp.n_vocab;
        h->hp.tied = h->target->hp.tied;
    }
    const char* hidden = nullptr;
    if (st == TDM_OK && options && host->option_get_string(options, "mtp_hidden", &hidden) == TDM_OK && hidden) {
        const std::string v = hidden;
        if (v == "pre-norm")
            h->hidden = TDM_HIDDEN_PRE_NORM;
        else if (v != "post-norm")
            st = fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, "mtp_hidden = '%s': use post-norm or pre-norm", hidden);
    }
    int64_t dv = 0;
    if (st == TDM_OK && options && host->option_get_int(options, "draft_vocab", &dv) == TDM_OK) {
        if (dv < 0)
            st = fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, "draft_vocab = %lld: use 0 (all) or a token count",
                      (long long)dv);
        else if (dv > 0 && h->hp.n_vocab && uint64_t(dv) < h->hp.n_vocab)
            h->draft_vocab = uint32_t(dv);
    }
    if (st != TDM_OK) {
        delete h;
        return st;
    }
    h->block = h->hp.n_layer;
    h->layer.full_attention = true;
    h->layer.kv = 0;
    h->own = {sizeof(tdm_attention_layer), h->hp.n_head_kv, h->hp.head_dim, h->hp.head_dim, 0};
    info->hidden = h->hidden;
    info->n_own_layers = 1;
    info->own_layers = &h->own;
    info->n_target_kv_layers = 0;
    info->target_kv_layers = nullptr;
    info->n_embd = h->hp.n_embd;
    *out = h;
    return TDM_OK;
}

tdm_status mtp_load_cb(void* head, tdm_loader* loader, char* err, size_t err_size) {
    return qwen35_mtp_load(static_cast<Qwen35Mtp*>(head), loader, err, err_size);
}

tdm_status mtp_step_cb(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    return qwen35_mtp_build_step(static_cast<Qwen35Mtp*>(head), g, batch, err, err_size);
}

void mtp_destroy(void* head) { delete static_cast<Qwen35Mtp*>(head); }

const char* const kGguf35[] = {"qwen35", nullptr};
const char* const kHf35[] = {"qwen3_5", "qwen3_5_text", nullptr};
const char* const kGguf35Moe[] = {"qwen35moe", nullptr};
const char* const kHf35Moe[] = {"qwen3_5_moe", "qwen3_5_moe_text", nullptr};
const char* const kMtpTypes[] = {"mtp", "nextn", "draft-mtp", nullptr};
const char* const kMtpTargets[] = {"qwen35", "qwen35moe", nullptr};

}  // namespace

const tdm_arch_desc kQwen35Arch = {
    sizeof(tdm_arch_desc), "qwen35", kGguf35, kHf35, qwen35_create, qwen35_load_cb, qwen35_build_cb, qwen35_destroy,
};
const tdm_arch_desc kQwen35MoeArch = {
    sizeof(tdm_arch_desc), "qwen35moe", kGguf35Moe, kHf35Moe, qwen35_create, qwen35_load_cb, qwen35_build_cb,
    qwen35_destroy,
};
const tdm_draft_head_desc kQwen35MtpHead = {
    sizeof(tdm_draft_head_desc), "qwen35-mtp", kMtpTypes, kMtpTargets, mtp_create, mtp_load_cb, mtp_step_cb,
    mtp_destroy,
};

}  // namespace qwen
