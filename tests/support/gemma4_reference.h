/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/gemma4_reference.h: an independent plain C++ reference of the Gemma 4 text
// decoder (E2B/E4B with per-layer embeddings and KV-shared layers, 31B dense with K=V full
// layers, 26B-A4B with the parallel MoE block), written from docs/models/gemma4.md §2 and
// docs/models/common.md (never from GPU or plugin code). It reads a GGUF file (arch gemma4) or an HF
// directory (model_type gemma4 with text_config, or gemma4_text) through ModelSource, decodes
// weights with tdm::dequantize_row and composes the double-accumulating ops of reference.h.
// Tests use it to check the Vulkan runtime's logits, generations and (later) the assistant
// drafter's inputs on synthetic models.
// Not here: anything fast, vision/audio soft tokens and their bidirectional masks, the
// assistant drafter itself (gemma4_assistant_reference.h), sampling other than greedy.
//
//   auto ref = TDM_TRY(Gemma4Reference::open(path));
//   ref::Floats logits = ref.forward(tokens);             // [n_tokens][n_vocab], softcapped
//   Gemma4Cache cache;                                    // or token by token (bit-identical)
//   logits = ref.forward(prompt, cache); logits = ref.forward(one_token, cache);
//   Gemma4Output out = ref.run(tokens);                   // logits and post-norm hidden rows
//
// Per layer l (x is the residual stream [n][n_embd], D = head dim of the layer's type):
//   a = norm(x, attn_norm); q = rope_l(norm_per_head(a Wq^T, q_norm))
//   own K/V:  k_raw = a Wk^T; v_raw = a Wv^T (K=V layers: v_raw = k_raw)
//             K = rope_l(norm_per_head(k_raw, k_norm)); V = rms_per_head(v_raw) (no weight)
//   KV-shared layers use K/V of kv_source[l] (the last own-KV layer of the same type)
//   x = x + norm(attention(q, K, V; scale 1, causal, sliding: q - k < W) Wo^T, post_attention_norm)
//   dense: x = x + norm(GeGLU(norm(x, ffn_norm)), post_ffw_norm)
//   MoE:   f1 = norm(GeGLU(norm(res, ffn_norm)), post_ffw_norm_1)
//          r = rms(res) * router_scale * n_embd^-0.5; p = softmax(r Wr^T); top-k, renormalise,
//          times per_expert_scale[e]; f2 = norm(sum_j w_j GeGLU_e(norm(res, pre_ffw_norm_2)),
//          post_ffw_norm_2); x = res + norm(f1 + f2, post_ffw_norm)
//   PLE:   x = x + norm(proj(gelu_tanh(inp_gate(x)) * ple[l]), post_norm)
//   x = x * layer_output_scale
// hidden = norm(x, output_norm); logits = 30 tanh((hidden E^T) / 30) with E = token_embd (tied).
// Embedding: E[ids] * sqrt(n_embd), the scale rounded to the table's stored dtype for HF
// (bf16(sqrt(5376)) = 73.5), fp32 sqrtf for GGUF (llama.cpp); the PLE table the same with sqrt(P).
#pragma once

#include "common/dtype.h"
#include "common/error.h"
#include "formats/model_source.h"
#include "support/reference.h"

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tdm::ref {

struct Gemma4Hparams {
    int64_t n_vocab = 0;  // rows of token_embd
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t head_dim_swa = 0;   // sliding layers
    int64_t head_dim_full = 0;  // full layers (global_head_dim)
    // Per layer:
    std::vector<bool> sliding;        // true = sliding-window attention
    std::vector<int64_t> n_head_kv;   // KV heads of the layer (of its source when KV-shared)
    std::vector<int64_t> n_ff;        // dense GeGLU width (doubled on KV-shared layers if double-wide)
    std::vector<bool> k_eq_v;         // full layer without a V projection: v_raw = k_raw
    std::vector<int64_t> kv_source;   // layer whose K/V this layer attends over (itself if not shared)
    int64_t n_kv_shared = 0;          // the last n_kv_shared layers reuse K/V
    int64_t window = 0;               // sliding_window W: a key at k is visible from q iff q - k < W
    double rope_theta_swa = 0.0;      // NeoX over the full sliding head
    double rope_theta_full = 0.0;     // proportional: NeoX over the full head, slots >= n_rot_full fixed
    int64_t n_rot_full = 0;           // rotated frequency slots on full layers (int(factor * D / 2))
    float rms_eps = 0.0f;
    float softcap = 0.0f;             // final_logit_softcapping; 0 = none
    int64_t n_embd_per_layer = 0;     // PLE width P (0: no per-layer embeddings)
    int64_t n_vocab_per_layer = 0;    // rows of the PLE token table
    int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;  // MoE (0: dense)
    float embd_scale = 0.0f;          // applied to token_embd rows (see gemma4_embed_scale)
    float ple_scale = 0.0f;           // applied to the PLE table rows
};

struct Gemma4RefOptions {
    // Round K (after norm and RoPE) and V (after v_norm) through f16 before they are stored, as
    // the runtime's f16 KV cache does.
    bool f16_kv = false;
};

// sqrt(n) as a file applies it to an embedding table stored as `table`: fp32 sqrtf for GGUF
// (llama.cpp), rounded to the table's dtype for HF safetensors (transformers casts the scale to
// the weight dtype: bf16 sqrt(5376) = 73.5, f32 gives 73.3212).
float gemma4_embed_scale(int64_t n, SourceFormat format, DType table);

// Named intermediates of one call, keyed "<name>-<layer>" (llama.cpp callback style):
// "attn_norm-0", "Qcur-0" (normed, roped), "Kcur-0" / "Vcur-0" (as stored; absent on KV-shared
// layers), "kqv_out-0" (attention before Wo), "attn_out-0" (after post_attention_norm),
// "ffn_inp-0" (stream after attention), "ffn_out-0" (after post_ffw_norm), "moe_out-0" (f2 after
// post_ffw_norm_2, MoE only), "pe_out-0" (PLE branch after post_norm, PLE only), "l_out-0"
// (after layer_output_scale); and "inp_embd" (scaled), "inp_per_layer" ([n][n_layer * P]),
// "result_norm", "result_output" (softcapped logits).
using Gemma4Trace = std::map<std::string, Floats>;

// K/V of the positions processed so far, per layer with its own K/V (KV-shared layers leave
// theirs empty and read kv_source's). All positions are kept, also on sliding layers (the window
// is a mask). Continuing with it gives logits bit-identical to one call over the whole sequence.
// k[kv_source[l]] / v[kv_source[l]] are the shared K/V the assistant drafter reads.
struct Gemma4Cache {
    std::vector<Floats> k, v;  // [layer] -> [n_past][n_head_kv][head_dim]
    int64_t n_past = 0;
};

struct Gemma4Output {
    Floats logits;  // [n][n_vocab], after the final softcap
    Floats hidden;  // [n][n_embd], post final norm (the LM-head input; the drafter's hidden input)
};

class Gemma4Reference {
public:
    // Errors (each naming the file and the problem): not gemma4 (general.architecture /
    // model_type), missing keys or tensors, a sliding_window_pattern / layer_types of the wrong
    // length, per-layer arrays of the wrong length, a PLE table of the wrong shape, shapes that
    // do not match the hyper-parameters, a KV-shared layer with no earlier layer of its type,
    // tensor types dequantize_row cannot decode.
    static Result<Gemma4Reference> open(const std::string& path, Gemma4RefOptions opts = {});
    static Result<Gemma4Reference> load(std::unique_ptr<ModelSource> src, Gemma4RefOptions opts = {});

    const Gemma4Hparams& hparams() const { return hp_; }
    const ModelSource& source() const { return *src_; }

    // Logits [tokens.size()][n_vocab] at positions 0.. (fresh) or cache.n_past.. (continuing; the
    // cache is extended). Token ids must be in range (asserted).
    Floats forward(std::span<const int32_t> tokens, Gemma4Trace* trace = nullptr) const;
    Floats forward(std::span<const int32_t> tokens, Gemma4Cache& cache, Gemma4Trace* trace = nullptr) const;
    // The same with the post-norm hidden rows; cache may be null (fresh sequence).
    Gemma4Output run(std::span<const int32_t> tokens, Gemma4Cache* cache = nullptr,
                     Gemma4Trace* trace = nullptr) const;

    // Greedy: n new tokens, each the argmax (lowest id on ties) of the previous position.
    std::vector<int32_t> generate(std::span<const int32_t> prompt, int n) const;

    // For the assistant drafter (gemma4_assistant_reference.h), which reads the target's tables:
    // the scaled embedding rows E[ids] * embd_scale [n][n_embd] (run()'s "inp_embd"), and the
    // layer whose cache K/V the drafter's layers of a type attend over: the last layer with its
    // own K/V of that type (docs/models/gemma4.md §3.3 "Which K/V"); -1 if there is none.
    Floats embed(std::span<const int32_t> tokens) const;
    int64_t shared_kv_layer(bool sliding) const;

private:
    struct Matrix {
        DType type = DType::F32;
        std::span<const uint8_t> bytes;  // in the source's mapping
        int64_t rows = 0, cols = 0;
    };
    struct Layer {
        Floats attn_norm, post_attention_norm;  // [n_embd]
        Floats q_norm, k_norm;                  // [D]
        Matrix wq, wo;                          // [n_head*D][n_embd], [n_embd][n_head*D]
        Matrix wk, wv;                          // [n_head_kv*D][n_embd]; empty on KV-shared layers, wv on K=V
        Floats ffn_norm, post_ffw_norm;         // [n_embd]
        Matrix gate, up, down;                  // [n_ff][n_embd] x2, [n_embd][n_ff]
        float out_scale = 1.0f;                 // layer_output_scale
        // MoE
        Matrix router;                          // [n_expert][n_embd]
        Floats router_scale, per_expert_scale;  // [n_embd], [n_expert]
        std::vector<Matrix> exp_gate_up;        // per expert [2*n_ff_exp][n_embd], gate rows first
        std::vector<Matrix> exp_down;           // per expert [n_embd][n_ff_exp]
        Floats pre_ffw_norm_2, post_ffw_norm_1, post_ffw_norm_2;  // [n_embd]
        // PLE
        Matrix inp_gate, proj;                  // [P][n_embd], [n_embd][P]
        Floats post_norm;                       // [n_embd]
    };

    Gemma4Reference() = default;
    Floats per_layer_inputs(std::span<const int32_t> tokens, std::span<const float> x) const;
    Floats attention_block(int64_t il, std::span<const float> a, std::span<const int32_t> pos, Gemma4Cache& cache,
                           Gemma4Trace* trace) const;
    Floats ffn_block(int64_t il, std::span<const float> x, Gemma4Trace* trace) const;
    Floats moe(const Layer& L, std::span<const float> res) const;

    std::unique_ptr<ModelSource> src_;
    Gemma4RefOptions opts_;
    Gemma4Hparams hp_;
    Matrix tok_embd_;         // [n_vocab][n_embd], also the LM head
    Floats output_norm_;      // [n_embd]
    Floats rope_factors_;     // [head_dim_full / 2] frequency divisors of full layers
    Matrix ple_tok_;          // [n_vocab_per_layer][n_layer * P]
    Matrix ple_proj_;         // [n_layer * P][n_embd]
    Floats ple_proj_norm_;    // [P]
    std::vector<Layer> layers_;
};

}  // namespace tdm::ref
