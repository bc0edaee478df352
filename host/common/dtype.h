/* SPDX-License-Identifier: Apache-2.0 */
// host/common/dtype.h: element type traits (block size, bytes per block, name)
// for the types the runtime computes with. Values are ggml/GGUF type ids.
// Not here: (de)quantization (quant.h).
#pragma once

#include <tandem/dtype.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tdm {

enum class DType : uint32_t {
    F32 = TDM_DTYPE_F32,
    F16 = TDM_DTYPE_F16,
    Q4_0 = TDM_DTYPE_Q4_0,
    Q8_0 = TDM_DTYPE_Q8_0,
    Q4_K = TDM_DTYPE_Q4_K,
    Q5_K = TDM_DTYPE_Q5_K,
    Q6_K = TDM_DTYPE_Q6_K,
    I8 = TDM_DTYPE_I8,
    I16 = TDM_DTYPE_I16,
    I32 = TDM_DTYPE_I32,
    I64 = TDM_DTYPE_I64,
    BF16 = TDM_DTYPE_BF16,
    Q5_0 = TDM_DTYPE_Q5_0,
    Q5_1 = TDM_DTYPE_Q5_1,
};

struct DTypeTraits {
    std::string_view name;  // ggml spelling: "f32", "q8_0", "q4_K", ...
    uint32_t block_size;    // elements per block (1 for plain types)
    uint32_t block_bytes;   // bytes per block
    bool quantized;
};

// Traits of a supported type; nullptr for ids the runtime does not support.
const DTypeTraits* dtype_traits(uint32_t ggml_type_id);
inline const DTypeTraits& traits(DType t) { return *dtype_traits(static_cast<uint32_t>(t)); }
inline std::string_view dtype_name(DType t) { return traits(t).name; }

// Name of any ggml type id, including ones tandem cannot compute with
// (for error messages: "unsupported tensor type iq2_xxs").
std::string_view ggml_type_name(uint32_t ggml_type_id);

// Bytes of one row of n elements; n must be a multiple of the block size.
inline uint64_t row_bytes(DType t, uint64_t n) {
    const DTypeTraits& tr = traits(t);
    return n / tr.block_size * tr.block_bytes;
}

bool parse_dtype(std::string_view name, DType* out);

}  // namespace tdm
