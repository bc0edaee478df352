/* SPDX-License-Identifier: Apache-2.0 */
// plugins/gemma4/text/arch.h: the Gemma 4 text decoder (HF Gemma4ForConditionalGeneration's
// language model / Gemma4ForCausalLM, GGUF architecture "gemma4"): hyper-parameters, weights
// and the four callbacks of its tdm_arch_desc (plugin.cpp registers them). The math is
// docs/models/gemma4.md §2; shapes are in ggml order (ne0 first), as the weights are requested.
//
// Families, all from one code path, told apart by the hyper-parameters alone:
//   E2B/E4B   per-layer embeddings (PLE), KV-shared layers, double-wide MLP on them (E2B);
//   31B       K = V on full layers (no v_proj: V is the raw k_proj output, weightlessly normed);
//   26B-A4B   the same plus a mixture-of-experts block beside the dense MLP.
// Not here: the gemma4-assistant drafter, registration (plugin.cpp).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/host_rows.h>
#include <tandem/ext/target_features.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

namespace gemma4 {

// One transformer layer's shape, resolved from the per-type / per-layer keys.
struct LayerShape {
    bool sliding = false;     // sliding-window attention (else full attention)
    uint32_t head_dim = 0;    // of q, k and v: the sliding or the global head dim
    uint32_t n_head_kv = 0;
    uint32_t n_ff = 0;        // dense MLP width (2x on KV-shared layers of E2B)
    bool k_eq_v = false;      // no v_proj: V = v_norm(raw K projection)
    int32_t kv_layer = -1;    // index of the declared KV layer it stores into; -1 = KV-shared
    int32_t kv_source = -1;   // the declared KV layer it attends (its own, or the shared one)
};

struct Gemma4Hparams {
    uint32_t n_vocab = 0;
    uint32_t n_embd = 0;          // H
    uint32_t n_layer = 0;
    uint32_t n_head = 0;          // query heads, every layer
    uint32_t n_ctx_train = 0;
    uint32_t head_dim_swa = 0;    // sliding layers
    uint32_t head_dim_full = 0;   // full layers
    uint32_t window = 0;          // sliding window in tokens
    uint32_t n_kv_shared = 0;     // the last n_kv_shared layers reuse earlier layers' K/V
    uint32_t n_embd_ple = 0;      // P, per-layer input width (0 = no PLE)
    uint32_t n_vocab_ple = 0;     // rows of the PLE token table
    float theta_swa = 1e4f;
    float theta_full = 1e6f;
    // Full layers: frequency slots that rotate (proportional RoPE); 0 = all of head_dim_full/2.
    // From partial_rotary_factor (HF); a GGUF's rope_freqs tensor says it instead.
    uint32_t n_freq_full = 0;
    bool rope_freqs = false;      // GGUF: rope_freqs.weight present (llama.cpp's emulation)
    float softcap = 0.0f;         // final logit softcap (0 = none)
    float rms_eps = 1e-6f;
    // x = E[ids] * embd_scale: sqrt(H) in f32 (GGUF, llama.cpp), or rounded to the embedding's
    // stored type (HF casts the scale to the weight dtype: bf16(sqrt(5376)) = 73.5)
    float embd_scale = 1.0f;
    float ple_scale = 1.0f;       // sqrt(P), the same rule
    // Mixture of experts beside the dense MLP on every layer (26B-A4B)
    bool moe = false;
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_ff_exp = 0;        // one expert's width
    std::vector<LayerShape> layers;
};

struct Gemma4Layer {
    const tdm_weight* attn_norm = nullptr;       // [H]
    const tdm_weight* wq = nullptr;              // [H, n_head*D]
    const tdm_weight* wk = nullptr;              // [H, n_head_kv*D]; null on KV-shared layers
    const tdm_weight* wv = nullptr;              // null on K=V and KV-shared layers
    const tdm_weight* wo = nullptr;              // [n_head*D, H]
    const tdm_weight* q_norm = nullptr;          // [D]
    const tdm_weight* k_norm = nullptr;          // [D]; null on KV-shared layers
    const tdm_weight* post_attn_norm = nullptr;  // [H]
    const tdm_weight* ffn_norm = nullptr;        // [H] pre-feedforward
    const tdm_weight* ffn_gate = nullptr;        // [H, F]
    const tdm_weight* ffn_up = nullptr;          // [H, F]
    const tdm_weight* ffn_down = nullptr;        // [F, H]
    const tdm_weight* post_ffn_norm = nullptr;   // [H]
    const tdm_weight* out_scale = nullptr;       // [1] layer_scalar
    const tdm_weight* ple_gate = nullptr;        // [H, P]
    const tdm_weight* ple_proj = nullptr;        // [P, H]
    const tdm_weight* ple_norm = nullptr;        // [H]
    // MoE (26B-A4B)
    const tdm_weight* router = nullptr;          // [H, E]
    const tdm_weight* router_scale = nullptr;    // [H]
    const tdm_weight* expert_scale = nullptr;    // [E] per-expert scale of the routing weights
    const tdm_weight* gate_exps = nullptr;       // [H, Ie, E]
    const tdm_weight* up_exps = nullptr;         // [H, Ie, E]
    const tdm_weight* down_exps = nullptr;       // [Ie, H, E]
    const tdm_weight* pre_ffn_norm_2 = nullptr;  // [H] experts' input norm
    const tdm_weight* post_ffn_norm_1 = nullptr; // [H] dense MLP's output norm
    const tdm_weight* post_ffn_norm_2 = nullptr; // [H] experts' output norm
};

struct Gemma4Model {
    const tdm_host_api* host = nullptr;
    const tdm_ext_target_features* features = nullptr;  // the states a draft head may tap
    bool hf = false;
    const char* hf_prefix = "";                  // "model.language_model." or "model."
    Gemma4Hparams hp;
    std::vector<tdm_attention_layer> attention;  // declared: the layers that store K/V
    std::string description;
    const tdm_weight* tok_embd = nullptr;        // [H, V], also the (tied) LM head
    const tdm_weight* output_norm = nullptr;     // [H]
    const tdm_weight* rope_freqs = nullptr;      // [head_dim_full/2] (GGUF only)
    const tdm_weight* ple_tok_embd = nullptr;    // [L*P, V_ple], read by token rows (maybe from host memory)
    const tdm_ext_host_rows* host_rows = nullptr;  // NULL on a host without tdm.host_rows
    const tdm_weight* ple_model_proj = nullptr;  // [H, L*P]
    const tdm_weight* ple_proj_norm = nullptr;   // [P]
    std::vector<Gemma4Layer> layers;
};

// Hyper-parameters from GGUF keys or config.json (hparams.cpp).
tdm_status gemma4_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Gemma4Hparams* hp,
                               tdm::sdk::Err err);

// The ops (and parameter kinds) the forward pass uses, checked in init (forward.cpp).
tdm_status gemma4_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);

// tdm_arch_desc callbacks.
tdm_status gemma4_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                         tdm_model_info* info, void** model, char* err, size_t err_size);      // hparams.cpp
tdm_status gemma4_load(void* model, tdm_loader* loader, char* err, size_t err_size);             // load.cpp
tdm_status gemma4_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, // forward.cpp
                              size_t err_size);
void gemma4_destroy(void* model);                                                                // hparams.cpp

}  // namespace gemma4
