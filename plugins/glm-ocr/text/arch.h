/* SPDX-License-Identifier: Apache-2.0 */
// plugins/glm-ocr/text/arch.h: the GLM-OCR text decoder (GGUF architecture "glm4" as
// llama.cpp's converter writes GLM-OCR and GLM-4; HF GlmOcrForConditionalGeneration,
// model_type "glm_ocr") and the NextN/MTP layer the checkpoint carries after the trunk
// (docs/models/glm-ocr.md §2, §3). Shapes are in ggml order (ne0 first).
//
// One forward form for both layouts, fixed at load: norms are plain weights in both (GLM
// has no +1 convention); the RoPE pairing follows the file, because the converter permutes
// the q/k rows of an M-RoPE model into NeoX order: a GGUF with rope.dimension_sections
// rotates NeoX pairs, an HF checkpoint rotates adjacent pairs (2i, 2i+1), both with the
// contiguous sections [t, h, w]. A GGUF without sections (GLM-4) rotates adjacent pairs
// over rope.dimension_count dims, as llama.cpp's rope type NORM does. GLM-4-0414 and GLM-4
// chat files (same architecture name) add biases after the q/k/v projections
// (docs/models/glm4.md); GLM-OCR has none.
// Not here: registration (../plugin.cpp), the vision tower (../vision/).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/encoder.h>
#include <tandem/ext/target_features.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

namespace glm {

struct GlmHparams {
    uint32_t n_vocab = 0, n_embd = 0;
    uint32_t n_layer = 0;   // trunk layers
    uint32_t n_nextn = 0;   // NextN/MTP layers after the trunk
    uint32_t n_head = 0, n_head_kv = 0, head_dim = 0;
    uint32_t n_ff = 0;      // the fused gate_up projection has 2 * n_ff rows
    uint32_t n_ctx_train = 0;
    uint32_t n_rot = 0;     // rotated dims of each head
    float rope_theta = 10000.0f;
    float rms_eps = 1e-5f;
    tdm_rope_mode rope_mode = TDM_ROPE_ADJACENT;
    bool mrope = false;           // contiguous M-RoPE sections over (t, h, w)
    int32_t sections[3] = {0, 0, 0};
    bool tied = false;
};

// One GLM "sandwich" block: a norm before and after attention and before and after the MLP.
struct GlmLayer {
    const tdm_weight* attn_norm = nullptr;       // input_layernorm
    const tdm_weight* wq = nullptr;              // [n_embd, n_head*head_dim]
    const tdm_weight* wk = nullptr;              // [n_embd, n_head_kv*head_dim]
    const tdm_weight* wv = nullptr;
    const tdm_weight* bq = nullptr;              // q/k/v biases (GLM-4-0414, GLM-4 chat); null in GLM-OCR
    const tdm_weight* bk = nullptr;
    const tdm_weight* bv = nullptr;
    const tdm_weight* wo = nullptr;              // [n_head*head_dim, n_embd]
    const tdm_weight* post_attn_norm = nullptr;  // post_self_attn_layernorm: on the attention output
    const tdm_weight* ffn_norm = nullptr;        // post_attention_layernorm: the PRE-MLP norm (spec §6.1)
    const tdm_weight* ffn_up = nullptr;          // [n_embd, 2*n_ff]: gate rows, then up rows
    const tdm_weight* ffn_down = nullptr;        // [n_ff, n_embd]
    const tdm_weight* post_ffw_norm = nullptr;   // post_mlp_layernorm: on the MLP output
};

struct GlmModel {
    const tdm_host_api* host = nullptr;
    const tdm_ext_encoder* encoder = nullptr;  // tdm.encoder: image rows in place of placeholders
    const tdm_ext_target_features* features = nullptr;  // the states a draft head may tap
    bool hf = false;
    GlmHparams hp;
    std::vector<tdm_attention_layer> attention;  // one per trunk layer
    std::string description;
    const tdm_weight* tok_embd = nullptr;        // [n_embd, n_vocab]
    const tdm_weight* output_norm = nullptr;
    const tdm_weight* output = nullptr;          // [n_embd, n_vocab]; tok_embd when tied
    std::vector<GlmLayer> layers;
};

// The MTP head (draft head "glm-mtp", spec §3): eh_proj([enorm(embed(t)) | hnorm(h)]), one
// sandwich block with its own KV, shared_head.norm, its LM head. Chained steps are fed the
// block output before shared_head.norm (vLLM's glm_ocr_mtp.py).
struct GlmMtp {
    const tdm_host_api* host = nullptr;
    bool hf = false;
    const GlmModel* target = nullptr;
    GlmHparams hp;
    uint32_t block = 0;                     // index of the MTP layer (= trunk layers)
    uint32_t draft_vocab = 0;               // > 0: draft logits over ids [0, draft_vocab) only
    tdm_attention_layer own{};
    const tdm_weight* eh_proj = nullptr;    // [2*n_embd, n_embd]: input [embedding | hidden]
    const tdm_weight* enorm = nullptr;
    const tdm_weight* hnorm = nullptr;
    const tdm_weight* head_norm = nullptr;  // shared_head.norm
    const tdm_weight* tok_embd = nullptr;   // its own copy, else the trunk's
    const tdm_weight* output = nullptr;     // shared_head.head, else the trunk's LM head
    GlmLayer layer;
};

// Hyper-parameters from GGUF keys (glm4.*) or config.json (text_config.*) (hparams.cpp).
tdm_status glm_read_hparams(const tdm_host_api* host, const tdm_model_source* src, GlmHparams* hp,
                            tdm::sdk::Err err);
std::string glm_describe(const GlmHparams& hp);

tdm_status glm_load_trunk(GlmModel* m, tdm_loader* loader, tdm::sdk::Err err);  // load.cpp
tdm_status glm_load_mtp(GlmMtp* h, tdm_loader* loader, tdm::sdk::Err err);

// The ops (and parameter kinds) the trunk and the head use, checked in init (forward.cpp).
tdm_status glm_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);

// tdm_arch_desc callbacks (create.cpp, load.cpp, forward.cpp).
tdm_status glm_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                      tdm_model_info* info, void** model, char* err, size_t err_size);
tdm_status glm_load(void* model, tdm_loader* loader, char* err, size_t err_size);
tdm_status glm_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size);
void glm_destroy(void* model);

// tdm_draft_head_desc callbacks of glm-mtp.
tdm_status glm_mtp_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                          const tdm_options* options, tdm_draft_head_info* info, void** head, char* err,
                          size_t err_size);
tdm_status glm_mtp_load(void* head, tdm_loader* loader, char* err, size_t err_size);
tdm_status glm_mtp_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size);
void glm_mtp_destroy(void* head);

}  // namespace glm
