/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/gemma4/gemma4_tiny.h: tiny Gemma 4 models built by the tests themselves (the
// synthesizer lives elsewhere): the contract's presets tiny-e2b / tiny-31b / tiny-26b, random
// weights held in memory under their HF names, written out as a GGUF file (llama.cpp's names
// and keys) or an HF directory (config.json with text_config + model.safetensors), optionally
// broken in one named way for the error tests. naive_forward() is a second, loop-by-loop
// implementation of docs/models/gemma4.md §2 in double, working on the in-memory weights only, written
// separately from tests/support/gemma4_reference.* so the two can be compared.
#pragma once

#include "common/dtype.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tdm::test::g4 {

struct Preset {
    int64_t n_vocab = 1024, n_embd = 64, n_head = 4;
    std::string layers;  // one letter per layer: S = sliding, F = full
    int64_t kv_swa = 1, kv_full = 1;
    bool global_kv_null = false;  // num_global_key_value_heads: null (HF then uses num_key_value_heads)
    int64_t hd_swa = 32, hd_full = 64;
    bool k_eq_v = false;
    int64_t n_ff = 128;
    bool double_wide = false;
    int64_t n_expert = 0, top_k = 0, n_ff_exp = 0;
    int64_t n_kv_shared = 0;
    int64_t P = 0;  // per-layer input width
    int64_t window = 8;
    double factor = 0.25;  // partial_rotary_factor of full layers
};

// "tiny-e2b", "tiny-31b", "tiny-26b" (contract table).
Preset preset(const std::string& name);

struct Tensor {
    std::vector<int64_t> shape;  // HF order, outermost first
    std::vector<float> data;
};
// HF names relative to "model.language_model." ("layers.0.self_attn.q_proj.weight").
using Weights = std::map<std::string, Tensor>;

// Derived per-layer facts of a preset (independent of the reference's own derivation).
bool is_sliding(const Preset& p, int64_t il);
int64_t first_shared(const Preset& p);
int64_t kv_source(const Preset& p, int64_t il);  // last non-shared layer of the same type
int64_t n_ff_of(const Preset& p, int64_t il);
int64_t kv_heads_of(const Preset& p, int64_t il);
int64_t head_dim_of(const Preset& p, int64_t il);

// Random weights; every value already rounded through `type` (so files of any type hold them
// exactly). KV-shared layers get k/v/k_norm weights too (HF checkpoints carry them).
Weights make_weights(const Preset& p, uint32_t seed, DType type = DType::F32);

// `w` with every post-norm weight (post_attention_layernorm, post_feedforward_layernorm(_1/_2),
// post_per_layer_input_norm) times `gain`: each layer adds `gain` times more to the residual.
// With make_weights() alone the scaled embedding outweighs what the layers add, and through the
// tied head greedy decoding of tiny-e2b and tiny-31b mostly repeats the last prompt token; at
// gain 4 the layers decide and the output varies (what the speculative exactness tests need).
// A power of two keeps weights rounded through F16/BF16 exact.
Weights amplify_layer_outputs(Weights w, float gain);

// One deliberate defect, for the error tests.
struct Break {
    std::string arch;          // GGUF general.architecture / HF model_type instead of gemma4
    std::string drop_key;      // GGUF key (without "gemma4.") / text_config key not written
    std::string drop_tensor;   // GGUF or full HF name not written
    int pattern_extra = 0;     // entries added to sliding_window_pattern / layer_types
    bool ple_shape = false;    // per-layer token table one layer short
};

struct WriteOptions {
    DType type = DType::F32;        // matrices (and HF vectors); GGUF norms are F32
    bool per_layer_config = false;  // HF: the newer per_layer_config form
    bool text_only = false;         // HF: model_type gemma4_text at the top, tensors under "model."
    bool scalar_kv_heads = false;   // GGUF: head_count_kv as one scalar (all layers must agree)
    Break brk;
};

// Returns the path written (a file for GGUF, a directory for HF).
std::string write_gguf(const Preset& p, const Weights& w, const std::string& path, const WriteOptions& o = {});
std::string write_hf(const Preset& p, const Weights& w, const std::string& dir, const WriteOptions& o = {});

// Logits [n][n_vocab] of the loop-by-loop double implementation. embd_scale / ple_scale are the
// embedding scales the file format implies (docs/models/gemma4.md §2: fp32 sqrtf for GGUF, dtype-rounded
// for HF).
std::vector<double> naive_forward(const Preset& p, const Weights& w, const std::vector<int32_t>& tokens,
                                  double embd_scale, double ple_scale);

// A fresh temporary path under the test temp dir.
std::string temp_path(const std::string& name);

}  // namespace tdm::test::g4
