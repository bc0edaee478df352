/* SPDX-License-Identifier: Apache-2.0 */
// plugins/dflash/synth/dflash_synth.h: synthetic DFlash heads whose shapes match a given
// target (GGUF or HF directory), in z-lab's HF layout (config.json with dflash_config,
// model.safetensors with layers.N.*, fc, hidden_norm, norm) or llama.cpp's GGUF architecture
// "dflash" (blk.N.*, fc, enc.output_norm, output_norm), the same weights in both; no
// embedding, no LM head (the target's); and the request that `tandem synth --arch dflash`
// makes.
//
// Options of a request:
//   target      the target model whose shapes the head follows (required)
//   format      hf (default: a directory) or gguf (a file)
//   type        f32, f16, bf16 (the HF default); GGUF also q8_0 (its default) and the other
//               GGUF types the synthesizers write
//   seed        seed of the weights (1)
//   layers      draft layers (2)
//   block-size  rows per block (16)
// Not here: the C entry point (synthesizer.cpp).
#pragma once

#include "common/dtype.h"
#include "common/error.h"
#include "synth/synth_weights.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tdm::synth {

inline constexpr std::string_view kDflashSynthArch = "dflash";

struct DflashShape {
    int32_t n_layer = 2;  // draft layers
    int32_t n_embd = 0;   // the target's
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    int32_t n_ff = 0;
    int32_t n_vocab = 0;          // the target's
    int32_t n_target_layers = 0;  // the target's layer count
    int32_t block_size = 16;
    int32_t mask_token = 0;       // the target's last id
    float rope_theta = 10000.0f;
    float rms_eps = 1e-6f;
    std::vector<int32_t> target_layers;  // HF layer ids (the head reads their outputs)
};

struct DflashSynthOptions {
    DType weight_type = DType::BF16;
    uint64_t seed = 1;
    int n_threads = 0;  // 0 = hardware_concurrency
};

// The head for the target at `target` with `n_layer` draft layers and blocks of `block_size`:
// the target's width, heads, MLP width, RoPE base and vocabulary; the target layers z-lab's
// default spreads over it (one layer: L / 2; n: round(1 + i (L - 4) / (n - 1))).
Result<DflashShape> dflash_shape_for_target(const std::string& target, int32_t n_layer, int32_t block_size);

// The head's parameters (GGUF and HF names, shapes, value recipes).
std::vector<SynthParam> dflash_params(const DflashShape& s);

Status synth_dflash_hf(const std::string& dir, const DflashShape& s, const DflashSynthOptions& o);
Status synth_dflash_gguf(const std::string& path, const DflashShape& s, const DflashSynthOptions& o);

Result<std::string> synthesize_dflash_request(std::string_view arch, const std::string& output,
                                              const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace tdm::synth
