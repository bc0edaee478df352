/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/dflash/dflash_reference.h: an independent plain C++ reference of one DFlash
// draft block (docs/models/dflash.md §1-2), written from the math, never from the plugin's or
// the host's code. It reads the head (z-lab's HF directory or llama.cpp's GGUF) and the
// target's token embedding and LM head from the target's file through ModelSource, and computes each block from scratch: every
// context row (fc, hidden_norm) as keys and values only, the b block rows (the newest token,
// then the mask token) as queries over all context rows and the whole block, not causally.
// Loops and double sums; K and V rounded through f16 as the runtime's KV cache stores them.
// Not here: the target's forward pass (the taps are inputs), a cache, anything fast.
//
//   auto ref = TDM_TRY(DflashReference::open(head_path, target_path));
//   DflashBlock b = ref.block(newest_token, p, taps);  // taps[j]: the target's taps at j < p
#pragma once

#include "common/error.h"
#include "formats/model_source.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tdm::test {

struct DflashRefHparams {
    int64_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
    int64_t block_size = 0, mask_token = 0;
    double rope_theta = 10000.0, rms_eps = 1e-6;
    std::vector<int64_t> target_layers;  // HF layer ids: the head reads the output of each
};

struct DflashBlock {
    std::vector<int32_t> tokens;  // the b - 1 drafts (block rows 1 .. b-1)
    std::vector<float> margins;   // best minus second-best logit of each (how safe its argmax is)
};

class DflashReference {
public:
    static Result<DflashReference> open(const std::string& head_path, const std::string& target_path);

    const DflashRefHparams& hparams() const { return hp_; }
    // The block at position p whose row 0 holds `token`; taps[j] (j < p) holds the target's
    // states after the listed layers at position j, concatenated (n_taps * n_embd values).
    DflashBlock block(int32_t token, int32_t p, const std::vector<std::vector<float>>& taps) const;

private:
    struct Layer {
        std::vector<float> attn_norm, wq, wk, wv, wo, q_norm, k_norm, ffn_norm, gate, up, down;
    };
    std::unique_ptr<ModelSource> head_, target_;
    DflashRefHparams hp_;
    std::vector<float> embd_, output_, fc_, hidden_norm_, out_norm_;
    std::vector<Layer> layers_;
};

}  // namespace tdm::test
