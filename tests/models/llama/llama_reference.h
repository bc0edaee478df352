/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/llama/llama_reference.h: an independent plain C++ reference of the Llama 3.x
// forward pass, written from the math (docs/models/common.md: RMSNorm, RoPE, GQA, SwiGLU; HF
// LlamaForCausalLM; llama3 rope scaling as HF's _compute_llama3_parameters describes it),
// never from the plugin's code. It reads a GGUF file or an HF directory through ModelSource and
// applies each layout's convention itself: GGUF q/k rows (permuted by the converter) rotate
// adjacent pairs (2i, 2i+1) with rope_freqs.weight as divisors; HF rows rotate NeoX pairs
// (i, i + D/2) with divisors computed from config.json's rope_scaling. Loops, double sums.
// Not here: anything fast, batching, a KV cache (each call runs the whole sequence).
//
//   auto ref = TDM_TRY(LlamaReference::open(path));
//   std::vector<float> logits = ref.forward(tokens);   // [n_tokens][n_vocab]
#pragma once

#include "common/error.h"
#include "formats/model_source.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tdm::test {

struct LlamaRefHparams {
    int64_t n_vocab = 0, n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
    double rope_theta = 10000.0;
    double rms_eps = 1e-5;
    bool tied = false;
    bool hf = false;                   // NeoX pairs; else adjacent
    std::vector<double> rope_divisor;  // one per pair; all 1 without scaling
};

class LlamaReference {
public:
    // f16_kv: round K (after RoPE) and V through f16, as the runtime's KV cache stores them.
    static Result<LlamaReference> open(const std::string& path, bool f16_kv = false);

    const LlamaRefHparams& hparams() const { return hp_; }
    // Logits [tokens.size()][n_vocab] of tokens at positions 0, 1, ... (causal).
    std::vector<float> forward(const std::vector<int32_t>& tokens) const;

private:
    struct Layer {
        std::vector<float> attn_norm, wq, wk, wv, wo, ffn_norm, gate, up, down;
    };
    std::unique_ptr<ModelSource> src_;
    LlamaRefHparams hp_;
    bool f16_kv_ = false;
    std::vector<float> embd_, out_norm_, output_;
    std::vector<Layer> layers_;
};

}  // namespace tdm::test
