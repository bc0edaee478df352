// SPDX-License-Identifier: Apache-2.0
// get_rows.comp: y[t][:] = dequant(W[ids[t]][:]) (embedding lookup), any weight
// type, one workgroup per output row; lanes take 4 consecutive columns at a time.
// Rows outside [row_begin, row_begin + n_rows) are left to another dispatch
// (weights larger than one binding are split in row chunks).
// Variants: get_rows_<wtype>_<tex|buf>, same weight planes as matmul.comp.
// Dispatch: x = n_tokens.
#version 450
#include "common.glsl"
layout(local_size_x_id = 0) in;

#define W_BINDING 0
#define S_BINDING 1
#include "weights.glsl"
layout(binding = 2, std430) readonly buffer IdBuf { int ids[]; };
layout(binding = 3, std430) writeonly buffer YBuf { vec4 y4[]; };

layout(push_constant) uniform Params {
    uint K;  // columns
    uint n_tokens;
    uint ids_off;
    uint y_off, y_stride;  // elements, multiples of 4
    uint w_off, s_off;
    uint row_begin, n_rows;
} p;

// 4 consecutive weights k..k+3 (k % 4 == 0) of chunk-relative row r.
vec4 load4(uint r, uint k) {
#if defined(WTYPE_F32)
    return uintBitsToFloat(load_w(p.w_off + r * (p.K / 4) + k / 4));
#elif defined(WTYPE_F16)
    const uvec4 q = load_w(p.w_off + r * (p.K / 8) + k / 8);
    return (k & 4u) == 0 ? vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y))
                         : vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
#elif defined(WTYPE_BF16)
    const uvec4 q = load_w(p.w_off + r * (p.K / 8) + k / 8);
    const uvec2 h = (k & 4u) == 0 ? q.xy : q.zw;
    return uintBitsToFloat(uvec4(h.x << 16, h.x & 0xffff0000u, h.y << 16, h.y & 0xffff0000u));
#elif defined(WTYPE_Q8_0)
    const uint nb = p.K / 32, b = k / 32, j = (k % 32) / 4;
    const uvec4 q = load_row_w(p.w_off, r, 2 * nb, b * 2 + j / 4);
    return vec4(i8x4(q[j % 4])) * load_row_scale(p.s_off, r, nb, b);
#elif defined(WTYPE_Q4_0)
    const uint nb = p.K / 32, b = k / 32, j = k % 32;
    const uvec4 q = load_row_w(p.w_off, r, nb, b);
    const float d = load_row_scale(p.s_off, r, nb, b);
    return ((j < 16 ? lo4(q[j / 4]) : hi4(q[(j - 16) / 4])) - 8.0) * d;
#elif defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
    const uint nb = p.K / 32, b = k / 32, j = k % 32;
    const uint fpr = nb * Q5_FIELDS, f = b * Q5_FIELDS;  // fields per row, the block's first
    const uvec4 v = load_row_w(p.w_off, r, nb, b);
    const vec4 nib = j < 16 ? lo4(v[j / 4]) : hi4(v[(j - 16) / 4]);
    const uint h = q5_high_bits(p.s_off, r, fpr, f) >> j;  // weights j..j+3 own bits j..j+3
    const vec4 q = nib + 16.0 * vec4(uvec4(h, h >> 1, h >> 2, h >> 3) & 1u);
#if defined(WTYPE_Q5_0)
    return (q - 16.0) * load_row_scale(p.s_off, r, fpr, f);
#else
    return q * load_row_scale(p.s_off, r, fpr, f) + load_row_scale(p.s_off, r, fpr, f + 1);
#endif
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
#if defined(WTYPE_Q4_K)
    const uint TEX = 9, QS = 1;
#else
    const uint TEX = 11, QS = 3;
#endif
    const uint nb = p.K / 256, b = k / 256, t = k % 256;
    const uint tpr = nb * TEX, base = b * TEX;  // texels per row, the block's first
    const uvec4 h = load_row_w(p.w_off, r, tpr, base);
    const uint s = t / 32;  // sub-block
    uint sc, m;
    if (s < 4) {
        sc = byte_of(h, 4 + s) & 63u;
        m = byte_of(h, 8 + s) & 63u;
    } else {
        sc = (byte_of(h, 12 + s - 4) & 15u) | ((byte_of(h, 4 + s - 4) >> 6) << 4);
        m = (byte_of(h, 12 + s - 4) >> 4) | ((byte_of(h, 8 + s - 4) >> 6) << 4);
    }
    const uint l = t % 32;                      // position in the 32-byte qs chunk
    const uvec4 q = load_row_w(p.w_off, r, tpr, base + QS + 2 * (t / 64) + l / 16);
    const uint w = q[(l % 16) / 4];
    vec4 v = (s % 2 == 0) ? lo4(w) : hi4(w);
#if defined(WTYPE_Q5_K)
    const uvec4 qh = load_row_w(p.w_off, r, tpr, base + 1 + l / 16);
    const uint hw = qh[(l % 16) / 4];
    v += 16.0 * vec4(uvec4(hw >> s, hw >> (8 + s), hw >> (16 + s), hw >> (24 + s)) & 1u);
#endif
    return (half_lo(h.x) * float(sc)) * v - half_hi(h.x) * float(m);
#elif defined(WTYPE_Q6_K)
    const uint nb = p.K / 256, b = k / 256, t = k % 256;
    const uint tpr = nb * 13, base = b * 13;  // texels per row, the block's first
    const float d = load_row_scale(p.s_off, r, nb, b);
    const uint hh = t / 128, g = (t % 128) / 32, l = t % 32;
    const uint qlb = 64 * hh + 32 * (g & 1u) + l;  // byte of ql
    const uint ql = load_row_w(p.w_off, r, tpr, base + qlb / 16)[(qlb % 16) / 4];
    const vec4 low = g < 2 ? lo4(ql) : hi4(ql);
    const uint qhb = 32 * hh + l;
    const uint qh = load_row_w(p.w_off, r, tpr, base + 8 + qhb / 16)[(qhb % 16) / 4] >> (2 * g);
    const vec4 high = vec4(uvec4(qh, qh >> 8, qh >> 16, qh >> 24) & 3u);
    const uint is = t / 16;
    const uvec4 scv = load_row_w(p.w_off, r, tpr, base + 12);
    const float sc = float(bitfieldExtract(int(scv[is / 4]), int((is % 4) * 8), 8));
    return (d * sc) * (low + 16.0 * high - 32.0);
#else
#error "get_rows.comp: define one WTYPE_*"
#endif
}

void main() {
    const uint t = gl_WorkGroupID.x;
    if (t >= p.n_tokens) return;
    const int id = ids[p.ids_off + t];
    if (id < int(p.row_begin) || id >= int(p.row_begin + p.n_rows)) return;
    const uint r = uint(id) - p.row_begin;
    for (uint k = 4 * gl_LocalInvocationID.x; k < p.K; k += 4 * gl_WorkGroupSize.x)
        y4[(p.y_off + t * p.y_stride + k) / 4] = load4(r, k);
}
