/* SPDX-License-Identifier: Apache-2.0 */
// plugins/gemma4/synth/gemma4_assistant.h: synthetic Gemma 4 assistant drafters
// (docs/models/gemma4.md §3), each made for one target preset of gemma4_synth.h, written in the layouts
// real files have: a GGUF of arch "gemma4-assistant" with llama.cpp's tensor names and keys, and
// a Hugging Face directory of a Gemma4AssistantForCausalLM (config.json with a text_config,
// model.safetensors). Same weights in both, bit for bit where the types allow.
//
//   Gemma4AssistantShape a = TDM_TRY(gemma4_assistant_preset("e2b"));   // the target's preset name
//   Gemma4SynthOptions o;
//   o.weight_type = DType::BF16;
//   TDM_TRY(synth_gemma4_assistant_gguf("e2b-assistant.gguf", a, o));
//
// The assistant has no K/V projections and no tokenizer of its own: it reads the target's cache
// and embeds with the target's token table (the plugin reaches both through the target), so
// everything it shares with the target (vocabulary, head dims, KV heads, window, RoPE) is taken
// from the target's shape here, and the two always fit. Neither file carries a tokenizer; the
// target's serves both.
//
// Weight values: a pure function of (seed, GGUF tensor name, element index) as for the targets
// (synth_weights.h), from a stream salted apart from the targets', so an assistant written with
// the target's seed shares no values with it. Scales keep activations near unit size: the tied
// head token_embd and the centroids std 2/sqrt(Ha) (draft logits of std ~2, like the target's);
// pre_projection std 1/sqrt(2 Hb) over [target embedding * sqrt(Hb), target hidden]; other
// matrices 1/sqrt(fan_in); norms 1 +- 0.2; layer_output_scale 1 +- 0.5. The centroid-masked head's
// masked_embd_ordering is a permutation of the vocabulary drawn from the seed (integer ids, never
// quantized: I32 in GGUF, I64 in HF).
#pragma once

#include "gemma4/synth/gemma4_params.h"
#include "gemma4/synth/gemma4_synth.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::synth {

struct Gemma4AssistantShape {
    // The target it drafts for: its vocabulary, hidden size (backbone_hidden_size), head dims,
    // KV heads per layer type, k_eq_v, sliding window, RoPE and context length are the
    // assistant's too (the plugin refuses an assistant that differs in any of them).
    Gemma4Shape target;
    int32_t n_embd = 0;  // hidden_size Ha, the assistant's own width
    int32_t n_head = 0;  // query heads (each group shares one of the target's KV heads)
    int32_t n_ff = 0;    // intermediate_size
    // Every released assistant has 4 layers, S S S F; each reads the target's last stored K/V
    // of its type (num_kv_shared_layers = num_hidden_layers).
    std::vector<Gemma4LayerType> layer_types;
    // use_ordered_embeddings: the centroid-masked head of E2B/E4B, logits only over the tokens
    // of the n_centroids_top_k best of n_centroids clusters (n_vocab / n_centroids tokens each).
    bool ordered = false;
    int32_t n_centroids = 0;
    int32_t n_centroids_top_k = 0;
    float final_logit_softcapping = 0.0f;  // 0: null (not written)

    int32_t n_layer() const { return int32_t(layer_types.size()); }
    int32_t n_vocab() const { return target.n_vocab; }
    int32_t n_embd_backbone() const { return target.n_embd; }
    bool is_swa(int il) const { return layer_types[size_t(il)] == Gemma4LayerType::sliding; }
    int32_t head_dim(int il) const { return is_swa(il) ? target.head_dim_swa : target.head_dim_full; }
    int32_t n_head_kv(int il) const { return is_swa(il) ? target.n_head_kv_swa : target.n_head_kv_full; }
};

// The assistant of a target preset (gemma4_preset_names()): "tiny-e2b" (Ha 32, 4 heads, n_ff 64,
// centroid-masked head with 32 clusters, top 4), "tiny-31b" and "tiny-26b" (the same width, full
// tied head, softcap 30), the same shapes the tests' own writer (tests/models/gemma4/
// gemma4_tiny_assistant.h) makes; the released ones docs/models/gemma4.md §3.1 lists: "e2b", "e4b" (Ha
// 256, 4 heads, n_ff 2048, 2048 clusters, top 32, no softcap), "26b-a4b" (Ha 1024, 16 heads,
// n_ff 8192) and "31b" (Ha 1024, 32 heads, n_ff 8192), both with the full tied head and softcap
// 30. Unknown names are an error listing the known ones.
Result<Gemma4AssistantShape> gemma4_assistant_preset(std::string_view target_preset);

// Checks shape and options together (the target's shape with validate_gemma4, then the
// assistant's own fields and that they fit the target); the synth functions call it first.
Status validate_gemma4_assistant(const Gemma4AssistantShape& shape, const Gemma4SynthOptions& opts);

// The tensor table in GGUF file order: token_embd, per layer attention and MLP (no K/V),
// output_norm, the two projections, the centroids (ordered head). Not in it: rope_freqs (GGUF
// only, gemma4_rope_freqs of the target) and the ordering (integer: gemma4_assistant_ordering).
// HF names are the assistant's own (no language-model prefix).
std::vector<Gemma4Param> gemma4_assistant_params(const Gemma4AssistantShape& shape);

// The recipe settings of `opts`, with the assistant's salted seed.
WeightRecipe gemma4_assistant_recipe(const Gemma4SynthOptions& opts);

// masked_embd_ordering / masked_embedding.token_ordering of an ordered head: a permutation of
// [0, n_vocab), read as [n_centroids][n_vocab / n_centroids] (row c lists cluster c's tokens).
std::vector<int64_t> gemma4_assistant_ordering(const Gemma4AssistantShape& shape, uint64_t seed);

// "S S S F" (as gemma4_layer_pattern).
std::string gemma4_assistant_layer_pattern(const Gemma4AssistantShape& shape);

// Writes the GGUF file: keys "gemma4-assistant.*" as llama.cpp's converter names them
// (gemma4_assistant_synth.cpp lists them), rope_freqs as the target's, no tokenizer. Matrices in
// opts.weight_type (per-row fallback as gguf_row_type), norms and scales F32, ordering I32.
Status synth_gemma4_assistant_gguf(const std::string& path, const Gemma4AssistantShape& shape,
                                   const Gemma4SynthOptions& opts);

// Writes the HF directory (created if missing): config.json and model.safetensors, every tensor
// in weight_type (F32, F16 or BF16) but the ordering (I64).
Status synth_gemma4_assistant_hf(const std::string& dir, const Gemma4AssistantShape& shape,
                                 const Gemma4SynthOptions& opts);

}  // namespace tdm::synth
