// plugins/qwen-nextn/plugin.cpp: tdm_plugin_negotiate and the function tables
// of the qwen-nextn plugin: Qwen3 dense, Qwen3.5/3.6 (qwen35, qwen35moe) and
// their MTP head.
#include <new>
#include <string>

#include "arch.h"
#include "qwen35.h"

namespace qwen {
namespace {

const tdm_host_api* g_host = nullptr;

tdm_status qwen3_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options*,
                        tdm_model_info* info, void** out, char* err, size_t err_size) {
    Qwen3Model* m = new (std::nothrow) Qwen3Model();
    if (!m) return fail(err, err_size, TDM_ERR_OUT_OF_MEMORY, "out of memory");
    m->host = host;
    m->hf = host->source_format(src) == TDM_SOURCE_SAFETENSORS;
    const tdm_status st = qwen3_read_hparams(host, src, &m->hp, err, err_size);
    if (st != TDM_OK) {
        delete m;
        return st;
    }
    const Qwen3Hparams& hp = m->hp;
    m->attention.resize(hp.n_layer);
    for (auto& l : m->attention) {
        l.struct_size = sizeof l;
        l.n_kv_head = hp.n_head_kv;
        l.head_dim_k = hp.head_dim;
        l.head_dim_v = hp.head_dim;
        l.window = 0;
    }
    m->description = "n_vocab = " + std::to_string(hp.n_vocab) + "\nn_embd = " + std::to_string(hp.n_embd) +
                     "\nn_layer = " + std::to_string(hp.n_layer) + "\nn_head = " + std::to_string(hp.n_head) +
                     "\nn_head_kv = " + std::to_string(hp.n_head_kv) + "\nhead_dim = " + std::to_string(hp.head_dim) +
                     "\nn_ff = " + std::to_string(hp.n_ff) + "\nn_ctx_train = " + std::to_string(hp.n_ctx_train) +
                     "\nrope_theta = " + std::to_string(hp.rope_theta) + "\nrms_eps = " + std::to_string(hp.rms_eps) +
                     "\ntied_embeddings = " + (hp.tied ? "true" : "false");
    info->n_vocab = hp.n_vocab;
    info->n_embd = hp.n_embd;
    info->n_ctx_train = hp.n_ctx_train;
    info->n_attention_layers = hp.n_layer;
    info->attention_layers = m->attention.data();
    info->n_recurrent_states = 0;
    info->recurrent_states = nullptr;
    info->description = m->description.c_str();
    *out = m;
    return TDM_OK;
}

tdm_status qwen3_load_cb(void* model, tdm_loader* loader, char* err, size_t err_size) {
    return qwen3_load(static_cast<Qwen3Model*>(model), loader, err, err_size);
}

tdm_status qwen3_build_cb(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size) {
    return qwen3_build_graph(static_cast<Qwen3Model*>(model), g, batch, err, err_size);
}

void qwen3_destroy(void* model) { delete static_cast<Qwen3Model*>(model); }

const char* const kQwen3Gguf[] = {"qwen3", nullptr};
const char* const kQwen3Hf[] = {"qwen3", nullptr};

const tdm_arch_desc kQwen3 = {
    sizeof(tdm_arch_desc), "qwen3", kQwen3Gguf, kQwen3Hf, qwen3_create, qwen3_load_cb, qwen3_build_cb, qwen3_destroy,
};

tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    if (!host || host->struct_size < sizeof(tdm_host_api))
        return fail(err, err_size, TDM_ERR_ABI_MISMATCH, "host API table too small");
    g_host = host;
    for (const tdm_arch_desc* a : {&kQwen3, &kQwen35Arch, &kQwen35MoeArch})
        if (host->register_arch(reg, a) != TDM_OK) return fail(err, err_size, TDM_ERR_INTERNAL, "%s", host->last_error());
    if (host->register_draft_head(reg, &kQwen35MtpHead) != TDM_OK)
        return fail(err, err_size, TDM_ERR_INTERNAL, "%s", host->last_error());
    return TDM_OK;
}

const tdm_plugin_api kPlugin = {
    sizeof(tdm_plugin_api), "qwen-nextn", "0.1.0",
    "Qwen3 dense and Qwen3.5/3.6 hybrid targets with their NextN/MTP heads", init, nullptr,
};

}  // namespace
}  // namespace qwen

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {
    return tdm_negotiate_v1(n, &qwen::kPlugin);
}
