// SPDX-License-Identifier: Apache-2.0
// host/graph/weight_layout.cpp
#include "graph/weight_layout.h"

#include <cstring>

namespace tdm {

Result<WeightLayout> weight_layout(DType type, int64_t cols, int64_t rows) {
    const DTypeTraits* tr = dtype_traits(static_cast<uint32_t>(type));
    if (!tr) return Error::format("unsupported weight type id {}", static_cast<uint32_t>(type));
    if (cols <= 0 || rows <= 0) return Error::format("weight of shape {}x{} is empty", rows, cols);
    if (cols % tr->block_size != 0)
        return Error::format("{} weight row of {} elements is not a multiple of the block size {}", tr->name,
                             cols, tr->block_size);
    WeightLayout l;
    l.type = type;
    l.cols = cols;
    l.rows = rows;
    const uint64_t blocks = uint64_t(cols) / tr->block_size;
    switch (type) {
        case DType::Q8_0:
        case DType::Q4_0:
        case DType::Q6_K:
            l.main_row_bytes = blocks * (tr->block_bytes - 2);
            l.scale_row_bytes = blocks * 2;
            break;
        case DType::Q5_0:
        case DType::Q5_1:
            l.main_row_bytes = blocks * kQ5QuantBytes;
            l.scale_row_bytes = blocks * (tr->block_bytes - kQ5QuantBytes);
            break;
        default:
            l.main_row_bytes = blocks * tr->block_bytes;
            l.scale_row_bytes = 0;
            break;
    }
    l.texel_rows = l.main_row_bytes % 16 == 0;
    return l;
}

void repack_rows(const WeightLayout& l, const uint8_t* src, int64_t n_rows, uint8_t* main_dst,
                 uint8_t* scale_dst) {
    const DTypeTraits& tr = traits(l.type);
    if (l.scale_row_bytes == 0) {
        std::memcpy(main_dst, src, size_t(n_rows) * l.main_row_bytes);
        return;
    }
    const uint64_t n_blocks = uint64_t(n_rows) * (uint64_t(l.cols) / tr.block_size);
    if (l.type == DType::Q5_0 || l.type == DType::Q5_1) {
        // The header (d[, m], qh) is the block's start; the 16 bytes of qs end it.
        const size_t header = tr.block_bytes - kQ5QuantBytes;
        for (uint64_t b = 0; b < n_blocks; ++b) {
            const uint8_t* blk = src + b * tr.block_bytes;
            std::memcpy(scale_dst + b * header, blk, header);
            std::memcpy(main_dst + b * kQ5QuantBytes, blk + header, kQ5QuantBytes);
        }
        return;
    }
    // d sits at the start of Q8_0/Q4_0 blocks and at the end (offset 208) of Q6_K.
    const size_t d_at = l.type == DType::Q6_K ? 208 : 0;
    const size_t rest_at = l.type == DType::Q6_K ? 0 : 2;
    const size_t rest = tr.block_bytes - 2;
    for (uint64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* blk = src + b * tr.block_bytes;
        std::memcpy(main_dst + b * rest, blk + rest_at, rest);
        std::memcpy(scale_dst + b * 2, blk + d_at, 2);
    }
}

bool tiles_rows(const WeightLayout& l) {
    return l.texel_rows && traits(l.type).block_size > 1;  // F32/F16/BF16 stay row after row
}

int64_t stored_rows(const WeightLayout& l, int64_t n_rows) {
    return l.row_tile ? (n_rows + l.row_tile - 1) / l.row_tile * l.row_tile : n_rows;
}

void tile_rows(const WeightLayout& l, const uint8_t* main_rows, const uint8_t* scale_rows, int64_t row0,
               int64_t n_rows, uint8_t* main_chunk, uint8_t* scale_chunk) {
    const uint64_t tile = uint64_t(l.row_tile);
    const uint64_t texels = l.main_row_bytes / 16, fields = l.scale_row_bytes / 2;
    for (int64_t i = 0; i < n_rows; ++i) {
        const uint64_t r = uint64_t(row0 + i), first = r / tile * tile, in_tile = r % tile;
        uint8_t* m = main_chunk + (first * texels + in_tile) * 16;
        const uint8_t* src = main_rows + uint64_t(i) * l.main_row_bytes;
        for (uint64_t t = 0; t < texels; ++t) std::memcpy(m + t * tile * 16, src + t * 16, 16);
        if (!fields) continue;
        uint8_t* sc = scale_chunk + (first * fields + in_tile) * 2;
        const uint8_t* ssrc = scale_rows + uint64_t(i) * l.scale_row_bytes;
        for (uint64_t f = 0; f < fields; ++f) std::memcpy(sc + f * tile * 2, ssrc + f * 2, 2);
    }
}

}  // namespace tdm
