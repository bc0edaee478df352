/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/eagle3/eagle3_reference.h: an independent plain C++ reference of the EAGLE-3
// draft head (docs/models/eagle3.md), written from the math (vLLM's llama_eagle3.py and
// llama.cpp's eagle3 graph as that document describes them), never from the plugin's code. It
// reads the head's GGUF file or HF directory, and the target's token embedding from the
// target's file, through ModelSource, and applies each layout's conventions itself: GGUF q/k
// rows (permuted by the converter) rotate adjacent pairs, HF rows NeoX pairs; GGUF d2t holds
// target ids, HF d2t offsets (target = j + d2t[j]); llama3 rope scaling from rope_freqs.weight
// (GGUF) or as HF computes it from rope_scaling. Loops, double sums, a K/V cache of its own.
// Not here: the target's forward pass (the taps are inputs), anything fast.
//
//   auto ref = TDM_TRY(Eagle3Reference::open(head_path, target_path));
//   Eagle3Step s = ref.step(token, pos, taps, true);       // a pair (taps at pos, token pos+1)
//   Eagle3Step t = ref.step(s.token, pos + 1, s.hidden, false);  // a chained step
//   ref.truncate(n);                                        // keep the first n cache rows
#pragma once

#include "common/error.h"
#include "formats/model_source.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tdm::test {

struct Eagle3RefHparams {
    int64_t n_embd = 0, n_embd_target = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
    int64_t n_vocab = 0, n_vocab_draft = 0, n_taps = 0;
    double rope_theta = 10000.0, rms_eps = 1e-6;
    bool hf = false;                    // NeoX pairs and d2t offsets; else adjacent pairs and ids
    bool norm_before_residual = false;  // the attention's residual is hidden_norm(g)
    std::vector<int64_t> target_layers;
};

struct Eagle3Step {
    std::vector<float> hidden;  // [n_embd]: the pre-norm state, the next step's g
    int32_t token = 0;          // the draft, as a target id
    float margin = 0.0f;        // best minus second-best draft logit (how safe the argmax is)
};

class Eagle3Reference {
public:
    // f16_kv: round K (after RoPE) and V through f16, as the runtime's KV cache stores them.
    static Result<Eagle3Reference> open(const std::string& head_path, const std::string& target_path,
                                        bool f16_kv = true);

    const Eagle3RefHparams& hparams() const { return hp_; }
    // One row at RoPE position `pos`: g = fc(taps) (from_taps: n_taps * n_embd_target values)
    // or the previous step's hidden (n_embd values); its K/V join the cache.
    Eagle3Step step(int32_t token, int32_t pos, std::span<const float> g_or_taps, bool from_taps);
    size_t cached() const { return k_cache_.size(); }
    void truncate(size_t n_rows);

private:
    std::unique_ptr<ModelSource> head_, target_;
    Eagle3RefHparams hp_;
    bool f16_kv_ = true;
    std::vector<float> embd_, fc_, attn_norm_, hidden_norm_, wq_, wk_, wv_, wo_, ffn_norm_, gate_, up_, down_;
    std::vector<float> out_norm_, output_;
    std::vector<int64_t> d2t_;     // target id of each draft id (already resolved)
    std::vector<double> divisor_;  // llama3 rope scaling: one per rotated pair (else all 1)
    std::vector<std::vector<double>> k_cache_, v_cache_;
    std::vector<int32_t> pos_cache_;
};

}  // namespace tdm::test
