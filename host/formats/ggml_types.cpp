// SPDX-License-Identifier: Apache-2.0
// host/formats/ggml_types.cpp: the ggml type size table (docs/formats/gguf.md A.6, from
// gguf-py GGML_QUANT_SIZES and ggml-common.h) and checked tensor byte counts.
#include "formats/ggml_types.h"

#include "common/dtype.h"

namespace tdm {
namespace {

// Indexed by ggml type id; {0, 0} marks an id that was removed from the format.
constexpr GgmlTypeSize kSizes[] = {
    {1, 4},      // 0  F32
    {1, 2},      // 1  F16
    {32, 18},    // 2  Q4_0
    {32, 20},    // 3  Q4_1
    {0, 0},      // 4  (Q4_2, removed)
    {0, 0},      // 5  (Q4_3, removed)
    {32, 22},    // 6  Q5_0
    {32, 24},    // 7  Q5_1
    {32, 34},    // 8  Q8_0
    {32, 36},    // 9  Q8_1
    {256, 84},   // 10 Q2_K
    {256, 110},  // 11 Q3_K
    {256, 144},  // 12 Q4_K
    {256, 176},  // 13 Q5_K
    {256, 210},  // 14 Q6_K
    {256, 292},  // 15 Q8_K
    {256, 66},   // 16 IQ2_XXS
    {256, 74},   // 17 IQ2_XS
    {256, 98},   // 18 IQ3_XXS
    {256, 50},   // 19 IQ1_S
    {32, 18},    // 20 IQ4_NL
    {256, 110},  // 21 IQ3_S
    {256, 82},   // 22 IQ2_S
    {256, 136},  // 23 IQ4_XS
    {1, 1},      // 24 I8
    {1, 2},      // 25 I16
    {1, 4},      // 26 I32
    {1, 8},      // 27 I64
    {1, 8},      // 28 F64
    {256, 56},   // 29 IQ1_M
    {1, 2},      // 30 BF16
    {0, 0},      // 31 (Q4_0_4_4, removed)
    {0, 0},      // 32 (Q4_0_4_8, removed)
    {0, 0},      // 33 (Q4_0_8_8, removed)
    {256, 54},   // 34 TQ1_0
    {256, 66},   // 35 TQ2_0
    {0, 0},      // 36 (IQ4_NL_4_4, removed)
    {0, 0},      // 37 (IQ4_NL_4_8, removed)
    {0, 0},      // 38 (IQ4_NL_8_8, removed)
    {32, 17},    // 39 MXFP4
    {64, 36},    // 40 NVFP4
    {128, 18},   // 41 Q1_0
    {64, 18},    // 42 Q2_0
};

}  // namespace

const GgmlTypeSize* ggml_type_size(uint32_t type) {
    if (type >= sizeof(kSizes) / sizeof(kSizes[0]) || kSizes[type].block_size == 0) return nullptr;
    return &kSizes[type];
}

Result<uint64_t> ggml_tensor_nbytes(uint32_t type, const int64_t* ne, int n_dims) {
    const GgmlTypeSize* ts = ggml_type_size(type);
    if (!ts) return Error::format("unknown ggml type id {}", type);
    if (n_dims < 1 || n_dims > kMaxDims)
        return Error::format("{} dimensions (must be 1 to {})", n_dims, kMaxDims);
    for (int i = 0; i < n_dims; ++i)
        if (ne[i] < 0) return Error::format("negative dimension ne[{}] = {}", i, ne[i]);
    if (ne[0] % ts->block_size != 0)
        return Error::format("ne[0] = {} is not a multiple of the {} block size {}", ne[0],
                             ggml_type_name(type), ts->block_size);
    // Elements must fit int64 (ggml's int64_t nelements), bytes must fit too.
    int64_t n_elements = 1;
    for (int i = 0; i < n_dims; ++i)
        if (__builtin_mul_overflow(n_elements, ne[i], &n_elements))
            return Error::format("element count overflows 64 bits");
    int64_t bytes = 0;
    if (__builtin_mul_overflow(n_elements / ts->block_size, int64_t(ts->block_bytes), &bytes))
        return Error::format("byte size overflows 64 bits");
    return uint64_t(bytes);
}

}  // namespace tdm
