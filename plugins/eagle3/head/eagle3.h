/* SPDX-License-Identifier: Apache-2.0 */
// plugins/eagle3/head/eagle3.h: the EAGLE-3 draft head (docs/models/eagle3.md): its
// hyper-parameters, weights and the callbacks of its tdm_draft_head_desc (plugin.cpp registers
// them), for the HF layouts (the EAGLE authors' and SpecForge's `midlayer.*`, the
// `layers.0.*` variants) and llama.cpp's GGUF architecture "eagle3".
//
// The head reads the residual stream entering a few target layers through extension
// tdm.target_features, fuses them with `fc`, runs one decoder layer whose attention input is
// [input_layernorm(embed(token)); hidden_norm(g)] over a KV layer of its own (rolled back by
// the host like every drafter's KV), and drafts over its reduced vocabulary; d2t maps a draft
// id to the target's. It embeds with, and projects through, the target's tables when its file
// has none (tdm.target_weights).
// Not here: the synthesizer (synth/), the plain double reference (tests/models/eagle3/).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/target_features.h>
#include <tandem/ext/weight_transforms.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

namespace eagle3 {

// How d2t holds the target id of draft id j.
enum class D2tForm {
    none,      // no d2t: the draft vocabulary is the target's
    offset,    // HF checkpoints: target = j + d2t[j] (EAGLE, SpecForge, vLLM)
    absolute,  // llama.cpp's GGUF: target = d2t[j] (its graph scatters logits by d2t)
};

struct Eagle3Hparams {
    uint32_t n_embd = 0;         // H, the head's width
    uint32_t n_embd_target = 0;  // Ht, the width of each tap
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    uint32_t n_ff = 0;
    uint32_t n_vocab = 0;        // the target vocabulary the file declares (0: not declared)
    uint32_t n_vocab_draft = 0;  // rows of its LM head
    float rope_theta = 10000.0f;
    float rms_eps = 1e-6f;
    tdm_rope_mode rope_mode = TDM_ROPE_NEOX;  // GGUF: adjacent (q/k permuted by the converter)
    bool norm_before_residual = false;  // the attention's residual is hidden_norm(g), not g
    D2tForm d2t = D2tForm::none;
    std::vector<uint32_t> target_layers;  // the target layers whose input the head reads
};

// The tensor names of one layout (HF checkpoints spell the decoder layer three ways).
struct Eagle3Names {
    std::string layer_prefix;  // "midlayer.", "layers.0.", "model.layers.0." or "blk.0."
    std::string top_prefix;    // "" or "model." before fc / norm / embed_tokens
    std::string hidden_norm;   // "hidden_norm.weight" (HF), "attn_norm_2.weight" (GGUF)
};

struct Eagle3Head {
    const tdm_host_api* host = nullptr;
    const tdm_ext_target_features* features = nullptr;
    bool hf = false;
    Eagle3Hparams hp;
    Eagle3Names names;
    tdm_attention_layer own{};  // its one KV layer
    std::vector<tdm_feature_tap> taps;
    const tdm_weight* fc = nullptr;           // [k*Ht, H]
    const tdm_weight* tok_embd = nullptr;     // [H, V]: its own, or the target's
    const tdm_weight* attn_norm = nullptr;    // input_layernorm [H]
    const tdm_weight* hidden_norm = nullptr;  // [H]
    const tdm_weight* wq = nullptr;           // [2H, n_head*D]
    const tdm_weight* wk = nullptr;           // [2H, n_head_kv*D]
    const tdm_weight* wv = nullptr;           // [2H, n_head_kv*D]
    const tdm_weight* wo = nullptr;           // [n_head*D, H]
    const tdm_weight* ffn_norm = nullptr;     // post_attention_layernorm [H]
    const tdm_weight* ffn_gate = nullptr;     // [H, F]
    const tdm_weight* ffn_up = nullptr;       // [H, F]
    const tdm_weight* ffn_down = nullptr;     // [F, H]
    const tdm_weight* output_norm = nullptr;  // [H]
    const tdm_weight* output = nullptr;       // [H, Vd]: its own, or the target's (Vd = V)
    const tdm_weight* rope_freqs = nullptr;   // GGUF llama3 scaling: [D/2] (optional)
    std::vector<float> rope_divisors;         // HF llama3 scaling: one per rotated pair, else empty
    // d2t, as the step reads it: with tdm.weight_transforms the table of target ids, row j =
    // (the target id of draft id j, 0, 0, 0) [4, Vd], whichever form the file stores
    // (d2t_rows); from a host without it the vector as stored [Vd], exact f32 (D2tForm)
    const tdm_weight* d2t = nullptr;
    bool d2t_rows = false;
};

tdm_status eagle3_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);  // step.cpp

// HF llama3 rope scaling (rope_scaling.cpp): its divisors from config.json, and as graph rows
// built from the rows of `like` (at least head_dim/2 columns).
tdm_status read_llama3_scaling(const tdm::sdk::HparamReader& r, float rope_theta, uint32_t head_dim,
                               std::vector<float>* divisors);
tdm_tensor rope_divisor_rows(tdm_builder* b, const std::vector<float>& divisors, tdm_tensor like);

// tdm_draft_head_desc callbacks.
tdm_status eagle3_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                         const tdm_options* options, tdm_draft_head_info* info, void** head, char* err,
                         size_t err_size);                                                          // hparams.cpp
tdm_status eagle3_load(void* head, tdm_loader* loader, char* err, size_t err_size);                 // load.cpp
tdm_status eagle3_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err,
                             size_t err_size);                                                      // step.cpp
void eagle3_destroy(void* head);                                                                    // hparams.cpp

}  // namespace eagle3
