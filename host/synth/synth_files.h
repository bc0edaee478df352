/* SPDX-License-Identifier: Apache-2.0 */
// host/synth/synth_files.h: what synthesizers' model writers (e.g. plugins/qwen-nextn/synth) share
// about files: which weight types they write, the HF names of those types, JSON numbers as
// transformers writes them, and writing the small text files of an HF directory.
#pragma once

#include "common/dtype.h"
#include "common/error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace tdm::synth {

inline constexpr uint32_t kQuantizationVersion = 2;  // GGML_QNT_VERSION, what llama.cpp's tools write

// GGUF weight types the writers produce (F32, F16, BF16 and the quantized types the runtime reads).
bool is_synth_weight_type(DType t);
// HF checkpoints hold F32, F16 or BF16 only.
bool is_hf_weight_type(DType t);

// The type a matrix with rows of ne0 elements gets when `want` is asked for: llama-quantize's
// shape fallback (docs/formats/quants.md §6), Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then F16 when not
// even 32 divides the row. The 32-element types (Q4_0, Q5_0, Q5_1, Q8_0) fall back to F16 where
// 32 does not divide the row. Float types never fall back.
DType gguf_row_type(DType want, int64_t ne0);

// general.file_type (llama_ftype) for a weight type: F32 0, F16 1, Q4_0 2, Q8_0 7, Q5_0 8, Q5_1 9,
// Q4_K 15 (Q4_K_M), Q5_K 17 (Q5_K_M), Q6_K 18, BF16 32. The synthetic mixes are "pure" (one type
// for every matrix); the number only labels the file.
uint32_t gguf_file_type(DType weight_type);
std::string_view safetensors_dtype_name(DType t);  // "F32", "F16", "BF16"
std::string_view torch_dtype_name(DType t);        // "float32", "float16", "bfloat16"

// The shortest decimal that reads back as this float ("1e-06", not 9.99999997e-07), as a JSON
// number; integral values as integers, like transformers writes rope_theta.
nlohmann::ordered_json json_number(float f);

Status make_directory(const std::string& dir);
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace tdm::synth
