/* SPDX-License-Identifier: Apache-2.0 */
// host/synth/synth_weights.h: the deterministic value recipes of synthetic weights, shared by
// every synthesizer and by a synthesizer's GGUF and HF writers, so that both layouts hold the
// same values. A parameter (SynthParam) says what it is (its role) and how large its values
// are; fill_rows() gives its values, encode_param() encodes them in a weight type.
//
// Values: every element is a pure function of (seed, GGUF tensor name, element index), made by
// a counter-based hash (splitmix64), so generation is parallel and independent of thread count,
// and a model with fewer layers has exactly the first layers of a deeper one. Matrices are
// uniform with std `sigma`; norm weights are 1 +- 0.2 (uniform), so a loader that drops or
// offsets them (1+w) is caught. Repeating mode and draft noise: WeightRecipe.
// Not here: parameter tables and file layouts (the synthesizers, e.g.
// plugins/qwen-nextn/synth/), tokenizer (synth_vocab.h).
#pragma once

#include "common/dtype.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tdm::synth {

enum class ParamRole {
    token_embd,    // [n_vocab][n_embd]; repeating mode: the +-1 code of token (row mod n_text)
    output,        // [n_vocab][n_embd], untied only; repeating mode: (16/n_embd) x the code of
                   // repeat_predecessor(row), zero rows past n_text
    matrix,        // q, k, v, gate, up: random, std sigma (1/sqrt(fan_in))
    residual_out,  // attn_output, ffn_down: random like `matrix`, zero in repeating mode
    norm,          // 1-D, 1 +- 0.2
};

struct SynthParam {
    std::string gguf_name;  // "blk.0.attn_q.weight"
    std::string hf_name;    // "model.layers.0.self_attn.q_proj.weight"
    int64_t rows = 1;       // HF shape [rows][cols]; GGUF ne = {cols, rows}. Norms: rows = 1
    int64_t cols = 0;
    bool is_vector = false;  // 1-D: HF shape [cols], GGUF ne = {cols}
    ParamRole role = ParamRole::matrix;
    float sigma = 0.0f;  // std of the random values (the deviation from 1 for norms)
};

// A parameter of HF shape [rows][cols] under both names; a norm is 1-D.
inline SynthParam synth_param(std::string gguf, std::string hf, int64_t rows, int64_t cols, ParamRole role,
                              float sigma) {
    return {std::move(gguf), std::move(hf), rows, cols, role == ParamRole::norm, role, sigma};
}

// Everything the recipes need besides the parameter itself.
struct WeightRecipe {
    uint64_t seed = 1;
    // Repeating mode: the roles' values above make the greedy successor of every token
    // repeat_successor() (the residual stream is the token's embedding code, and the output
    // row of succ(t) is the one that matches it).
    bool repeating = false;
    int32_t repeat_period = 5;
    int32_t n_text = 0;  // text ids of the vocabulary (repeating mode)
    // Draft models: noise of std perturbation x sigma (x 1 for norms) added to every value,
    // from a stream of its own seed. 0 = none.
    float perturbation = 0.0f;
    uint64_t perturbation_seed = 0;
    // F16/BF16 (an HF checkpoint of that dtype, or a GGUF of that weight type): every value is
    // rounded through this type, so F32 tensors of the GGUF equal the HF ones. F32 otherwise.
    DType round_to = DType::F32;
    int n_threads = 1;  // encode_param's worker threads
};

// f32 values of rows [r0, r1) of p, row-major, into dst ((r1 - r0) * cols floats).
void fill_rows(const SynthParam& p, const WeightRecipe& r, int64_t r0, int64_t r1, float* dst);

// All of p encoded as type t (row_bytes(t, cols) per row) into dst, rows split over
// r.n_threads threads. t's block size must divide p.cols.
void encode_param(const SynthParam& p, const WeightRecipe& r, DType t, uint8_t* dst);

// Repeating-mode successor over text ids [0, n_text): ids are cut into consecutive groups of
// `period` (the last may be shorter), each group a cycle: g = period * (t / period),
// len = min(period, n_text - g), succ(t) = g + (t - g + 1) % len.
int32_t repeat_successor(int32_t t, int32_t n_text, int32_t period);
int32_t repeat_predecessor(int32_t t, int32_t n_text, int32_t period);

}  // namespace tdm::synth
