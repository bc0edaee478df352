/* SPDX-License-Identifier: Apache-2.0 */
// plugins/qwen-nextn/synth/qwen3_params.h: the parameter table of a synthetic Qwen3 model (GGUF and
// HF names, shapes, value recipes) and the recipe settings its options give, shared by the GGUF and
// HF writers (qwen3_synth.cpp) so that both hold the same values.
// Not here: the value recipes themselves (synth_weights.h), file layouts (qwen3_synth.cpp).
#pragma once

#include "qwen-nextn/synth/qwen3_synth.h"
#include "synth/synth_weights.h"

#include <cstdint>
#include <vector>

namespace tdm::synth {

// In GGUF file order: token_embd, then per layer attn_norm, attn_q, attn_q_norm, attn_k,
// attn_k_norm, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, then output_norm and
// (untied) output. Matrices have std 1/sqrt(fan_in); token_embd and output 2/sqrt(n_embd).
// residual_decay: Qwen3SynthOptions::residual_decay.
std::vector<SynthParam> qwen3_params(const Qwen3Shape& shape, bool tied, float residual_decay = 1.0f);

// The recipe settings of `opts` (seed, repeating, perturbation, rounding, threads); n_text: text
// ids of the model's vocabulary (synth_vocab_layout).
WeightRecipe qwen3_recipe(const Qwen3SynthOptions& opts, int32_t n_text);

}  // namespace tdm::synth
