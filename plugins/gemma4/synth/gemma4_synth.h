/* SPDX-License-Identifier: Apache-2.0 */
// plugins/gemma4/synth/gemma4_synth.h: synthetic models of the Gemma 4 text decoder
// (docs/models/gemma4.md), written exactly in the layouts real files have: a GGUF as llama.cpp's
// convert_hf_to_gguf.py (+ llama-quantize) writes arch "gemma4", and a Hugging Face directory
// (config.json with a text_config, model.safetensors, tokenizer.json, tokenizer_config.json) as
// transformers saves Gemma4ForConditionalGeneration. Same weights in both, bit for bit where the
// types allow. Tests build them on the fly instead of downloading models.
// Not here: the tokenizer (gemma4_vocab.h), the parameter table (gemma4_params.h), value recipes
// (host/synth/synth_weights.h).
//
//   Gemma4Shape shape = TDM_TRY(gemma4_preset("tiny-e2b"));
//   Gemma4SynthOptions o;
//   o.weight_type = DType::Q8_0;
//   TDM_TRY(synth_gemma4_gguf(dir + "/tiny-e2b-q8_0.gguf", shape, o));
//
// Weight values: every element is a pure function of (seed, GGUF tensor name, element index)
// (synth_weights.h), so both layouts hold the same numbers and a model with fewer layers has
// exactly the first layers of a deeper one. Scales are chosen so activations stay near unit
// size: matrices std 1/sqrt(fan_in); token_embd std 2/sqrt(n_embd), which after the sqrt(n_embd)
// embedding scale gives a stream of rms ~2 and, through the tied LM head, logits of std ~2;
// the PLE token table std 1/sqrt(P) (its sqrt(P) scale brings it to ~1). Norm weights are
// plain multipliers 1 +- 0.2 (Gemma 4 is rms(x) * w, not 1 + w, so a loader that adds 1 or
// drops them is caught); layer_output_scale is 1 +- 0.5 (dropping or misplacing it is caught);
// the MoE router's scale and per-expert scale are 1 +- 0.2 (positive).
//
// No "repeating" mode (unlike qwen3_synth.h): Gemma 4 ties its LM head to token_embd, so there
// is no separate output matrix to carry a successor map; with the residual branches zeroed the
// greedy successor of every token would be the token itself.
#pragma once

#include "common/dtype.h"
#include "common/error.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::synth {

enum class Gemma4LayerType { sliding, full };

struct Gemma4Shape {
    int32_t n_vocab = 0;  // rows of token_embd (the GGUF token list has this many)
    int32_t n_embd = 0;   // hidden_size H
    int32_t n_layer = 0;  // num_hidden_layers
    int32_t n_head = 0;   // query heads, all layers
    // layer_types, one per layer: sliding_attention / full_attention.
    std::vector<Gemma4LayerType> layer_types;
    int32_t n_head_kv_swa = 0;   // num_key_value_heads (sliding layers)
    int32_t n_head_kv_full = 0;  // full layers: num_global_key_value_heads with k_eq_v; else it
                                 // must equal n_head_kv_swa (HF then uses num_key_value_heads)
    int32_t head_dim_swa = 0;    // head_dim
    int32_t head_dim_full = 0;   // global_head_dim
    bool k_eq_v = false;         // attention_k_eq_v: full layers have no v_proj (V = raw K)
    int32_t n_ff = 0;            // intermediate_size (the dense MLP)
    bool double_wide_mlp = false;  // use_double_wide_mlp: 2 * n_ff on KV-shared layers
    // MoE block (enable_moe_block when n_expert > 0): dense MLP and experts in parallel.
    int32_t n_expert = 0;       // num_experts
    int32_t n_expert_used = 0;  // top_k_experts
    int32_t n_ff_expert = 0;    // moe_intermediate_size
    // The last n_kv_shared layers reuse the K/V of the last non-shared layer of their type.
    int32_t n_kv_shared = 0;        // num_kv_shared_layers
    int32_t n_embd_per_layer = 0;   // hidden_size_per_layer_input P (0: no per-layer embeddings)
    int32_t n_vocab_per_layer = 0;  // vocab_size_per_layer_input (rows of the PLE token table)
    int32_t sliding_window = 0;
    float rope_theta_swa = 1e4f;            // rope_parameters.sliding_attention.rope_theta
    float rope_theta_full = 1e6f;           // rope_parameters.full_attention.rope_theta
    float partial_rotary_factor = 0.25f;    // full layers' proportional RoPE
    float final_logit_softcapping = 30.0f;
    float rms_eps = 1e-6f;
    int32_t n_ctx_train = 0;  // max_position_embeddings / context_length

    bool is_moe() const { return n_expert > 0; }
    bool is_swa(int il) const { return layer_types[size_t(il)] == Gemma4LayerType::sliding; }
    int32_t n_head_kv(int il) const { return is_swa(il) ? n_head_kv_swa : n_head_kv_full; }
    int32_t head_dim(int il) const { return is_swa(il) ? head_dim_swa : head_dim_full; }
    bool is_kv_shared(int il) const { return il >= n_layer - n_kv_shared; }
    // Full layers of a K=V model have no v_proj / attn_v.
    bool has_v(int il) const { return is_swa(il) || !k_eq_v; }
    int32_t n_ff_at(int il) const { return double_wide_mlp && is_kv_shared(il) ? 2 * n_ff : n_ff; }
    // Rotated frequency slots of a full layer: int(partial_rotary_factor * head_dim_full / 2)
    // (64 of 256 for head_dim_full 512); rope_freqs holds 1 for these, 1e30 for the rest.
    int32_t n_rot_full_pairs() const { return int32_t(partial_rotary_factor * float(head_dim_full) / 2.0f); }
};

// "tiny-e2b", "tiny-31b", "tiny-26b" (the contract's test shapes, 1024-token vocabulary) and the
// released text decoders "e2b", "e4b", "26b-a4b", "31b" (docs/models/gemma4.md §1). Unknown names are an
// error listing the known ones.
Result<Gemma4Shape> gemma4_preset(std::string_view name);
std::vector<std::string_view> gemma4_preset_names();

// "S S F S F"-style summary of layer_types (tests, messages).
std::string gemma4_layer_pattern(const Gemma4Shape& shape);

struct Gemma4SynthOptions {
    // Type of every 2-D and 3-D matrix, token tables included (norms, scales, layer_output_scale
    // and the MoE router matrix ffn_gate_inp are always F32 in GGUF, as the converter writes
    // them): F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K or Q6_K. Per tensor, a type
    // whose block does not divide the row falls back (gguf_row_type). HF output takes only
    // F32/F16/BF16. With F16/BF16 every value, norms included, is rounded through that type
    // first, so the GGUF's F32 norms equal the HF checkpoint's F16/BF16 ones.
    DType weight_type = DType::F32;
    uint64_t seed = 1;
    // general.name in GGUF; "" gives "tandem synthetic gemma4".
    std::string name;
    // HF output only: write the newer config form, full-layer overrides as
    // "per_layer_config": {"<il>": {"head_dim": .., "num_key_value_heads": ..}} instead of
    // global_head_dim / num_global_key_value_heads.
    bool hf_per_layer_config = false;
    // Worker threads for generation/quantization; 0 = std::thread::hardware_concurrency().
    int n_threads = 0;
};

// Checks shape and options together; the synth functions call it first. Errors name the
// offending field and value.
Status validate_gemma4(const Gemma4Shape& shape, const Gemma4SynthOptions& opts);


// rope_freqs.weight of the GGUF: head_dim_full / 2 values, 1.0 for the n_rot_full_pairs() rotated
// slots, then 1e30 (llama.cpp's emulation of proportional RoPE: frequency / 1e30 ~ 0).
std::vector<float> gemma4_rope_freqs(const Gemma4Shape& shape);

// Writes the GGUF file: metadata as convert_hf_to_gguf.py writes arch gemma4 (the contract's key
// list), tokenizer.ggml.* (model "gemma4") and tokenizer.chat_template, tensors in GGUF ne order.
// KV-shared layers carry no attn_k / attn_v, full K=V layers no attn_v.
Status synth_gemma4_gguf(const std::string& path, const Gemma4Shape& shape, const Gemma4SynthOptions& opts);

// The text_config object of config.json (a gemma4_text config) for `shape`, full-layer overrides
// in the per_layer_config form when asked (see hf_per_layer_config). The assistant's writer
// builds its text_config from it too, so both configs have one form.
nlohmann::ordered_json gemma4_text_config(const Gemma4Shape& shape, bool per_layer_config);

// Writes the HF directory (created if missing). weight_type must be F32, F16 or BF16. Tensors
// under model.language_model.; KV-shared layers do carry k_proj / v_proj / k_norm (HF ignores
// them), K=V full layers no v_proj.
Status synth_gemma4_hf(const std::string& dir, const Gemma4Shape& shape, const Gemma4SynthOptions& opts);

}  // namespace tdm::synth
