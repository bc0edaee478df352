// SPDX-License-Identifier: Apache-2.0
// dequant.glsl: the weight types, as 32-element pieces. For each WTYPE_*:
// UNIT elements form one unit (a quant block or group of blocks that shares a
// header), PIECES 32-element pieces per unit, piece_offset(pc) the first element
// of piece pc within its unit, and dequant_piece(row, unit, piece, w) the 32
// weights of that piece as 8 vec4 (in element order). Reads the weight planes of
// weights.glsl; needs push constants K, w_off, s_off.
// Layouts: host/graph/weight_layout.h. Formulas: docs/formats/quants.md (f32 arithmetic
// in llama.cpp's order: (d * sc) * q - (dmin * m)).
// Plain types (F32, F16, BF16) also define PLAIN_TAIL and dequant4(row, k), the 4
// weights at columns k..k+3: their rows need only be 16 bytes long, so K may end
// in a partial 32-element unit that the matmuls finish 4 columns at a time.
// W_OFF and S_OFF: the weight's first texel and scale field, the push constants w_off
// and s_off unless the kernel defines them (a grouped matmul: one per weight).
#ifndef W_OFF
#define W_OFF p.w_off
#define S_OFF p.s_off
#endif
#if defined(WTYPE_F32)
const uint UNIT = 32, PIECES = 1;
void dequant_piece(uint row, uint u, uint pc, out vec4 w[8]) {
    const uint base = W_OFF + row * (p.K / 4) + u * 8;
    [[unroll]] for (uint j = 0; j < 8; ++j) w[j] = uintBitsToFloat(load_w(base + j));
}
#define PLAIN_TAIL
vec4 dequant4(uint row, uint k) { return uintBitsToFloat(load_w(W_OFF + row * (p.K / 4) + k / 4)); }
#elif defined(WTYPE_F16) || defined(WTYPE_BF16)
const uint UNIT = 32, PIECES = 1;
void dequant_piece(uint row, uint u, uint pc, out vec4 w[8]) {
    const uint base = W_OFF + row * (p.K / 8) + u * 4;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        const uvec4 q = load_w(base + j);
#if defined(WTYPE_F16)
        w[2 * j] = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
        w[2 * j + 1] = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
#else
        w[2 * j] = uintBitsToFloat(uvec4(q.x << 16, q.x & 0xffff0000u, q.y << 16, q.y & 0xffff0000u));
        w[2 * j + 1] = uintBitsToFloat(uvec4(q.z << 16, q.z & 0xffff0000u, q.w << 16, q.w & 0xffff0000u));
#endif
    }
}
#define PLAIN_TAIL
vec4 dequant4(uint row, uint k) {
    const uvec4 q = load_w(W_OFF + row * (p.K / 8) + k / 8);
    const uvec2 h = (k & 4u) == 0u ? q.xy : q.zw;
#if defined(WTYPE_F16)
    return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
#else
    return uintBitsToFloat(uvec4(h.x << 16, h.x & 0xffff0000u, h.y << 16, h.y & 0xffff0000u));
#endif
}
#elif defined(WTYPE_Q8_0)
const uint UNIT = 32, PIECES = 1;
void dequant_piece(uint row, uint u, uint pc, out vec4 w[8]) {
    const uint nb = p.K / 32;
    const uvec4 q0 = load_row_w(W_OFF, row, 2 * nb, 2 * u), q1 = load_row_w(W_OFF, row, 2 * nb, 2 * u + 1);
    const float d = load_row_scale(S_OFF, row, nb, u);
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        w[j] = vec4(i8x4(q0[j])) * d;
        w[4 + j] = vec4(i8x4(q1[j])) * d;
    }
}
// The piece's raw quants and its one scale d (w = d * q): lets a matmul multiply
// by d once per dot product instead of once per weight.
#define HAS_PIECE_SCALE
float raw_piece(uint row, uint u, uint pc, out vec4 q[8]) {
    const uint nb = p.K / 32;
    const uvec4 q0 = load_row_w(W_OFF, row, 2 * nb, 2 * u), q1 = load_row_w(W_OFF, row, 2 * nb, 2 * u + 1);
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        q[j] = vec4(i8x4(q0[j]));
        q[4 + j] = vec4(i8x4(q1[j]));
    }
    return load_row_scale(S_OFF, row, nb, u);
}
#elif defined(WTYPE_Q4_0)
const uint UNIT = 32, PIECES = 1;
#define HAS_PIECE_SCALE
float raw_piece(uint row, uint u, uint pc, out vec4 q[8]) {
    const uint nb = p.K / 32;
    const uvec4 v = load_row_w(W_OFF, row, nb, u);
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        q[j] = lo4(v[j]) - 8.0;
        q[4 + j] = hi4(v[j]) - 8.0;
    }
    return load_row_scale(S_OFF, row, nb, u);
}
void dequant_piece(uint row, uint u, uint pc, out vec4 w[8]) {
    const uint nb = p.K / 32;
    const uvec4 q = load_row_w(W_OFF, row, nb, u);
    const float d = load_row_scale(S_OFF, row, nb, u);
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        w[j] = (lo4(q[j]) - 8.0) * d;      // weights 4j .. 4j+3
        w[4 + j] = (hi4(q[j]) - 8.0) * d;  // weights 16+4j ..
    }
}
#elif defined(WTYPE_Q5_0) || defined(WTYPE_Q5_1)
// One block per unit: its nibbles are one main-plane texel, its 16-bit fields
// (d, [m,] qh low half, qh high half) sit in the scale plane.
const uint UNIT = 32, PIECES = 1;
// Scale-plane fields per row.
uint q5_fields_per_row() { return (p.K / 32) * Q5_FIELDS; }
// The 5-bit quants (0..31) of block u of `row`, in element order; returns the
// index within the row of the block's first scale-plane field.
uint q5_quants(uint row, uint u, out vec4 q[8]) {
    const uint f = u * Q5_FIELDS;
    const uint qh = q5_high_bits(S_OFF, row, q5_fields_per_row(), f);
    const uvec4 v = load_row_w(W_OFF, row, p.K / 32, u);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        const uint lo = qh >> (4 * i), hi = qh >> (16 + 4 * i);  // fifth bits of weights 4i.., 16+4i..
        q[i] = lo4(v[i]) + 16.0 * vec4(uvec4(lo, lo >> 1, lo >> 2, lo >> 3) & 1u);
        q[4 + i] = hi4(v[i]) + 16.0 * vec4(uvec4(hi, hi >> 1, hi >> 2, hi >> 3) & 1u);
    }
    return f;
}
#if defined(WTYPE_Q5_0)
#define HAS_PIECE_SCALE
float raw_piece(uint row, uint u, uint pc, out vec4 q[8]) {
    const uint f = q5_quants(row, u, q);
    [[unroll]] for (uint j = 0; j < 8; ++j) q[j] -= 16.0;
    return load_row_scale(S_OFF, row, q5_fields_per_row(), f);
}
void dequant_piece(uint row, uint u, uint pc, out vec4 w[8]) {
    const float d = raw_piece(row, u, pc, w);
    [[unroll]] for (uint j = 0; j < 8; ++j) w[j] *= d;  // (q - 16) * d
}
#else
void dequant_piece(uint row, uint u, uint pc, out vec4 w[8]) {
    const uint f = q5_quants(row, u, w), fpr = q5_fields_per_row();
    const float d = load_row_scale(S_OFF, row, fpr, f), m = load_row_scale(S_OFF, row, fpr, f + 1);
    [[unroll]] for (uint j = 0; j < 8; ++j) w[j] = w[j] * d + m;
}
#endif
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
// unit = 64 weights: sub-blocks 2c (low nibbles, piece 0) and 2c+1 (high, piece 1)
// of super-block b, where u = 4b + c.
#if defined(WTYPE_Q4_K)
const uint TEX = 9, QS = 1;   // header, qs[128]
#else
const uint TEX = 11, QS = 3;  // header, qh[32], qs[128]
#endif
const uint UNIT = 64, PIECES = 2;
// The piece's quants q (0..15, or 0..31 for Q5_K) and its sub-block scale d1 and min m1
// (w = d1 * q - m1): lets a matmul apply them once per piece (matmul_mv.comp).
float k4_raw_piece(uint row, uint u, uint pc, out vec4 q[8], out float m1) {
    const uint b = u / 4, c = u % 4, j = 2 * c + pc;  // j: sub-block
    const uint tpr = (p.K / 256) * TEX, base = b * TEX;  // texels per row, the block's first
    const uvec4 h = load_row_w(W_OFF, row, tpr, base);
    const float d = half_lo(h.x), dmin = half_hi(h.x);
    uint sc, m;  // get_scale_min_k4(j); scales[i] = byte 4 + i of the header
    if (j < 4) {
        sc = byte_of(h, 4 + j) & 63u;
        m = byte_of(h, 8 + j) & 63u;
    } else {
        sc = (byte_of(h, 8 + j) & 15u) | ((byte_of(h, j) >> 6) << 4);
        m = (byte_of(h, 8 + j) >> 4) | ((byte_of(h, 4 + j) >> 6) << 4);
    }
    m1 = dmin * float(m);
    const uvec4 qa = load_row_w(W_OFF, row, tpr, base + QS + 2 * c);
    const uvec4 qb = load_row_w(W_OFF, row, tpr, base + QS + 2 * c + 1);
#if defined(WTYPE_Q5_K)
    const uvec4 qh0 = load_row_w(W_OFF, row, tpr, base + 1), qh1 = load_row_w(W_OFF, row, tpr, base + 2);
#endif
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        q[i] = pc == 0 ? lo4(qa[i]) : hi4(qa[i]);
        q[4 + i] = pc == 0 ? lo4(qb[i]) : hi4(qb[i]);
#if defined(WTYPE_Q5_K)
        const uint wa = qh0[i] >> j, wb = qh1[i] >> j;  // bit j of qh[l]
        q[i] += 16.0 * vec4(uvec4(wa, wa >> 8, wa >> 16, wa >> 24) & 1u);
        q[4 + i] += 16.0 * vec4(uvec4(wb, wb >> 8, wb >> 16, wb >> 24) & 1u);
#endif
    }
    return d * float(sc);
}
void dequant_piece(uint row, uint u, uint pc, out vec4 w[8]) {
    float m1;
    const float d1 = k4_raw_piece(row, u, pc, w, m1);
    [[unroll]] for (uint i = 0; i < 8; ++i) w[i] = d1 * w[i] - m1;
}
#elif defined(WTYPE_Q6_K)
// unit = 128 weights: half hh of super-block b (u = 2b + hh); piece g = 0..3.
// Main plane per block: ql[128] (texels 0-7), qh[64] (8-11), scales[16] (12).
const uint TEX = 13, UNIT = 128, PIECES = 4;
// The piece's quants q - 32 (-32..31) and the scales of its two 16-weight halves
// (w[0..3] = da * q[0..3], w[4..7] = db * q[4..7]): lets a matmul apply them once per half.
vec2 q6_raw_piece(uint row, uint u, uint g, out vec4 q[8]) {
    const uint b = u / 2, hh = u % 2;
    const uint nb = p.K / 256, tpr = nb * TEX, base = b * TEX;  // texels per row, the block's first
    const float d = load_row_scale(S_OFF, row, nb, b);
    const uvec4 scv = load_row_w(W_OFF, row, tpr, base + 12);
    const uint qlt = 4 * hh + 2 * (g & 1u);  // texel of ql[64hh + 32(g&1)]
    const uvec4 qa = load_row_w(W_OFF, row, tpr, base + qlt), qb = load_row_w(W_OFF, row, tpr, base + qlt + 1);
    const uvec4 qh0 = load_row_w(W_OFF, row, tpr, base + 8 + 2 * hh);
    const uvec4 qh1 = load_row_w(W_OFF, row, tpr, base + 9 + 2 * hh);
    const uint is = 8 * hh + 2 * g;  // scale index of weights l = 0..15
    const float da = d * float(bitfieldExtract(int(scv[is >> 2]), int((is & 3u) * 8u), 8));
    const float db = d * float(bitfieldExtract(int(scv[(is + 1) >> 2]), int(((is + 1) & 3u) * 8u), 8));
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        const vec4 la = g < 2 ? lo4(qa[i]) : hi4(qa[i]);
        const vec4 lb = g < 2 ? lo4(qb[i]) : hi4(qb[i]);
        const uint ha = qh0[i] >> (2 * g), hb = qh1[i] >> (2 * g);
        const vec4 hia = vec4(uvec4(ha, ha >> 8, ha >> 16, ha >> 24) & 3u);
        const vec4 hib = vec4(uvec4(hb, hb >> 8, hb >> 16, hb >> 24) & 3u);
        q[i] = la + 16.0 * hia - 32.0;
        q[4 + i] = lb + 16.0 * hib - 32.0;
    }
    return vec2(da, db);
}
void dequant_piece(uint row, uint u, uint g, out vec4 w[8]) {
    const vec2 s = q6_raw_piece(row, u, g, w);
    [[unroll]] for (uint i = 0; i < 4; ++i) {
        w[i] = s.x * w[i];
        w[4 + i] = s.y * w[4 + i];
    }
}
#else
#error "matmul.comp: define one WTYPE_*"
#endif

// First element (within the unit) of 32-element piece pc.
uint piece_offset(uint pc) {
#if defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
    return 32 * pc;
#elif defined(WTYPE_Q6_K)
    return 32 * pc;
#else
    return 0;
#endif
}

