/* SPDX-License-Identifier: Apache-2.0 */
// plugins/gemma4/synth/gemma4_params.h: the parameter table of a synthetic Gemma 4 model (GGUF and
// HF names, shapes in both layouts, value recipes) and the recipe settings its options give, shared
// by the GGUF and HF writers (gemma4_synth.cpp) so that both hold the same values.
// Not here: the value recipes themselves (synth_weights.h), rope_freqs (GGUF only, not a weight
// of the checkpoint: gemma4_rope_freqs), file layouts (gemma4_synth.cpp).
#pragma once

#include "gemma4/synth/gemma4_synth.h"
#include "synth/synth_weights.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tdm {
class GgufWriter;
class SafetensorsWriter;
}  // namespace tdm

namespace tdm::synth {

// One tensor. Values are generated as param.rows x param.cols, row-major (the HF memory order);
// the 3-D expert tensors are rows = n_expert * (rows of one expert).
struct Gemma4Param {
    SynthParam param;              // gguf_name / hf_name (full, with the HF prefix), recipe
    std::vector<int64_t> gguf_ne;  // ggml order, innermost first
    std::vector<int64_t> hf_shape; // outermost first
    bool in_gguf = true;           // false: KV-shared layers' k_proj / v_proj (HF only)
    bool gguf_f32 = false;         // kept F32 in GGUF whatever the weight type (norms, scales,
                                   // layer_output_scale, the router matrix ffn_gate_inp)
};

// The prefix of every HF tensor name (the text decoder inside the multimodal wrapper).
inline constexpr std::string_view kGemma4HfPrefix = "model.language_model.";

// In GGUF file order: token_embd, the per-layer-embedding globals (PLE shapes only), then per
// layer attention, dense MLP, MoE block (MoE shapes), per-layer input (PLE shapes),
// layer_output_scale; last output_norm. Tied LM head: there is no output / lm_head tensor.
std::vector<Gemma4Param> gemma4_params(const Gemma4Shape& shape);

// The recipe settings of `opts` (seed, rounding, threads).
WeightRecipe gemma4_recipe(const Gemma4SynthOptions& opts);

// The tensors of a GGUF file (the target's or its assistant's): rope_freqs of `rope_shape`
// (the converter writes it first), then every parameter in GGUF, in `weight_type` (F32 where
// gguf_f32). `path` names the file in errors.
Status add_gemma4_gguf_tensors(GgufWriter& w, const Gemma4Shape& rope_shape, const std::vector<Gemma4Param>& params,
                               const WeightRecipe& recipe, DType weight_type, const std::string& path);
// The tensors of an HF checkpoint: every parameter in `weight_type` (torch_dtype), produced
// while the file is written, one at a time, so a large checkpoint never sits in memory.
Status add_gemma4_hf_tensors(SafetensorsWriter& st, const std::vector<Gemma4Param>& params, const WeightRecipe& recipe,
                             DType weight_type);

}  // namespace tdm::synth
