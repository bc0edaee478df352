/* SPDX-License-Identifier: Apache-2.0 */
// plugins/dflash/head/dflash.h: the DFlash block draft head (docs/models/dflash.md): its
// hyper-parameters, weights and the callbacks of its tdm_draft_head_desc (plugin.cpp registers
// them), for z-lab's HF layout (config.json with dflash_config; layers.N.*, fc, hidden_norm,
// norm) and llama.cpp's GGUF architecture "dflash" (blk.N.*, fc, enc.output_norm, output_norm).
//
// The head reads the states after a few target layers through extension
// tdm.target_features, projects them once per token (ctx = hidden_norm(fc(taps))), and drafts
// a whole block per round through extension tdm.block_draft: b rows (the newest token, then
// the mask token) through Qwen3-shaped layers whose keys and values are [ctx; block], the
// context rows kept in a KV of its own (rolled back by the host like every drafter's KV). It
// embeds with, and projects through, the target's tables (tdm.target_weights).
// Not here: the synthesizer (synth/), the plain double reference (tests/models/dflash/).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/block_draft.h>
#include <tandem/ext/target_features.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

namespace dflash {

struct DflashHparams {
    uint32_t n_layer = 0;  // draft layers
    uint32_t n_embd = 0;   // H: the head's width, the target's
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 0;
    uint32_t n_ff = 0;
    uint32_t n_vocab = 0;            // the target vocabulary the file declares (0: not declared)
    uint32_t n_target_layers = 0;    // num_target_layers (0: not declared)
    uint32_t block_size = 0;         // b
    int32_t mask_token = -1;
    float rope_theta = 10000.0f;
    float rms_eps = 1e-6f;
    // the target layers whose input the head reads: HF's ids l + 1 (hidden_states[l + 1], the
    // output of layer l), the GGUF's dflash.target_layers as they are
    std::vector<uint32_t> tap_layers;
};

struct DflashLayer {
    const tdm_weight* attn_norm = nullptr;  // input_layernorm [H]
    const tdm_weight* wq = nullptr;         // [H, n_head*D]
    const tdm_weight* wk = nullptr;         // [H, n_head_kv*D]
    const tdm_weight* wv = nullptr;         // [H, n_head_kv*D]
    const tdm_weight* wo = nullptr;         // [n_head*D, H]
    const tdm_weight* q_norm = nullptr;     // [D]
    const tdm_weight* k_norm = nullptr;     // [D]
    const tdm_weight* ffn_norm = nullptr;   // post_attention_layernorm [H]
    const tdm_weight* ffn_gate = nullptr;   // [H, F]
    const tdm_weight* ffn_up = nullptr;     // [H, F]
    const tdm_weight* ffn_down = nullptr;   // [F, H]
};

struct DflashHead {
    const tdm_host_api* host = nullptr;
    const tdm_ext_target_features* features = nullptr;
    bool hf = false;  // z-lab's HF directory, else llama.cpp's GGUF
    DflashHparams hp;
    std::string prefix;  // HF: "" or "model." before every tensor name
    std::vector<tdm_attention_layer> own;  // one KV layer per draft layer
    std::vector<tdm_feature_tap> taps;
    // tdm.block_draft version 2: a step's outputs are the drafted block rows only (else every
    // block row's)
    bool drafted_rows = false;
    std::vector<DflashLayer> layers;
    const tdm_weight* fc = nullptr;           // [k*H, H]
    const tdm_weight* hidden_norm = nullptr;  // [H]
    const tdm_weight* output_norm = nullptr;  // norm [H]
    const tdm_weight* tok_embd = nullptr;     // [H, V]: the GGUF's own, else the target's
    const tdm_weight* output = nullptr;       // LM head [H, V]: the GGUF's own, else the target's
};

tdm_status dflash_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);  // step.cpp

// tdm_draft_head_desc callbacks.
tdm_status dflash_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                         const tdm_options* options, tdm_draft_head_info* info, void** head, char* err,
                         size_t err_size);                                                          // hparams.cpp
tdm_status dflash_load(void* head, tdm_loader* loader, char* err, size_t err_size);                 // load.cpp
tdm_status dflash_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err,
                             size_t err_size);                                                      // step.cpp
void dflash_destroy(void* head);                                                                    // hparams.cpp

}  // namespace dflash
