/* SPDX-License-Identifier: Apache-2.0 */
// plugins/gemma4/assistant/assistant.h: the gemma4-assistant drafter (HF
// Gemma4AssistantForCausalLM, GGUF architecture "gemma4-assistant"; docs/models/gemma4.md §3) as a
// draft head of Gemma 4 targets: hyper-parameters, weights and the callbacks of its
// tdm_draft_head_desc (plugin.cpp registers them).
//
// The assistant has no K/V projections and no cache: each of its 4 layers attends, read-only,
// into the TARGET's cache (the last non-shared sliding layer, or the last non-shared full
// layer), always at the position of the round's newest token, so it is a stateless,
// constant-position head (tandem.h tdm_draft_head_flags). It embeds tokens with the target's
// table (times the target's sqrt(H) scale), mixes in the target's post-norm hidden of the row
// that produced the token, and hands its own projected hidden to the next step.
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

#include "../text/arch.h"

namespace gemma4 {

struct AssistantHparams {
    uint32_t n_embd = 0;          // Ha, the assistant's own width
    uint32_t n_embd_target = 0;   // Hb, backbone_hidden_size
    uint32_t n_vocab = 0;         // rows of its (tied) head
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_ff = 0;
    uint32_t head_dim_swa = 0;
    uint32_t head_dim_full = 0;
    uint32_t window = 0;
    float theta_swa = 1e4f;
    float theta_full = 1e6f;
    uint32_t n_freq_full = 0;     // HF: rotated slots of the full layers (0 = all)
    bool rope_freqs = false;      // GGUF: rope_freqs.weight carries them instead
    float softcap = 0.0f;         // on the draft logits (0 = none: E2B's assistant)
    float rms_eps = 1e-6f;
    // centroid-masked head (E2B/E4B assistants): logits only over the tokens of the
    // top_k_centroids best of n_centroids clusters
    bool ordered = false;
    uint32_t n_centroids = 0;
    uint32_t top_k_centroids = 0;
    std::vector<uint8_t> sliding;  // per layer
};

struct AssistantLayer {
    const tdm_weight* attn_norm = nullptr;       // [Ha]
    const tdm_weight* wq = nullptr;              // [Ha, n_head*D]
    const tdm_weight* q_norm = nullptr;          // [D]
    const tdm_weight* wo = nullptr;              // [n_head*D, Ha]
    const tdm_weight* post_attn_norm = nullptr;  // [Ha]
    const tdm_weight* ffn_norm = nullptr;        // [Ha]
    const tdm_weight* ffn_gate = nullptr;        // [Ha, F]
    const tdm_weight* ffn_up = nullptr;          // [Ha, F]
    const tdm_weight* ffn_down = nullptr;        // [F, Ha]
    const tdm_weight* post_ffn_norm = nullptr;   // [Ha]
    const tdm_weight* out_scale = nullptr;       // [1]
};

struct Assistant {
    const tdm_host_api* host = nullptr;
    bool hf = false;
    const Gemma4Model* target = nullptr;
    AssistantHparams hp;
    uint32_t target_kv[2] = {0, 0};  // the target KV layer read by [full, sliding] layers
    uint32_t target_kv_list[2] = {0, 0};
    const tdm_weight* target_embd = nullptr;  // the target's token table [Hb, V]
    float target_embd_scale = 1.0f;
    const tdm_weight* tok_embd = nullptr;     // [Ha, V]: the tied draft head
    const tdm_weight* output_norm = nullptr;
    const tdm_weight* pre_proj = nullptr;     // [2*Hb, Ha]: concat(embedding, hidden) -> Ha
    const tdm_weight* post_proj = nullptr;    // [Ha, Hb]
    const tdm_weight* rope_freqs = nullptr;
    const tdm_weight* centroids = nullptr;    // [Ha, n_centroids]
    const tdm_weight* ordering = nullptr;     // [V / n_centroids, n_centroids] token ids (F32, exact)
    std::vector<AssistantLayer> layers;
};

tdm_status assistant_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);              // step.cpp
tdm_status assistant_require_masked_head_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);  // step.cpp

// tdm_draft_head_desc callbacks.
tdm_status assistant_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                            const tdm_options* options, tdm_draft_head_info* info, void** head, char* err,
                            size_t err_size);                                                   // hparams.cpp
tdm_status assistant_load(void* head, tdm_loader* loader, char* err, size_t err_size);          // load.cpp
tdm_status assistant_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err,
                                size_t err_size);                                                // step.cpp
void assistant_destroy(void* head);                                                             // hparams.cpp

}  // namespace gemma4
