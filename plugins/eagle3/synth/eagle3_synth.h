/* SPDX-License-Identifier: Apache-2.0 */
// plugins/eagle3/synth/eagle3_synth.h: synthetic EAGLE-3 heads whose shapes match a given
// target (GGUF or HF directory): the head's shape read from the target, its parameters, its
// reduced draft vocabulary (d2t), and the two file layouts: llama.cpp's GGUF architecture
// "eagle3" (q/k permuted for adjacent-pair RoPE, d2t as absolute target ids) and the EAGLE
// authors' HF directory (LlamaForCausalLMEagle3: midlayer.*, d2t as offsets, t2d).
// The head has no token embedding of its own: it embeds with the target's table.
// Not here: option parsing (eagle3_request.cpp), the C entry point (synthesizer.cpp).
#pragma once

#include "common/dtype.h"
#include "common/error.h"
#include "synth/synth_weights.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tdm::synth {

// llama3 rope scaling (Llama 3.1/3.3 heads): rope_scaling in config.json, rope_freqs.weight in
// the GGUF (the divisors llama.cpp's converter computes).
struct Eagle3RopeScaling {
    float factor = 8.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    int32_t original_context = 8192;
};

struct Eagle3Shape {
    int32_t n_embd = 0;         // the head's width = the target's (it borrows the target's embedding)
    int32_t n_embd_target = 0;  // width of each tap
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    int32_t n_ff = 0;
    int32_t n_vocab = 0;        // the target's
    int32_t n_vocab_draft = 0;  // a multiple of 4, at most n_vocab
    float rope_theta = 10000.0f;
    float rms_eps = 1e-6f;
    std::vector<int32_t> target_layers;  // the target layers whose input the head reads
    std::optional<Eagle3RopeScaling> rope_scaling;
};

struct Eagle3SynthOptions {
    DType weight_type = DType::F32;
    uint64_t seed = 1;
    int n_threads = 0;  // 0 = hardware_concurrency
};

// The head for the target model at `target` (GGUF file or HF directory of an attention
// target): the target's width, heads, MLP width, RoPE base and vocabulary; the input of
// layers {2, L/2, L-3} (vLLM's default) for targets of 6 or more layers, else {0, L/2, L-1}
// without repeats; a draft vocabulary of `n_vocab_draft` ids (a multiple of 4 up to the
// target's vocabulary; published heads map about 32K), by default half the target's (rounded
// down to a multiple of 4).
Result<Eagle3Shape> eagle3_shape_for_target(const std::string& target,
                                            std::optional<int64_t> n_vocab_draft = std::nullopt);

// The GGUF's rope_freqs.weight: one divisor per rotated pair (all 1 without scaling).
std::vector<float> eagle3_rope_freqs(const Eagle3Shape& s);

// The target id of each draft id: n_vocab_draft distinct ids, ascending, from the seed.
std::vector<int64_t> eagle3_draft_ids(const Eagle3Shape& s, uint64_t seed);

// The head's parameters (GGUF and HF names, shapes, value recipes), in GGUF file order.
std::vector<SynthParam> eagle3_params(const Eagle3Shape& s);
WeightRecipe eagle3_recipe(const Eagle3SynthOptions& o);

// The GGUF row of HF row `hf_row` of q or k: llama.cpp's converter permutes each head's rows
// so that RoPE pairs adjacent elements.
int64_t eagle3_gguf_row(int64_t hf_row, int64_t head_dim);

Status synth_eagle3_gguf(const std::string& path, const Eagle3Shape& s, const Eagle3SynthOptions& o);
Status synth_eagle3_hf(const std::string& dir, const Eagle3Shape& s, const Eagle3SynthOptions& o);

}  // namespace tdm::synth
