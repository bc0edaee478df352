// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_tiny_assistant.h: tiny gemma4_assistant drafters (docs/models/gemma4.md §3) for
// the tiny targets of gemma4_tiny.h: a preset derived from a target preset, random weights held
// in memory under their HF names, written out as a GGUF file (arch gemma4-assistant, llama.cpp's
// names and keys) or an HF directory (Gemma4AssistantForCausalLM config.json + model.safetensors),
// optionally made incompatible with its target in one named way for the error tests.
// The gemma4 synthesizer writes assistants of the same shapes (`tandem synth --arch
// gemma4-assistant`); gemma4_synth_assistant_test.cpp checks that the two writers agree.
// Not here: the drafter's forward pass (tests/support/gemma4_assistant_reference.*; the naive
// loop version lives in gemma4_assistant_reference_test.cpp).
//
//   const Preset tp = preset("tiny-e2b");
//   const AssistantPreset ap = assistant_preset("tiny-e2b");
//   const AssistantWeights aw = make_assistant_weights(ap, 7);
//   write_assistant_gguf(ap, aw, temp_path("a.gguf")); write_assistant_hf(ap, aw, temp_path("a"));
#pragma once

#include "gemma4_tiny.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tdm::test::g4 {

// The drafter's hyper-parameters. `text` is its gemma4_text config: n_embd = Ha (the drafter
// width), layers "SSSF", n_head 4, n_ff 64, n_kv_shared = 4 (every layer reads the target's K/V),
// P = 0; head dims, KV heads, k_eq_v, window and the rotated fraction copied from the target.
// n_vocab is the target's vocabulary (the drafter's own token_embd rows).
struct AssistantPreset {
    Preset text;
    int64_t n_embd_backbone = 0;       // Hb = backbone_hidden_size: the target's hidden width
    bool ordered = false;              // use_ordered_embeddings: centroid-masked LM head
    int64_t n_centroids = 32;          // clusters of token_ordering (n_vocab / n_centroids tokens each)
    int64_t n_centroids_top_k = 4;     // centroid_intermediate_top_k
    double softcap = 0.0;              // final_logit_softcapping; 0 = null (not written)
};

// One deliberate incompatibility, for the error tests. The mismatches are applied by
// assistant_preset() (the weights come out shaped for them, so the file is self-consistent and
// only disagrees with its target); drop_tensor is applied by the writers.
struct AssistantBreak {
    int64_t backbone_delta = 0;  // Hb written as target hidden + delta (projections sized for it)
    int64_t vocab_delta = 0;     // drafter vocabulary (token_embd rows) = target's + delta
    int64_t head_dim_delta = 0;  // full-layer head dim = target's + delta
    int64_t window_delta = 0;    // sliding_window = target's + delta
    std::string drop_tensor;     // GGUF or full HF name not written
};

// "tiny-e2b": Ha 32, ordered head with 32 centroids, top-4, softcap null.
// "tiny-31b", "tiny-26b": Ha 32, full tied head, softcap 30 (so a runtime that applies it and one
// that does not give different logits).
AssistantPreset assistant_preset(const std::string& target_name, const AssistantBreak& brk = {});

struct AssistantWeights {
    // Full HF names: "model.embed_tokens.weight" [V][Ha], "model.layers.0.self_attn.q_proj.weight",
    // "model.norm.weight", "pre_projection.weight" [Ha][2*Hb], "post_projection.weight" [Hb][Ha],
    // "masked_embedding.centroids.weight" [n_centroids][Ha] (ordered only).
    Weights w;
    // masked_embedding.token_ordering (ordered only): a permutation of 0..V-1 viewed as
    // [n_centroids][V / n_centroids]; row c lists the token ids of cluster c.
    std::vector<int64_t> ordering;
};

// Random weights (embedding rows and centroids +-1, other matrices +-1/sqrt(cols), norms
// 1 +- 0.2, layer_scalar 0.5..1.5), already rounded through `type`.
AssistantWeights make_assistant_weights(const AssistantPreset& ap, uint32_t seed, DType type = DType::F32);

struct AssistantWriteOptions {
    DType type = DType::F32;  // matrices (and HF vectors); GGUF norms are F32
    AssistantBreak brk;       // only drop_tensor is used here
};

// GGUF (keys "gemma4-assistant.*", see the .cpp for the list) and HF directory writers; each
// returns the path written.
std::string write_assistant_gguf(const AssistantPreset& ap, const AssistantWeights& w, const std::string& path,
                                 const AssistantWriteOptions& o = {});
std::string write_assistant_hf(const AssistantPreset& ap, const AssistantWeights& w, const std::string& dir,
                               const AssistantWriteOptions& o = {});

}  // namespace tdm::test::g4
