/* SPDX-License-Identifier: Apache-2.0 */
// plugins/qwen-nextn/qwen3/arch.h: Qwen3 dense (HF Qwen3ForCausalLM, GGUF
// architecture "qwen3"): hyper-parameters, weights, and the four callbacks of
// its tdm_arch_desc (plugin.cpp registers them). Shapes are in ggml order
// (ne0 first), as the weights are requested.
// Not here: Qwen3.5/3.6 (qwen35/), registration (plugin.cpp).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/target_features.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

namespace qwen {

struct Qwen3Hparams {
    uint32_t n_vocab = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;   // of q, k and v
    uint32_t n_ff = 0;
    uint32_t n_ctx_train = 0;
    float rope_theta = 1e6f;
    float rms_eps = 1e-6f;
    bool tied = false;       // LM head = token embedding
};

struct Qwen3Layer {
    const tdm_weight* attn_norm;  // [n_embd]
    const tdm_weight* wq;         // [n_embd, n_head*head_dim]
    const tdm_weight* wk;         // [n_embd, n_head_kv*head_dim]
    const tdm_weight* wv;         // [n_embd, n_head_kv*head_dim]
    const tdm_weight* wo;         // [n_head*head_dim, n_embd]
    const tdm_weight* q_norm;     // [head_dim]
    const tdm_weight* k_norm;     // [head_dim]
    const tdm_weight* ffn_norm;   // [n_embd]
    const tdm_weight* ffn_gate;   // [n_embd, n_ff]
    const tdm_weight* ffn_up;     // [n_embd, n_ff]
    const tdm_weight* ffn_down;   // [n_ff, n_embd]
};

struct Qwen3Model {
    const tdm_host_api* host = nullptr;
    const tdm_ext_target_features* features = nullptr;  // the states a draft head may tap
    bool hf = false;  // weights from an HF directory (HF tensor names)
    Qwen3Hparams hp;
    std::vector<tdm_attention_layer> attention;  // declared to the host: one per layer
    std::string description;
    const tdm_weight* tok_embd = nullptr;        // [n_embd, n_vocab]
    const tdm_weight* output_norm = nullptr;     // [n_embd]
    const tdm_weight* output = nullptr;          // [n_embd, n_vocab]; tok_embd when tied
    std::vector<Qwen3Layer> layers;
};

// Hyper-parameters from GGUF keys or config.json (hparams.cpp).
tdm_status qwen3_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Qwen3Hparams* hp,
                              tdm::sdk::Err err);

// The ops (and parameter kinds) the forward pass uses, checked in init (forward.cpp).
tdm_status qwen3_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);

// tdm_arch_desc callbacks.
tdm_status qwen3_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                        tdm_model_info* info, void** model, char* err, size_t err_size);       // hparams.cpp
tdm_status qwen3_load(void* model, tdm_loader* loader, char* err, size_t err_size);              // load.cpp
tdm_status qwen3_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err,  // forward.cpp
                             size_t err_size);
void qwen3_destroy(void* model);                                                                 // hparams.cpp

}  // namespace qwen
