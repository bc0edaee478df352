/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/glm_reference.h: an independent plain C++ reference of the GLM-OCR text decoder
// and of its NextN/MTP layer, written from docs/models/glm-ocr.md (§2, §2.1, §2.3, §3) and the ops of
// reference.h, never from the runtime's code. It reads a GGUF file (arch glm4) or an HF directory
// (model_type glm_ocr) through ModelSource and applies each layout's RoPE convention itself: GGUF
// files with M-RoPE sections hold q/k rows permuted into NeoX order and rotate (i, i + R/2); HF
// files, and GGUF files without sections, rotate adjacent pairs (2i, 2i + 1).
// Weights are decoded with dequantize_row, so quantized weights count at their exact value.
// Not here: anything fast, vision (image embeddings and their 3-D positions), sampling other than
// greedy, more than one MTP layer.
//
//   auto ref = TDM_TRY(GlmReference::open(path));
//   GlmOutput out = ref.forward(tokens);             // logits and post-norm hidden rows
//   GlmCache cache;                                  // or continue chunk by chunk:
//   out = ref.forward(prompt, cache); out = ref.forward(one_token, cache);
//   GlmMtpCache mtp;                                 // MTP layer (docs/models/glm-ocr.md §3):
//   ref.mtp_prefill(prompt, out.hidden, mtp);        // pairs (h_i, x_{i+1}) at position i + 1
//   std::vector<int32_t> drafts = ref.mtp_draft(next, last_hidden, n_prompt, 3, mtp);
//
// Per trunk layer (the "sandwich" of §2; x is the residual stream [n][n_embd]):
//   a = norm(x, input_layernorm);  x += norm(o_proj(attention(rope(q(a)), rope(k(a)), v(a))),
//                                            post_self_attn_layernorm)
//   m = norm(x, post_attention_layernorm);  x += norm(down(silu(gate(m)) * up(m)), post_mlp_layernorm)
// hidden = norm(x, final norm); logits = hidden W^T (W = lm_head, or the embedding when tied).
// q, k and v add their biases when the file has them (GLM-4-0414, GLM-4 chat: docs/models/glm4.md).
#pragma once

#include "common/error.h"
#include "formats/model_source.h"
#include "support/reference.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tdm::ref {

struct GlmHparams {
    int64_t n_vocab = 0;
    int64_t n_embd = 0;
    int64_t n_layer = 0;  // trunk layers (the MTP layer excluded)
    int64_t n_nextn = 0;  // MTP layers stored after the trunk (0 or 1)
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;
    int64_t n_ff = 0;     // gate_up_proj has 2 * n_ff rows
    int64_t n_rot = 0;    // rotated dims of each head
    double rope_theta = 0.0;
    float rms_eps = 0.0f;
    bool mrope = false;                 // the file has M-RoPE sections (contiguous, §2.1)
    std::array<int, 4> sections{};      // (t, h, w, e) frequency slots
    RopePairing pairing = RopePairing::Adjacent;  // of the file's q/k row order
    bool tied = false;
};

struct GlmRefOptions {
    bool f16_kv = false;  // round K (after RoPE) and V through f16, as an f16 KV cache stores them
    // Replaces the file's RoPE pairing: a deliberately wrong reference for tests.
    std::optional<RopePairing> pairing_override;
};

// Per trunk layer the post-RoPE K and the V of every position processed so far. Continuing with
// it gives the logits a single call over the whole sequence gives. Copy it to snapshot.
struct GlmCache {
    std::vector<Floats> k, v;  // [layer] -> [n_past][n_head_kv][head_dim]
    int64_t n_past = 0;
};

struct GlmOutput {
    Floats logits;  // [n][n_vocab]
    Floats hidden;  // [n][n_embd] post-final-norm (the MTP layer's hidden input)
};

// The MTP layer's own KV cache: one entry per (hidden, token) pair it has processed, at the
// position it was given. Entries of rejected drafts are dropped with truncate().
struct GlmMtpCache {
    Floats k, v;               // [n][n_head_kv][head_dim]
    std::vector<int32_t> pos;  // [n]
    int64_t size() const { return int64_t(pos.size()); }
    void truncate(int64_t n);  // keep the first n entries
};

struct GlmMtpOutput {
    Floats logits;  // [n][n_vocab]
    // [n][n_embd] the block output BEFORE shared_head.norm: the next chained step's hidden
    // input (§3.2; unlike Qwen3.5, whose chained hidden is post-norm).
    Floats hidden;
};

class GlmReference {
public:
    // Errors: not a GLM-OCR text model (general.architecture glm4, model_type glm_ocr or
    // glm_ocr_text), missing hyper-parameters or tensors, shapes that do not match them, types
    // dequantize_row cannot decode, more than one MTP layer.
    static Result<GlmReference> open(const std::string& path, GlmRefOptions opts = {});
    static Result<GlmReference> load(std::unique_ptr<ModelSource> src, GlmRefOptions opts = {});

    const GlmHparams& hparams() const { return hp_; }
    bool has_mtp() const { return hp_.n_nextn > 0; }

    // Trunk forward over text tokens at positions 0.. (fresh) or cache.n_past.. (continuing; the
    // cache is extended). Each token's 3-D position is (p, p, p). Ids must be in range (asserted).
    GlmOutput forward(std::span<const int32_t> tokens) const;
    GlmOutput forward(std::span<const int32_t> tokens, GlmCache& cache) const;

    // A fresh forward where the rows `rows[i]` (non-null: n_embd floats, an image's row) replace
    // token i's embedding and token i sits at the rotary position (t, h, w) = thw[3i..3i+2]
    // (the multimodal rule of §2.2, computed by the caller); attention stays causal by index.
    GlmOutput forward_embedded(std::span<const int32_t> tokens, std::span<const float* const> rows,
                               std::span<const int32_t> thw) const;
    // Greedy: n new tokens, each the argmax (lowest id on ties) of the previous position.
    std::vector<int32_t> generate(std::span<const int32_t> prompt, int n) const;

    // ---- MTP layer (§3); asserts has_mtp ----------------------------------------------------
    // One pass over pairs (tokens[i], hidden rows i) at positions[i]: e = embed(t);
    // z = eh_proj [enorm(e) | hnorm(h)]; one sandwich block over the MTP cache (extended by these
    // entries, causal by position); logits = head(shared_head.norm(z)). hidden is [n][n_embd].
    // No position-0 masking of e: with the p + 1 convention no real pair sits at position 0.
    GlmMtpOutput mtp_forward(std::span<const int32_t> tokens, std::span<const float> hidden,
                             std::span<const int32_t> positions, GlmMtpCache& cache) const;
    // KV prefill over a prompt x_0..x_{n-1} whose trunk hidden rows are `trunk_hidden` [n][n_embd]:
    // pairs (h_i, x_{i+1}) at position i + 1 for i = 0..n-2. The first draft then comes from
    // (x_n, h_{n-1}) at position n.
    GlmMtpOutput mtp_prefill(std::span<const int32_t> prompt, std::span<const float> trunk_hidden,
                             GlmMtpCache& cache) const;
    // Greedy chain of k drafts: step j takes (d_{j-1}, hidden out of step j-1) at position + j,
    // with d_{-1} = token and the hidden of step -1 = `hidden`; the chained hidden is the pre-norm
    // block output. Appends k entries to the cache.
    std::vector<int32_t> mtp_draft(int32_t token, std::span<const float> hidden, int32_t position, int k,
                                   GlmMtpCache& cache) const;

private:
    struct Matrix {
        DType type = DType::F32;
        std::span<const uint8_t> bytes;  // in the source's mapping
        int64_t rows = 0, cols = 0;
    };
    struct Layer {
        Floats attn_norm;      // input_layernorm
        Floats attn_out_norm;  // post_self_attn_layernorm: on the attention output
        Floats ffn_norm;       // post_attention_layernorm: the pre-MLP norm (§6.1)
        Floats ffn_out_norm;   // post_mlp_layernorm: on the MLP output
        Matrix wq, wk, wv, wo;
        Floats bq, bk, bv;      // q/k/v biases (GLM-4-0414, GLM-4 chat); empty when the file has none
        Matrix gate, up, down;  // gate and up are the two halves of the fused gate_up_proj
        // MTP layer only
        Matrix eh_proj;         // [E][2E]
        Floats enorm, hnorm, head_norm;
        Matrix embed, head;     // its own copies, or the trunk's
    };
    friend class GlmLoader;

    GlmReference() = default;
    GlmOutput run(std::span<const int32_t> tokens, GlmCache* cache) const;
    // thw: per row the rotary (t, h, w); empty: (p, p, p) with p = pos
    Floats block(const Layer& L, std::span<const float> x, std::span<const int32_t> pos, Floats& kc, Floats& vc,
                 std::span<const int32_t> k_pos, std::span<const int32_t> thw = {}) const;
    Floats norm(std::span<const float> x, const Floats& w) const;

    std::unique_ptr<ModelSource> src_;
    GlmRefOptions opts_;
    GlmHparams hp_;
    Matrix tok_embd_, output_;
    Floats output_norm_;
    std::vector<Layer> layers_;  // trunk layers, then the MTP layer if present
};

}  // namespace tdm::ref
