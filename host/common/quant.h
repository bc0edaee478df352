/* SPDX-License-Identifier: Apache-2.0 */
// host/common/quant.h: CPU (de)quantization of the ggml tensor encodings tandem computes with
// (F32, F16, BF16, Q4_0, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K), following docs/formats/quants.md.
// Dequantization reproduces llama.cpp's dequantize_row_* (same f32 operations in the same order),
// so it is the ground truth that GPU dequantization is compared against.
// Quantization is reference quality only (used to build test weights and synthetic models); it
// produces valid blocks but does not reproduce llama-quantize's optimiser bit for bit.
// Not here: type traits (dtype.h), GPU kernels (shaders/).
#pragma once

#include <cstdint>
#include <vector>

#include "common/dtype.h"

namespace tdm {

// Decodes n elements of type t from src into dst (f32). n must be a multiple of the type's block
// size; src holds n / block_size blocks packed back to back (no alignment needed).
// Integer types are not supported (asserts).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);

// Encodes n floats into n / block_size blocks of type t at dst (row_bytes(t, n) bytes).
// Deterministic. F16/BF16 round to nearest even. Q8_0/Q4_0/Q5_0 use ggml's reference amax
// scheme and Q5_1 its min/max scheme (quantize_row_*_ref);
// the K-quants use a per-sub-block min/max fit with 6-bit (Q4_K, Q5_K) or int8 (Q6_K) scales.
void quantize_row(DType t, const float* src, void* dst, int64_t n);

// Quantizes a row-major [rows x cols] matrix row by row (cols a multiple of the block size) into
// the GGUF layout: rows * row_bytes(t, cols) bytes.
std::vector<uint8_t> quantize_matrix(DType t, const float* src, int64_t rows, int64_t cols);

}  // namespace tdm
