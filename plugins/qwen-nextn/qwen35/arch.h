/* SPDX-License-Identifier: Apache-2.0 */
// plugins/qwen-nextn/qwen35/arch.h: Qwen3.5 / Qwen3.6 (qwen35 dense,
// qwen35moe): hybrid Gated DeltaNet + gated full attention, and the one-layer
// MTP head the checkpoints carry (docs/models/qwen35.md). Shapes are in ggml order.
// The callbacks declared at the end are registered by ../plugin.cpp.
//
// Conventions are fixed at load time so the forward pass has one form:
// norms are "x_hat * w" (HF's +1 is added by the loader), value heads of the
// DeltaNet layers are in tiled order (HF's grouped order is permuted by the
// loader), and A is stored as -exp(A_log).
#pragma once

#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/target_features.h>
#include <tandem/graph.h>
#include <tandem/tandem.h>

#include <string>
#include <vector>

namespace qwen {

struct Qwen35Hparams {
    bool moe = false;
    uint32_t n_vocab = 0, n_embd = 0;
    uint32_t n_layer = 0;          // trunk layers
    uint32_t n_nextn = 0;          // MTP layers the file carries (after the trunk)
    uint32_t n_ctx_train = 0;
    float rms_eps = 1e-6f;
    bool tied = false;
    std::vector<uint8_t> full_attention;  // per trunk layer: 1 = gated attention, 0 = DeltaNet
    // gated attention
    uint32_t n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
    int32_t sections[3] = {0, 0, 0};      // interleaved M-RoPE sections (frequency slots)
    float rope_theta = 1e7f;
    // Gated DeltaNet
    uint32_t gdn_nk = 0, gdn_nv = 0, gdn_dk = 0, gdn_dv = 0, conv_kernel = 4;
    // feed-forward: dense, or routed experts + a shared expert
    uint32_t n_ff = 0;
    uint32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;

    uint32_t key_dim() const { return gdn_nk * gdn_dk; }
    uint32_t value_dim() const { return gdn_nv * gdn_dv; }
    uint32_t conv_dim() const { return 2 * key_dim() + value_dim(); }
};

struct Qwen35Attention {
    const tdm_weight* wq = nullptr;  // [n_embd, 2*n_head*head_dim]: per head q | gate
    const tdm_weight* wk = nullptr;
    const tdm_weight* wv = nullptr;
    const tdm_weight* wo = nullptr;
    const tdm_weight* q_norm = nullptr;
    const tdm_weight* k_norm = nullptr;
};

struct Qwen35DeltaNet {
    const tdm_weight* wqkv = nullptr;    // [n_embd, conv_dim]: q | k | v (v heads tiled)
    const tdm_weight* wz = nullptr;      // [n_embd, value_dim]: the output gate z
    const tdm_weight* wbeta = nullptr;   // [n_embd, Nv]
    const tdm_weight* walpha = nullptr;  // [n_embd, Nv]
    const tdm_weight* a = nullptr;       // [Nv] f32: -exp(A_log)
    const tdm_weight* dt_bias = nullptr; // [Nv] f32
    const tdm_weight* conv = nullptr;    // [K, conv_dim] f32 (HF: [K, 1, conv_dim])
    const tdm_weight* norm = nullptr;    // [dv] f32, plain weight
    const tdm_weight* wout = nullptr;    // [value_dim, n_embd]
};

struct Qwen35Ffn {
    // dense
    const tdm_weight* gate = nullptr;
    const tdm_weight* up = nullptr;
    const tdm_weight* down = nullptr;
    // MoE
    const tdm_weight* router = nullptr;      // [n_embd, n_expert] f32
    const tdm_weight* gate_exps = nullptr;   // [n_embd, n_ff_exp, n_expert]
    const tdm_weight* up_exps = nullptr;
    const tdm_weight* down_exps = nullptr;   // [n_ff_exp, n_embd, n_expert]
    const tdm_weight* gate_shexp = nullptr;  // [n_embd, n_ff_shexp]
    const tdm_weight* up_shexp = nullptr;
    const tdm_weight* down_shexp = nullptr;
    const tdm_weight* shexp_gate = nullptr;  // [n_embd, 1] f32
};

struct Qwen35Layer {
    bool full_attention = false;
    uint32_t kv = 0;     // index of its KV layer (attention layers)
    uint32_t state = 0;  // index of its conv state; the SSM state is state + 1 (DeltaNet layers)
    const tdm_weight* attn_norm = nullptr;
    const tdm_weight* ffn_norm = nullptr;  // post_attention_layernorm: the pre-FFN norm
    Qwen35Attention attn;
    Qwen35DeltaNet gdn;
    Qwen35Ffn ffn;
};

struct Qwen35Model {
    const tdm_host_api* host = nullptr;
    const tdm_ext_target_features* features = nullptr;  // the states a draft head may tap
    bool hf = false;
    uint32_t gdn_chunk = 0;  // chunked delta rule for prefill batches of more tokens (0 = never)
    Qwen35Hparams hp;
    std::vector<tdm_attention_layer> attention;
    std::vector<tdm_recurrent_state> states;
    std::string description;
    const tdm_weight* tok_embd = nullptr;
    const tdm_weight* output_norm = nullptr;
    const tdm_weight* output = nullptr;  // tok_embd when tied
    std::vector<Qwen35Layer> layers;
};

// The MTP head (draft head "qwen35-mtp"): one gated-attention layer of its own
// over (embedding of token t, trunk hidden that produced t).
struct Qwen35Mtp {
    const tdm_host_api* host = nullptr;
    bool hf = false;
    const Qwen35Model* target = nullptr;  // shares its embedding and LM head when set
    Qwen35Hparams hp;
    uint32_t block = 0;                   // GGUF block index of the head (= trunk layers)
    tdm_hidden_point hidden = TDM_HIDDEN_POST_NORM;
    uint32_t draft_vocab = 0;             // > 0: draft logits over token ids [0, draft_vocab) only
    tdm_attention_layer own{};
    const tdm_weight* eh_proj = nullptr;  // [2*n_embd, n_embd]: input [embedding | hidden]
    const tdm_weight* enorm = nullptr;
    const tdm_weight* hnorm = nullptr;
    const tdm_weight* head_norm = nullptr;  // shared_head_norm (mtp.norm)
    const tdm_weight* tok_embd = nullptr;
    const tdm_weight* output = nullptr;
    Qwen35Layer layer;                      // full attention + FFN
};

// Hyper-parameters from GGUF keys (prefix qwen35. / qwen35moe.) or config.json
// (text_config.*) (hparams.cpp).
tdm_status qwen35_read_hparams(const tdm_host_api* host, const tdm_model_source* src, Qwen35Hparams* hp,
                               tdm::sdk::Err err);
// The "key = value" lines `tandem info` prints.
std::string qwen35_describe(const Qwen35Hparams& hp);

tdm_status qwen35_load_trunk(Qwen35Model* m, tdm_loader* loader, tdm::sdk::Err err);  // load.cpp
tdm_status qwen35_load_mtp(Qwen35Mtp* h, tdm_loader* loader, tdm::sdk::Err err);

// The ops (and parameter kinds) the trunk and the head use, checked in init;
// qwen35_require_chunked_delta_rule: the chunked form a gdn_chunk option asks for
// (forward.cpp).
tdm_status qwen35_require_ops(const tdm::sdk::Host& host, tdm::sdk::Err err);
tdm_status qwen35_require_chunked_delta_rule(const tdm::sdk::Host& host, uint32_t chunk, tdm::sdk::Err err);

// Pieces shared by the trunk and the MTP head (forward.cpp).
tdm_tensor qwen35_gated_attention(tdm_builder* b, const Qwen35Hparams& hp, const Qwen35Layer& L, tdm_tensor h,
                                  tdm_tensor pos4, tdm_tensor residual, uint32_t n_tokens);
tdm_tensor qwen35_ffn(tdm_builder* b, const Qwen35Hparams& hp, const Qwen35Ffn& f, tdm_tensor h, tdm_tensor residual,
                      uint32_t n_tokens);

// tdm_arch_desc callbacks of qwen35 and qwen35moe.
tdm_status qwen35_create(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                         tdm_model_info* info, void** model, char* err, size_t err_size);     // create.cpp
tdm_status qwen35_load(void* model, tdm_loader* loader, char* err, size_t err_size);            // load.cpp
tdm_status qwen35_build_graph(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err,  // forward.cpp
                              size_t err_size);
void qwen35_destroy(void* model);                                                               // create.cpp

// tdm_draft_head_desc callbacks of qwen35-mtp.
tdm_status qwen35_mtp_create(const tdm_host_api* host, const tdm_model_source* src, void* target,
                             const tdm_options* options, tdm_draft_head_info* info, void** head, char* err,
                             size_t err_size);                                                  // create.cpp
tdm_status qwen35_mtp_load(void* head, tdm_loader* loader, char* err, size_t err_size);        // load.cpp
tdm_status qwen35_mtp_build_step(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err,  // forward.cpp
                                 size_t err_size);
void qwen35_mtp_destroy(void* head);                                                            // create.cpp

}  // namespace qwen
