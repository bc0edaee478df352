/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/qwen35_reference.h: an independent plain C++ reference of the Qwen3.5 / 3.6
// forward pass (dense qwen35 and MoE qwen35moe) and of its built-in MTP head, written from
// docs/models/qwen35.md and docs/models/common.md (never from GPU code). It reads a GGUF file or an HF
// directory through ModelSource and applies each layout's conventions itself: "+1" norms and
// grouped GDN value heads for HF, baked norms and tiled heads for GGUF, A = -exp(A_log) for HF.
// Weights are decoded with dequantize_row (quantized weights count at their exact value) and the
// ops of reference.h / gdn_reference.h accumulate in double.
// Not here: anything fast (the 0.8b preset takes seconds per token), batching of sequences,
// sampling other than greedy, vision.
//
//   auto ref = TDM_TRY(Qwen35Reference::open(path));
//   Qwen35Output out = ref.forward(tokens);          // logits, post- and pre-norm hidden states
//   Qwen35Cache cache;                               // or continue token by token:
//   out = ref.forward(prompt, cache); out = ref.forward(one_token, cache);
//   Qwen35MtpCache mtp;                              // MTP head (docs/models/qwen35.md §4):
//   ref.mtp_prefill(prompt, out.hidden, mtp);        // pairs (h_i, x_{i+1}) at position i + 1
//   std::vector<int32_t> drafts = ref.mtp_draft(next, last_hidden, n_prompt, 3, mtp);
//
// Per trunk layer (x is the residual stream [n][n_embd]):
//   h = norm(x, attn_norm);  x += GDN(h) (linear layers) or GatedAttention(h) (every 4th)
//   x += FFN(norm(x, post_attention_norm))      (SwiGLU, or MoE + sigmoid-gated shared expert)
// hidden = norm(x, output_norm); logits = hidden W^T (W = output, or token_embd when tied).
// GatedAttention: q|gate interleaved per head in attn_q; q, k per-head "+1" RMSNorm; NeoX RoPE on
// the first n_rot dims with interleaved M-RoPE sections (text: t = h = w = p); softmax(q k^T /
// sqrt(D)) v over the causal window; out = o_proj(attn * sigmoid(gate)).
#pragma once

#include "common/dtype.h"
#include "common/error.h"
#include "formats/model_source.h"
#include "support/gdn_reference.h"
#include "support/reference.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tdm::ref {

struct Qwen35Hparams {
    int64_t n_vocab = 0;
    int64_t n_embd = 0;
    int64_t n_layer = 0;  // trunk layers (the MTP layer excluded)
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;
    int64_t n_rot = 0;                      // rotated dims of each head
    std::array<int, 4> mrope_sections{};    // (t, h, w, e) frequency slots
    double rope_theta = 0.0;
    float rms_eps = 0.0f;
    int64_t n_ff = 0;                       // dense MLP (0 for MoE)
    int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
    int64_t gdn_n_k_heads = 0, gdn_n_v_heads = 0, gdn_d_k = 0, gdn_d_v = 0, gdn_conv_kernel = 0;
    std::vector<bool> recurrent;            // per trunk layer: GDN (true) or full attention
    bool tied = false;
    bool has_mtp = false;
    // Conventions of the file (the reference reads them from the format, never from the values).
    GdnHeadOrder head_order = GdnHeadOrder::tiled;  // tiled for GGUF, grouped for HF
    bool one_plus_norms = false;                    // HF: norm weights are w with y = rms(x) (1 + w)
};

struct Qwen35RefOptions {
    bool f16_kv = false;     // round K (after RoPE) and V through f16, as an f16 KV cache stores them
    bool f32_state = false;  // round the GDN state to f32 after every token, as a runtime keeps it
    // Replaces the file's GDN value-head order: a deliberately wrong reference for tests.
    std::optional<GdnHeadOrder> head_order_override;
};

// Named intermediates of one call, keyed "<name>-<layer>" with llama.cpp's callback names
// (qwen35.cpp): "attn_norm-0", "linear_attn_out-0" / "attn_output-3", "attn_residual-0",
// "attn_post_norm-0", "ffn_out-0", "l_out-0", and "inp_embd", "result_norm", "result_output".
using Qwen35Trace = std::map<std::string, Floats>;

// The state of one sequence after the positions processed so far: per layer K/V (attention
// layers, post-RoPE K) or the GDN conv and recurrent state. Continuing with it gives logits
// bit-identical to a single call over the whole sequence. Copy it to snapshot (rollback).
struct Qwen35Cache {
    std::vector<Floats> k, v;       // [layer] -> [n_past][n_head_kv][head_dim]; empty for GDN layers
    std::vector<GdnState> gdn;      // [layer]; empty for attention layers
    int64_t n_past = 0;
};

struct Qwen35Output {
    Floats logits;           // [n][n_vocab]
    Floats hidden;           // [n][n_embd] post-final-norm (LM-head input; the upstream MTP input)
    Floats hidden_pre_norm;  // [n][n_embd] residual stream before output_norm (mlx-lm's MTP input)
};

// The MTP layer's own KV cache: one entry per (hidden, token) pair it has processed, at the
// position it was given. Entries of rejected drafts are dropped with truncate().
struct Qwen35MtpCache {
    Floats k, v;               // [n][n_head_kv][head_dim]
    std::vector<int32_t> pos;  // [n]
    int64_t size() const { return int64_t(pos.size()); }
    void truncate(int64_t n);  // keep the first n entries
};

struct Qwen35MtpOutput {
    Floats logits;  // [n][n_vocab]
    Floats hidden;  // [n][n_embd] post-mtp.norm (shared_head_norm): the next step's hidden input
};

class Qwen35Reference {
public:
    // Errors: not a Qwen3.5 model (general.architecture qwen35/qwen35moe, model_type
    // qwen3_5[_moe][_text]), missing hyper-parameters or tensors, shapes that do not match the
    // hyper-parameters, types dequantize_row cannot decode, more than one MTP layer.
    static Result<Qwen35Reference> open(const std::string& path, Qwen35RefOptions opts = {});
    static Result<Qwen35Reference> load(std::unique_ptr<ModelSource> src, Qwen35RefOptions opts = {});

    const Qwen35Hparams& hparams() const { return hp_; }
    const ModelSource& source() const { return *src_; }

    // Trunk forward over `tokens` at positions 0.. (fresh) or cache.n_past.. (continuing;
    // the cache is extended). Token ids must be in range (asserted).
    Qwen35Output forward(std::span<const int32_t> tokens, Qwen35Trace* trace = nullptr) const;
    Qwen35Output forward(std::span<const int32_t> tokens, Qwen35Cache& cache, Qwen35Trace* trace = nullptr) const;

    // Greedy: n new tokens, each the argmax (lowest id on ties) of the previous position.
    std::vector<int32_t> generate(std::span<const int32_t> prompt, int n) const;

    // ---- MTP head (docs/models/qwen35.md §4); asserts has_mtp --------------------------------------------
    // One MTP pass over pairs (tokens[i], hidden rows i) at positions[i]: e = embed(t);
    // z = eh_proj [enorm(e) | hnorm(h)]; one gated-attention layer over the MTP cache (extended
    // by these entries, causal by position) and its FFN; out = shared_head_norm(z); logits =
    // LM head(out). hidden is [n][n_embd].
    Qwen35MtpOutput mtp_forward(std::span<const int32_t> tokens, std::span<const float> hidden,
                                std::span<const int32_t> positions, Qwen35MtpCache& cache) const;
    Qwen35MtpOutput mtp_step(int32_t token, std::span<const float> hidden, int32_t position,
                             Qwen35MtpCache& cache) const;
    // KV prefill over a prompt x_0..x_{n-1} whose trunk hidden rows are `trunk_hidden` [n][n_embd]:
    // pairs (h_i, x_{i+1}) at MTP position i + 1 for i = 0..n-2 (llama.cpp's convention).
    // The first draft then comes from mtp_step(x_n, h_{n-1}, n).
    Qwen35MtpOutput mtp_prefill(std::span<const int32_t> prompt, std::span<const float> trunk_hidden,
                                Qwen35MtpCache& cache) const;
    // Greedy chain of k drafts: step j takes (d_{j-1}, hidden out of step j-1) at position + j
    // (d_{-1} = token, hidden of step -1 = `hidden`). Appends k entries to the cache.
    std::vector<int32_t> mtp_draft(int32_t token, std::span<const float> hidden, int32_t position, int k,
                                   Qwen35MtpCache& cache) const;

private:
    struct Matrix {
        DType type = DType::F32;
        std::span<const uint8_t> bytes;  // in the source's mapping
        int64_t rows = 0, cols = 0;
    };
    struct Norm {
        Floats w;
        bool one_plus = false;  // apply 1 + w
    };
    struct Expert {
        Matrix gate, up, down;  // [n_ff_exp][n_embd] x2, [n_embd][n_ff_exp]
    };
    struct Layer {
        bool recurrent = false;
        Norm attn_norm, post_norm;
        // full attention
        Matrix wq, wk, wv, wo;  // [n_head*2*D][E], [n_head_kv*D][E] x2, [E][n_head*D]
        Norm q_norm, k_norm;
        // gated delta net
        Matrix qkv, gate_z, beta, alpha, out;  // [conv_dim][E], [value_dim][E], [Nv][E] x2, [E][value_dim]
        GdnWeights gdn;
        // FFN: dense or MoE
        Matrix ffn_gate, ffn_up, ffn_down;
        Matrix router;                 // [n_expert][E]
        std::vector<Expert> experts;
        Matrix sh_gate, sh_up, sh_down, sh_router;  // shared expert; sh_router [1][E]
        // MTP block only
        Matrix eh_proj;                // [E][2E]
        Norm enorm, hnorm, head_norm;
    };
    friend class Qwen35Loader;

    Qwen35Reference() = default;
    Qwen35Output run(std::span<const int32_t> tokens, Qwen35Cache* cache, Qwen35Trace* trace) const;
    Floats attention_block(const Layer& L, std::span<const float> h, std::span<const int32_t> pos, Floats& kc,
                           Floats& vc, std::span<const int32_t> k_pos) const;
    Floats ffn_block(const Layer& L, std::span<const float> h) const;
    Floats norm(std::span<const float> x, int64_t n_cols, const Norm& w) const;
    GdnDims gdn_dims() const;

    std::unique_ptr<ModelSource> src_;
    Qwen35RefOptions opts_;
    Qwen35Hparams hp_;
    Matrix tok_embd_, output_;
    Norm output_norm_;
    std::vector<Layer> layers_;  // trunk layers, then the MTP layer if present
};

}  // namespace tdm::ref
