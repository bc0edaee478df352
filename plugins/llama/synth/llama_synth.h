/* SPDX-License-Identifier: Apache-2.0 */
// plugins/llama/synth/llama_synth.h: synthetic Llama 3.x dense models, written in the layouts
// real files have: a GGUF as llama.cpp's convert_hf_to_gguf.py (+ llama-quantize) writes
// architecture "llama" (q/k rows permuted for its adjacent-pair RoPE, the llama3 divisors as
// rope_freqs.weight), and a Hugging Face directory (LlamaForCausalLM: config.json with
// rope_scaling, model.safetensors, tokenizer files) as transformers saves it. Same weights in
// both, bit for bit where the types allow (docs/models/llama.md).
//
// Values are those of host/synth/synth_weights.h (a pure function of seed, tensor name and
// element index; the HF-order tensor, named by its GGUF name, is the stream: the GGUF holds
// the same rows permuted). The tokenizer is the shared synthetic one (synth_vocab.h), not
// Llama 3's. Repeating mode as in synth_weights.h.
// Not here: the option parsing of `tandem synth` (llama_request.h).
//
//   LlamaShape shape = TDM_TRY(llama_preset("tiny"));
//   LlamaSynthOptions o;
//   TDM_TRY(synth_llama_gguf(dir + "/tiny.gguf", shape, o));
//   TDM_TRY(synth_llama_hf(dir + "/tiny-hf", shape, o));  // o.weight_type F32/F16/BF16
#pragma once

#include "common/dtype.h"
#include "common/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::synth {

// HF rope_scaling {"rope_type": "llama3", ...} (Llama 3.1 and later).
struct LlamaRopeScaling {
    float factor = 8.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    int32_t original_context = 8192;  // original_max_position_embeddings
};

struct LlamaShape {
    int32_t n_vocab = 0;
    int32_t n_embd = 0;
    int32_t n_layer = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;    // n_head % n_head_kv == 0
    int32_t head_dim = 0;     // even
    int32_t n_ff = 0;
    int32_t n_ctx_train = 0;
    float rope_theta = 500000.0f;
    float rms_eps = 1e-5f;
    bool tied_embeddings = false;
    std::optional<LlamaRopeScaling> rope_scaling;  // llama3 scaling; none = plain RoPE
};

// "tiny" (default), "1b" (Llama 3.2 1B: tied), "8b" (Llama 3.1 8B). Unknown names: an error
// listing the known ones.
Result<LlamaShape> llama_preset(std::string_view name);
std::vector<std::string_view> llama_preset_names();

struct LlamaSynthOptions {
    DType weight_type = DType::F32;  // matrices; norms (and rope_freqs) are F32 in GGUF
    uint64_t seed = 1;
    std::optional<bool> tied;          // override of shape.tied_embeddings
    bool repeating = false;            // synth_weights.h; needs an untied head
    int32_t repeat_period = 5;
    std::string name;                  // general.name; "" = "tandem synthetic llama"
    int n_threads = 0;                 // 0 = hardware_concurrency
};

Status validate_llama(const LlamaShape& shape, const LlamaSynthOptions& opts);
bool llama_is_tied(const LlamaShape& shape, const LlamaSynthOptions& opts);

// The GGUF row of HF row `hf_row` of a q or k projection, as the converter permutes them:
// within each head, HF's NeoX pairs (j, j + head_dim/2) become adjacent rows (2j, 2j + 1).
int64_t llama_gguf_row(int64_t hf_row, int64_t head_dim);

// The llama3 divisor of each of the head_dim/2 pairs (rope_freqs.weight), as the converter
// computes them.
std::vector<float> llama_rope_freqs(const LlamaShape& shape);

// Repeating mode: the greedy successor of token (any id in [0, n_vocab)).
int32_t llama_repeat_successor(const LlamaShape& shape, const LlamaSynthOptions& opts, int32_t token);

Status synth_llama_gguf(const std::string& path, const LlamaShape& shape, const LlamaSynthOptions& opts);
// weight_type must be F32, F16 or BF16.
Status synth_llama_hf(const std::string& dir, const LlamaShape& shape, const LlamaSynthOptions& opts);

}  // namespace tdm::synth
