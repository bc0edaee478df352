/* SPDX-License-Identifier: Apache-2.0 */
// host/formats/ggml_types.h: block size and bytes per block of EVERY ggml type id
// a GGUF file may carry (docs/formats/gguf.md A.6), and the checked tensor size computation.
// The container readers and writers use this table so that files holding types tandem
// cannot compute with (IQ2_XXS, TQ1_0, ...) can still be opened, listed and validated.
// Not here: which types the runtime supports (common/dtype.h) or how blocks are laid out.
#pragma once

#include "common/error.h"

#include <cstdint>

namespace tdm {

// Sentinel for "no ggml type" (e.g. a safetensors dtype with no ggml equivalent).
constexpr uint32_t kNoGgmlType = UINT32_MAX;

// ggml allows at most 4 dimensions (GGML_MAX_DIMS).
constexpr int kMaxDims = 4;

struct GgmlTypeSize {
    uint32_t block_size;   // elements per block
    uint32_t block_bytes;  // bytes per block
};

// Size traits of a ggml type id; nullptr for removed ids (4, 5, 31-33, 36-38) and ids
// past the end of the table.
const GgmlTypeSize* ggml_type_size(uint32_t type);

// Bytes of a tensor of `type` with dims ne[0..n_dims) (ne[0] innermost). Fails, with a
// message that has no file context, on an unknown type, n_dims outside 1..4, a negative
// dim, ne[0] not a multiple of the block size, or an element/byte count overflowing
// int64.
Result<uint64_t> ggml_tensor_nbytes(uint32_t type, const int64_t* ne, int n_dims);

}  // namespace tdm
