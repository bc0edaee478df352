// SPDX-License-Identifier: Apache-2.0
// weights.glsl: the two weight access paths (docs/lavapipe.md §3-4).
// WEIGHTS_TEXEL: uniform texel buffers (RGBA32UI main plane, R16UI scale plane of
//   16-bit fields, host/graph/weight_layout.h):
//   3-5x faster than storage-buffer loads on lavapipe.
// otherwise: storage buffers, the normal path on GPUs.
// Before including: define W_BINDING and S_BINDING (binding numbers).
#ifdef WEIGHTS_TEXEL
layout(binding = W_BINDING) uniform usamplerBuffer w_tex;
layout(binding = S_BINDING) uniform usamplerBuffer s_tex;
uvec4 load_w(uint i) { return texelFetch(w_tex, int(i)); }
// 16-bit field i of the scale plane, raw (Q5_0/Q5_1 keep their qh halves there)
uint load_scale_bits(uint i) { return texelFetch(s_tex, int(i)).x; }
#else
layout(binding = W_BINDING, std430) readonly buffer WeightBuf { uvec4 w_buf[]; };
layout(binding = S_BINDING, std430) readonly buffer ScaleBuf { uint s_buf[]; };
uvec4 load_w(uint i) { return w_buf[i]; }
uint load_scale_bits(uint i) { return (s_buf[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu; }
#endif
// f16 scale i of the scale plane
float load_scale(uint i) { return unpackHalf2x16(load_scale_bits(i)).x; }

// Element i (a texel of the main plane, a 16-bit field of the scale plane) of a
// row, in a plane of per_row elements per row. On the texel path the planes of
// quantized types are stored in tiles of ROW_TILE rows, element-major within a
// tile (host/graph/weight_layout.h, kWeightRowTile): the rows a workgroup walks
// together are then read from one contiguous span instead of 64 streams a row
// apart, which CPU caches and prefetchers follow far better.
#if defined(WEIGHTS_TEXEL) && !defined(WTYPE_F32) && !defined(WTYPE_F16) && !defined(WTYPE_BF16)
const uint ROW_TILE = 64u;
uint plane_index(uint row, uint per_row, uint i) {
    return (row / ROW_TILE) * (ROW_TILE * per_row) + i * ROW_TILE + row % ROW_TILE;
}
#else
uint plane_index(uint row, uint per_row, uint i) { return row * per_row + i; }
#endif
// Texel t of `row` in a main plane that starts at texel `off`.
uvec4 load_row_w(uint off, uint row, uint per_row, uint t) { return load_w(off + plane_index(row, per_row, t)); }
// Field f of `row` in a scale plane that starts at field `off`.
uint load_row_bits(uint off, uint row, uint per_row, uint f) {
    return load_scale_bits(off + plane_index(row, per_row, f));
}
float load_row_scale(uint off, uint row, uint per_row, uint f) {
    return unpackHalf2x16(load_row_bits(off, row, per_row, f)).x;
}

#if defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
// Scale-plane fields per Q5 block: d, [m,] then the low and high halves of qh.
#if defined(WTYPE_Q5_0)
const uint Q5_FIELDS = 3;
#else
const uint Q5_FIELDS = 4;
#endif
// qh of the block whose fields start at field f of `row` (fields per row: per_row):
// bit t = fifth bit of weight t.
uint q5_high_bits(uint off, uint row, uint per_row, uint f) {
    return load_row_bits(off, row, per_row, f + Q5_FIELDS - 2) |
           (load_row_bits(off, row, per_row, f + Q5_FIELDS - 1) << 16);
}
#endif
