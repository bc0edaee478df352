/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/qwen3_reference.h: an independent plain C++ reference of the Qwen3 dense forward
// pass, written from docs/models/common.md (RMSNorm, NeoX RoPE, GQA, SwiGLU) and HF's Qwen3 modelling
// (q/k RMSNorm per head before RoPE), never from GPU code. It reads a GGUF file or an HF
// directory through ModelSource, decodes weights with tdm::dequantize_row (quantized weights
// count at their exact stored value), and composes the double-accumulating ops of reference.h.
// Tests use it to check the Vulkan runtime's logits and generations on synthetic models.
// Not here: anything fast (a 0.6b forward takes seconds per token), batching across sequences,
// sampling other than greedy.
//
//   auto ref = TDM_TRY(Qwen3Reference::open(path));       // or ASSERT on .ok() in a test
//   ref::Floats logits = ref.forward(tokens);              // [n_tokens][n_vocab]
//   std::vector<int32_t> out = ref.generate(prompt, 16);   // greedy
//
// Per layer (x is the residual stream, [n_tokens][n_embd]):
//   h = rms_norm(x) * attn_norm
//   q = rope(rms_norm_per_head(h Wq^T) * q_norm), k = rope(rms_norm_per_head(h Wk^T) * k_norm),
//   v = h Wv^T                                             (optionally rounded through f16)
//   x = x + attention(q, k, v; causal, GQA, scale 1/sqrt(head_dim)) Wo^T
//   x = x + (silu(h2 Wgate^T) * (h2 Wup^T)) Wdown^T       with h2 = rms_norm(x) * ffn_norm
// logits = (rms_norm(x) * output_norm) W^T, W = output.weight, or token_embd when tied.
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

struct Qwen3Hparams {
    int64_t n_vocab = 0;  // rows of the token embedding
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;
    int64_t n_ff = 0;
    double rope_theta = 0.0;
    float rms_eps = 0.0f;
    bool tied = false;  // no output matrix in the file
};

struct Qwen3RefOptions {
    // Round K (after RoPE) and V through f16 before attention, as the runtime's f16 KV cache
    // stores them.
    bool f16_kv = false;
};

// Named intermediates of one forward pass, keyed "<name>-<layer>" with llama.cpp's callback
// names (qwen3.cpp): "attn_norm-0", "Qcur-0", "Kcur-0" (after norm and RoPE), "Vcur-0",
// "kqv_out-0" (attention before Wo), "ffn_inp-0", "ffn_out-0", "l_out-0", and "inp_embd",
// "result_norm", "result_output" without a layer.
using Qwen3Trace = std::map<std::string, Floats>;

// K/V of the positions processed so far (post-RoPE K, optionally f16-rounded), per layer, so
// that generate() and tests can continue a sequence one token at a time. A step with the cache
// gives bit-identical logits to a full forward over the whole sequence: every row is reduced in
// the same order either way.
struct Qwen3Cache {
    std::vector<Floats> k, v;  // [layer] -> [n_past][n_head_kv][head_dim]
    int64_t n_past = 0;
};

class Qwen3Reference {
public:
    // Errors: not a qwen3 model (general.architecture / model_type), missing hyper-parameters
    // or tensors, shapes that do not match the hyper-parameters, tensor types dequantize_row
    // cannot decode.
    static Result<Qwen3Reference> open(const std::string& path, Qwen3RefOptions opts = {});
    static Result<Qwen3Reference> load(std::unique_ptr<ModelSource> src, Qwen3RefOptions opts = {});

    const Qwen3Hparams& hparams() const { return hp_; }
    const ModelSource& source() const { return *src_; }

    // Logits [tokens.size()][n_vocab] of tokens at positions pos0, pos0 + 1, ...; full causal
    // attention over this call's tokens (and the cache's, if given, which is then extended;
    // pos0 is then cache->n_past). Token ids must be in range (asserted).
    Floats forward(std::span<const int32_t> tokens, int64_t pos0 = 0, Qwen3Trace* trace = nullptr) const;
    Floats forward(std::span<const int32_t> tokens, Qwen3Cache& cache, Qwen3Trace* trace = nullptr) const;

    // Greedy: the prompt, then n tokens each the argmax (lowest id on ties) of the previous
    // position's logits. Returns only the n new tokens.
    std::vector<int32_t> generate(std::span<const int32_t> prompt, int n) const;

private:
    struct Matrix {
        DType type = DType::F32;
        std::span<const uint8_t> bytes;  // in the source's mapping
        int64_t rows = 0, cols = 0;
    };
    struct Layer {
        Floats attn_norm, q_norm, k_norm, ffn_norm;  // [n_embd], [head_dim], [head_dim], [n_embd]
        Matrix wq, wk, wv, wo;                       // [n_head*hd][n_embd], [n_head_kv*hd][n_embd] x2, [n_embd][n_head*hd]
        Matrix gate, up, down;                       // [n_ff][n_embd] x2, [n_embd][n_ff]
    };

    Qwen3Reference() = default;
    Floats run(std::span<const int32_t> tokens, int64_t pos0, Qwen3Cache* cache, Qwen3Trace* trace) const;

    std::unique_ptr<ModelSource> src_;
    Qwen3RefOptions opts_;
    Qwen3Hparams hp_;
    Matrix tok_embd_;  // [n_vocab][n_embd]
    Matrix output_;    // [n_vocab][n_embd]; = tok_embd_ when tied
    Floats output_norm_;
    std::vector<Layer> layers_;
};

}  // namespace tdm::ref
