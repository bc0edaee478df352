// SPDX-License-Identifier: Apache-2.0
// host/model/weight_check.cpp: the NaN/Inf scan over raw weight bytes. Works on bit
// patterns (an all-ones exponent is NaN or infinity in every IEEE format), so it needs
// no conversion and no alignment.
#include "model/weight_check.h"

#include "common/dtype.h"
#include "common/fp16.h"

#include <cmath>
#include <cstring>

namespace tdm {
namespace {

uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

bool f16_non_finite(uint16_t h) { return (h & 0x7c00u) == 0x7c00u; }
bool bf16_non_finite(uint16_t h) { return (h & 0x7f80u) == 0x7f80u; }

// Where the f16 scales of one block sit (ggml block layouts, docs/formats/quants.md).
struct ScaleFields {
    uint32_t d_offset;
    int dmin_offset;                 // -1: the format has no second scale
    const char* dmin_name = "dmin";  // what ggml calls it: dmin (K-quants) or m (Q5_1)
};

std::optional<ScaleFields> scale_fields(uint32_t type) {
    switch (static_cast<DType>(type)) {
        case DType::Q4_0: return ScaleFields{0, -1};    // d, qs[16]
        case DType::Q5_0: return ScaleFields{0, -1};    // d, qh[4], qs[16]
        case DType::Q5_1: return ScaleFields{0, 2, "m"};  // d, m, qh[4], qs[16]
        case DType::Q8_0: return ScaleFields{0, -1};    // d, qs[32]
        case DType::Q4_K: return ScaleFields{0, 2};     // d, dmin, scales[12], qs[128]
        case DType::Q5_K: return ScaleFields{0, 2};     // d, dmin, scales[12], qh[32], qs[128]
        case DType::Q6_K: return ScaleFields{208, -1};  // ql[128], qh[64], scales[16], d
        default: return std::nullopt;
    }
}

}  // namespace

std::optional<NonFinite> find_non_finite(const SourceTensor& t) {
    const uint8_t* p = t.data;
    switch (static_cast<DType>(t.type)) {
        case DType::F32:
            for (uint64_t i = 0; i < t.nbytes / 4; ++i) {
                uint32_t u;
                std::memcpy(&u, p + 4 * i, 4);
                if ((u & 0x7f800000u) == 0x7f800000u) return NonFinite{i, false, nullptr, bits_to_f32(u)};
            }
            return std::nullopt;
        case DType::F16:
            for (uint64_t i = 0; i < t.nbytes / 2; ++i)
                if (uint16_t h = load_u16(p + 2 * i); f16_non_finite(h))
                    return NonFinite{i, false, nullptr, f16_to_f32(h)};
            return std::nullopt;
        case DType::BF16:
            for (uint64_t i = 0; i < t.nbytes / 2; ++i)
                if (uint16_t h = load_u16(p + 2 * i); bf16_non_finite(h))
                    return NonFinite{i, false, nullptr, bf16_to_f32(h)};
            return std::nullopt;
        default: break;
    }
    const std::optional<ScaleFields> f = scale_fields(t.type);
    const DTypeTraits* tr = dtype_traits(t.type);
    if (!f || !tr) return std::nullopt;
    const uint64_t n_blocks = t.nbytes / tr->block_bytes;
    for (uint64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* block = p + b * tr->block_bytes;
        if (uint16_t d = load_u16(block + f->d_offset); f16_non_finite(d))
            return NonFinite{b, true, "d", f16_to_f32(d)};
        if (f->dmin_offset >= 0)
            if (uint16_t m = load_u16(block + f->dmin_offset); f16_non_finite(m))
                return NonFinite{b, true, f->dmin_name, f16_to_f32(m)};
    }
    return std::nullopt;
}

Status check_weights_finite(std::string_view path, const SourceTensor& t) {
    const std::optional<NonFinite> bad = find_non_finite(t);
    if (!bad) return {};
    const std::string value = std::isnan(bad->value) ? "NaN" : bad->value > 0 ? "+inf" : "-inf";
    const uint64_t row_len = uint64_t(std::max<int64_t>(t.ne[0], 1));
    std::string where;
    if (bad->is_block) {
        const uint64_t per_block = dtype_traits(t.type)->block_size;
        const uint64_t first = bad->index * per_block;
        where = fmt::format("block {} (elements {}..{}, row {}) has a {} scale {}", bad->index, first,
                            first + per_block - 1, first / row_len, value, bad->field);
    } else {
        where = fmt::format("element {} (row {}, column {}) is {}", bad->index, bad->index / row_len,
                            bad->index % row_len, value);
    }
    return Error::format("{}: tensor '{}' ({}): {}; the weights are damaged. Use --no-check-weights (or "
                         "model.check_weights = false) to load them anyway",
                         path, t.name, t.dtype, where);
}

}  // namespace tdm
