/* SPDX-License-Identifier: Apache-2.0 */
// plugins/llama/text/arch.h: Llama 3.x dense targets (GGUF architecture "llama" as
// llama.cpp's converter writes it; HF LlamaForCausalLM, model_type "llama"):
// hyper-parameters, weights, and the four callbacks of the tdm_arch_desc that
// plugin.cpp registers. Shapes are in ggml order (ne0 first).
//
// One forward for both layouts; the RoPE pairing follows the file (docs/models/llama.md §3):
// the converter permutes the q/k rows of a GGUF so that adjacent pairs (2i, 2i+1) rotate
// (llama.cpp's rope type NORM), while an HF checkpoint keeps its rows and rotates NeoX
// pairs (i, i + head_dim/2). Both give the same logits for the same weights.
// Not here: registration (../plugin.cpp), the synthesizer (../synth/).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/target_features.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

namespace llama {

// llama3 rope scaling (HF rope_scaling {"rope_type": "llama3", ...}): the per-pair
// frequency divisors llama.cpp's converter writes as rope_freqs (rope_factors.cpp).
struct Llama3RopeScaling {
    float factor = 8.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    uint32_t original_context = 8192;  // original_max_position_embeddings
};

struct LlamaHparams {
    uint32_t n_vocab = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;  // of q, k and v
    uint32_t n_rot = 0;     // rotated dims of each head (rope.dimension_count)
    uint32_t n_ff = 0;
    uint32_t n_ctx_train = 0;
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    tdm_rope_mode rope_mode = TDM_ROPE_ADJACENT;  // GGUF: adjacent; HF: NeoX
    bool rope_freqs = false;                      // GGUF: the file has rope_freqs.weight
    bool llama3_scaling = false;                  // HF: rope_scaling of type llama3
    Llama3RopeScaling scaling;
    bool tied = false;                            // LM head = token embedding
};

struct LlamaLayer {
    const tdm_weight* attn_norm;  // [n_embd]
    const tdm_weight* wq;         // [n_embd, n_head*head_dim]
    const tdm_weight* wk;         // [n_embd, n_head_kv*head_dim]
    const tdm_weight* wv;         // [n_embd, n_head_kv*head_dim]
    const tdm_weight* wo;         // [n_head*head_dim, n_embd]
    const tdm_weight* ffn_norm;   // [n_embd]
    const tdm_weight* ffn_gate;   // [n_embd, n_ff]
    const tdm_weight* ffn_up;     // [n_embd, n_ff]
    const tdm_weight* ffn_down;   // [n_ff, n_embd]
};

struct LlamaModel {
    const tdm_host_api* host = nullptr;
    const tdm_ext_target_features* features = nullptr;  // the states a draft head may tap
    bool hf = false;  // weights from an HF directory (HF tensor names)
    LlamaHparams hp;
    std::vector<float> rope_factors;  // HF llama3 scaling: a divisor per rotated pair, else empty
    std::vector<tdm_attention_layer> attention;  // declared to the host: one per layer
    std::string description;
    const tdm_weight* tok_embd = nullptr;     // [n_embd, n_vocab]
    const tdm_weight* output_norm = nullptr;  // [n_embd]
    const tdm_weight* output = nullptr;       // [n_embd, n_vocab]; tok_embd when tied
    const tdm_weight* rope_freqs = nullptr;   // [n_rot/2] (GGUF only, optional)
    std::vector<LlamaLayer> layers;
};

// Hyper-parameters from GGUF keys or config.json (hparams.cpp).
tdm_status llama_read_hparams(const tdm_host_api* host, const tdm_model_source* src, LlamaHparams* hp,
                              tdm::sdk::Err err);

// The divisor of each of the n_rot/2 rotated pairs under llama3 rope scaling, computed as
// llama.cpp's converter computes rope_freqs (rope_factors.cpp).
std::vector<float> llama3_rope_factors(const LlamaHparams& hp);

// The ops (and parameter kinds) the forward pass uses, checked in init (forward.cpp).
tdm_status llama_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);

// tdm_arch_desc callbacks.
tdm_status llama_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                        tdm_model_info* info, void** model, char* err, size_t err_size);       // hparams.cpp
tdm_status llama_load(void* model, tdm_loader* loader, char* err, size_t err_size);              // load.cpp
tdm_status llama_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err,  // forward.cpp
                             size_t err_size);
void llama_destroy(void* model);                                                                 // hparams.cpp

}  // namespace llama
