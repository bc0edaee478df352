/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/weight_layout.h: how a weight matrix is laid out in device memory.
//
// Kernels read weights as 16-byte texels (RGBA32UI texel views or uvec4 storage
// loads), so every row of the "main plane" must be a whole number of 16-byte
// units. GGUF blocks of Q4_K (144 B) and Q5_K (176 B) already are; Q8_0 (34 B),
// Q4_0 (18 B) and Q6_K (210 B) are not, because of their 2-byte f16 scale `d`.
// Those are split at load time: the rest of the block goes to the main plane
// (32, 16, 208 B) and `d` to a separate "scale plane" of f16 values. The split
// is lossless and keeps the total size equal to the file's; only row tiles
// (below) add padding, at most 63 rows per chunk. Q5_0 (22 B) and Q5_1 (24 B) keep
// their 16 bytes of nibbles qs in the main plane (one texel per block) and move
// the rest of the block, all 16-bit fields (d, for Q5_1 m, then the two halves
// of the 32-bit qh), to the scale plane: 3 or 4 u16 per block, in file order.
// F32/F16/BF16 rows are kept as is.
// Row tiles: on the texel path (CPU devices) the planes of quantized types are
// stored in tiles of kWeightRowTile rows, element-major within a tile (element i
// of every row of the tile, then element i + 1; an element is a 16-byte texel of
// the main plane or a 16-bit field of the scale plane), the last tile padded to
// full height. A rows-per-lane matmul workgroup walks 64 rows together; row
// after row those are 64 streams a row apart, which the CPU's caches and
// prefetchers follow poorly: reading the same weights hot from cache ran a
// Q8_0 matvec 1.5x faster (docs/perf-notes/lavapipe-matmul.md, "Row tiles"). Tiled, each step
// of the walk reads one contiguous span. Kernels index planes with
// plane_index() (shaders/include/weights.glsl); storage-buffer planes (GPUs)
// stay row after row.
// Not here: uploading (weight.h), dequantization formulas (shaders, quant.h).
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"
#include "common/error.h"

namespace tdm {

// Bytes of nibbles (qs) in one Q5_0/Q5_1 block: its main-plane share.
constexpr uint32_t kQ5QuantBytes = 16;
// Rows per tile of a tiled weight: ROW_TILE in shaders/include/weights.glsl.
constexpr int64_t kWeightRowTile = 64;

struct WeightLayout {
    DType type = DType::F32;
    int64_t cols = 0;               // ne0
    int64_t rows = 0;               // ne1 * ne2 * ne3
    uint64_t main_row_bytes = 0;    // bytes of one row in the main plane
    uint64_t scale_row_bytes = 0;   // bytes of one row in the scale plane (0: none); 16-bit fields
    bool texel_rows = false;        // main rows are whole 16-byte texels (matmul/get_rows usable)
    int64_t row_tile = 0;           // rows per tile in device memory; 0: row after row (see above)
};

// Layout of a [rows x cols] weight of `type`. Error if cols is not a multiple of
// the block size.
Result<WeightLayout> weight_layout(DType type, int64_t cols, int64_t rows);

// Splits `n_rows` GGUF-layout rows starting at `src` into the two planes.
// main_dst receives n_rows * main_row_bytes, scale_dst n_rows * scale_row_bytes.
void repack_rows(const WeightLayout& l, const uint8_t* src, int64_t n_rows, uint8_t* main_dst,
                 uint8_t* scale_dst);

// Whether a weight of this layout is stored in row tiles on a device that reads
// weights through texel views: quantized types with 16-byte main rows.
bool tiles_rows(const WeightLayout& l);

// Rows that n_rows rows take in device memory: whole tiles when l.row_tile is set.
int64_t stored_rows(const WeightLayout& l, int64_t n_rows);

// Moves n_rows rows, repacked row after row (repack_rows; scale_rows unused when
// the type has no scale plane), to rows [row0, row0 + n_rows) of a chunk stored
// in tiles of l.row_tile rows.
void tile_rows(const WeightLayout& l, const uint8_t* main_rows, const uint8_t* scale_rows, int64_t row0,
               int64_t n_rows, uint8_t* main_chunk, uint8_t* scale_chunk);

}  // namespace tdm
