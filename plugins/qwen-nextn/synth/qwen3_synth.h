/* SPDX-License-Identifier: Apache-2.0 */
// plugins/qwen-nextn/synth/qwen3_synth.h: synthetic models of the Qwen3 dense architecture, written
// exactly in the layouts real files have: a GGUF as llama.cpp's convert_hf_to_gguf.py (+
// llama-quantize) writes it, and a Hugging Face directory (config.json, model.safetensors,
// tokenizer.json, tokenizer_config.json) as transformers saves it. Same weights in both, bit for
// bit where the types allow. Tests build them on the fly instead of downloading models (DESIGN.md
// §5).
// Not here: the tokenizer (synth_vocab.h), value recipes (synth_weights.h), the reference
// forward pass that checks the runtime against these models (tests/support/qwen3_reference.h).
//
//   Qwen3Shape shape = TDM_TRY(qwen3_preset("tiny"));
//   Qwen3SynthOptions o;
//   o.weight_type = DType::Q8_0;
//   TDM_TRY(synth_qwen3_gguf(dir + "/tiny-q8_0.gguf", shape, o));
//
// Weight values: every element is a pure function of (seed, tensor name, element index), made by
// a counter-based hash (splitmix64), so generation is parallel and independent of thread count,
// and a model with fewer layers has exactly the first layers of a deeper one. Matrices are
// uniform with std 1/sqrt(fan_in) (activations keep unit scale); the token embedding and output
// matrix use std 2/sqrt(n_embd), which gives logits of std ~2 (peaked but not one-hot); norm
// weights are 1 +- 0.2, so a loader that drops or offsets them (1+w) is caught.
#pragma once

#include "common/dtype.h"
#include "common/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::synth {

struct Qwen3Shape {
    int32_t n_vocab = 0;      // rows of token_embd / output (the GGUF token list has this many)
    int32_t n_embd = 0;       // hidden_size
    int32_t n_layer = 0;      // num_hidden_layers
    int32_t n_head = 0;       // query heads
    int32_t n_head_kv = 0;    // key/value heads (GQA: n_head % n_head_kv == 0)
    int32_t head_dim = 0;     // even (NeoX RoPE rotates the full head)
    int32_t n_ff = 0;         // intermediate_size
    int32_t n_ctx_train = 0;  // max_position_embeddings / context_length
    float rope_theta = 1e6f;
    float rms_eps = 1e-6f;
    bool tied_embeddings = false;  // no output.weight / lm_head.weight; the LM head is token_embd
};

// "tiny", "small", "0.6b" (the real Qwen3-0.6B shape, tied). Unknown names are an error
// listing the known ones.
Result<Qwen3Shape> qwen3_preset(std::string_view name);
std::vector<std::string_view> qwen3_preset_names();

struct Qwen3SynthOptions {
    // Type of every 2-D matrix including token_embd (norms are always F32 in GGUF, as the
    // converter writes them): F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K. Per tensor, a
    // type whose block does not divide the row falls back (gguf_row_type). HF output
    // takes only F32/F16/BF16. With F16/BF16 every value, norms included, is rounded through
    // that type first, so the GGUF's F32 norms equal the HF checkpoint's F16/BF16 ones.
    DType weight_type = DType::F32;
    uint64_t seed = 1;
    // Override of shape.tied_embeddings.
    std::optional<bool> tied;
    // "Repeating" model: attn_output and ffn_down are zero, so the residual stream at every
    // position is exactly token_embd[t], and the embedding/LM-head pair makes the greedy
    // successor of token t the fixed function qwen3_repeat_successor(). Construction: each text
    // token t gets a random code c(t) in {-1,+1}^n_embd; token_embd[t] = c(t); output[j] =
    // (16/n_embd) * c(pred(j)) where pred = successor^-1. The final RMSNorm leaves c(t) as is
    // (its rms is 1) up to output_norm's 1 +- 0.2 scales, so logit j = (16/n_embd) * sum_i g_i
    // c_i(t) c_i(pred(j)): about 16 for j = succ(t), a random +-16/sqrt(n_embd)-ish value
    // otherwise. Special and [PAD] ids embed like token (id mod n_text) and have zero output
    // rows, so they are never generated (logit 0 < 16). Needs a separate output matrix: tied
    // is forced off (an explicit tied = true is an error).
    bool repeating = false;
    // Cycle length of the successor: text ids are cut into consecutive groups of this many
    // (the last group may be shorter) and each group is one cycle, so greedy output repeats
    // with this period (n-gram drafters need short periods).
    int32_t repeat_period = 5;
    // Draft models: every value gets added noise of std `perturbation` x the tensor's own
    // typical magnitude (its std; 1 for norm weights), from a stream seeded by
    // perturbation_seed. With the same seed, a shape with the same vocabulary and fewer (or
    // the same) layers and a small perturbation, this is a draft that agrees with its target
    // often but not always (greedy agreement on "small", same layers: ~83% at 0.01, ~75% at
    // 0.02, ~40% at 0.05). 0 = no noise.
    float perturbation = 0.0f;
    uint64_t perturbation_seed = 0x5eed;
    // Scales the std of layer il's attn_output and ffn_down by residual_decay^il (1 = off).
    // Later layers then change the residual stream less, so a draft made of the first layers
    // (qwen3_draft_shape) predicts like its target more often. With all layers equal, random
    // layers are independent: a 2-of-4-layer draft of "small" agrees on ~2% of greedy tokens;
    // with 0.5 on ~64% (3 of 4 layers: ~84%). Target and draft must use the same value
    // (qwen3_draft_options keeps it).
    float residual_decay = 1.0f;
    // general.name in GGUF; "" gives "tandem synthetic qwen3".
    std::string name;
    // HF output only: > 0 writes model-0000i-of-0000n.safetensors shards of at most this many
    // bytes plus model.safetensors.index.json instead of model.safetensors.
    uint64_t hf_shard_bytes = 0;
    // Worker threads for generation/quantization; 0 = std::thread::hardware_concurrency().
    int n_threads = 0;
};

// The draft of a target (same vocabulary and seed, the target's first n_layer layers, noise
// `perturbation`). Pass the returned shape/options to the synth functions like any other
// model. n_layer must be in [1, target.n_layer].
Result<Qwen3Shape> qwen3_draft_shape(const Qwen3Shape& target, int32_t n_layer);
Qwen3SynthOptions qwen3_draft_options(const Qwen3SynthOptions& target, float perturbation,
                                      uint64_t perturbation_seed = 0xd4af7);

// Checks shape and options together; the synth functions call it first. Errors name the
// offending field and value.
Status validate_qwen3(const Qwen3Shape& shape, const Qwen3SynthOptions& opts);

// Whether the written model has no output matrix (shape default, override, repeating mode).
bool qwen3_is_tied(const Qwen3Shape& shape, const Qwen3SynthOptions& opts);

// Repeating mode: the greedy successor of `token` (any id in [0, n_vocab)); always a text id.
// With n_text = synth_vocab_layout(n_vocab).n_text and P = repeat_period: for a text id t,
// g = P * (t / P), len = min(P, n_text - g), succ(t) = g + (t - g + 1) % len; for other ids,
// succ(t) = succ(t % n_text).
int32_t qwen3_repeat_successor(const Qwen3Shape& shape, const Qwen3SynthOptions& opts, int32_t token);

// Writes the GGUF file (see the file comment). Metadata as convert_hf_to_gguf.py writes for
// Qwen3 (general.*, qwen3.*, tokenizer.ggml.*, tokenizer.chat_template); tensors
// token_embd, blk.N.{attn_norm, attn_q, attn_q_norm, attn_k, attn_k_norm, attn_v, attn_output,
// ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output (untied only), in GGUF ne order.
Status synth_qwen3_gguf(const std::string& path, const Qwen3Shape& shape, const Qwen3SynthOptions& opts);

// Writes the HF directory (created if missing). weight_type must be F32, F16 or BF16.
Status synth_qwen3_hf(const std::string& dir, const Qwen3Shape& shape, const Qwen3SynthOptions& opts);

}  // namespace tdm::synth
