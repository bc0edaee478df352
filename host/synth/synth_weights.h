// host/synth/synth_weights.h: the parameter list of a Qwen3 model (GGUF and HF names, shapes)
// and the deterministic recipes that fill it, shared by the GGUF and HF writers so that both
// hold the same values. See qwen3_synth.h for the recipes' rationale.
// Not here: file layouts (qwen3_synth.cpp), tokenizer (synth_vocab.h).
#pragma once

#include "common/dtype.h"
#include "synth/qwen3_synth.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tdm::synth {

enum class ParamRole {
    token_embd,    // [n_vocab][n_embd]
    output,        // [n_vocab][n_embd], untied only
    matrix,        // q, k, v, gate, up: random, std 1/sqrt(fan_in)
    residual_out,  // attn_output, ffn_down: random like `matrix`, zero in repeating mode
    norm,          // 1-D, 1 +- 0.2
};

struct Qwen3Param {
    std::string gguf_name;  // "blk.0.attn_q.weight"
    std::string hf_name;    // "model.layers.0.self_attn.q_proj.weight"
    int64_t rows = 1;       // HF shape [rows][cols]; GGUF ne = {cols, rows}. Norms: rows = 1
    int64_t cols = 0;
    bool is_vector = false;  // 1-D: HF shape [cols], GGUF ne = {cols}
    ParamRole role = ParamRole::matrix;
    float sigma = 0.0f;  // std of the random values (the deviation from 1 for norms)
};

// In GGUF file order: token_embd, then per layer attn_norm, attn_q, attn_q_norm, attn_k,
// attn_k_norm, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, then output_norm and
// (untied) output.
// residual_decay: Qwen3SynthOptions::residual_decay.
std::vector<Qwen3Param> qwen3_params(const Qwen3Shape& shape, bool tied, float residual_decay = 1.0f);

// Everything the recipes need besides the parameter itself.
struct WeightRecipe {
    uint64_t seed = 1;
    bool repeating = false;
    int32_t repeat_period = 5;
    int32_t n_text = 0;  // text ids of the vocabulary (repeating mode)
    float perturbation = 0.0f;
    uint64_t perturbation_seed = 0;
    // F16/BF16: every value is rounded through this type (see Qwen3SynthOptions::weight_type);
    // F32 for everything else.
    DType round_to = DType::F32;
    int n_threads = 1;
};

// n_text: text ids of the model's vocabulary (synth_vocab_layout).
WeightRecipe make_recipe(const Qwen3SynthOptions& opts, int32_t n_text);

// f32 values of rows [r0, r1) of p, row-major, into dst ((r1 - r0) * cols floats).
void fill_rows(const Qwen3Param& p, const WeightRecipe& r, int64_t r0, int64_t r1, float* dst);

// All of p encoded as type t (row_bytes(t, cols) per row) into dst, rows split over
// r.n_threads threads. t's block size must divide p.cols.
void encode_param(const Qwen3Param& p, const WeightRecipe& r, DType t, uint8_t* dst);

// Repeating-mode successor over text ids [0, n_text) (qwen3_repeat_successor's formula).
int32_t repeat_successor(int32_t t, int32_t n_text, int32_t period);
int32_t repeat_predecessor(int32_t t, int32_t n_text, int32_t period);

}  // namespace tdm::synth
