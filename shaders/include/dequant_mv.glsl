// SPDX-License-Identifier: Apache-2.0
// dequant_mv.glsl: the weight pieces of dequant.glsl in scaled form, for matmul_mv.comp.
// mv_piece(row, unit, piece, q) returns the piece's 32 weights as quants q (8 vec4, in
// element order) and their scales s, so that the piece's dot product with x is
//   s.x * dot(q[0..3], x[0..3]) + s.y * dot(q[4..7], x[4..7]) + s.z * sum(x)
// of which each type keeps only the terms it has (the kernel reads the defines):
//   MV_PLAIN       F32, F16, BF16: q are the weights, no scale (s unused).
//   MV_TWO_SCALES  Q6_K: each 16-weight half has its own scale (s.x, s.y); every other
//                  quantized type has one scale s.x per piece.
//   MV_MIN         Q4_K, Q5_K, Q5_1: an offset per piece, w = d * q + m, whose
//                  contribution is m * sum(x) (s.z = m).
// The block scale is thus applied once per piece (16 or 32 weights) instead of once per
// weight as dequant_piece does. Not here: the unit layout (UNIT, PIECES, piece_offset)
// and the plain types' partial last unit (dequant4), which are dequant.glsl's.
#include "dequant.glsl"

#if defined(WTYPE_F32) || defined(WTYPE_F16) || defined(WTYPE_BF16)
#define MV_PLAIN
vec4 mv_piece(uint row, uint u, uint pc, out vec4 q[8]) {
    dequant_piece(row, u, pc, q);
    return vec4(1.0);
}
#elif defined(WTYPE_Q8_0) || defined(WTYPE_Q4_0) || defined(WTYPE_Q5_0)
vec4 mv_piece(uint row, uint u, uint pc, out vec4 q[8]) { return vec4(raw_piece(row, u, pc, q), 0.0, 0.0, 0.0); }
#elif defined(WTYPE_Q5_1)
#define MV_MIN
vec4 mv_piece(uint row, uint u, uint pc, out vec4 q[8]) {
    const uint f = q5_quants(row, u, q), fpr = q5_fields_per_row();
    return vec4(load_row_scale(S_OFF, row, fpr, f), 0.0, load_row_scale(S_OFF, row, fpr, f + 1), 0.0);
}
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
#define MV_MIN
vec4 mv_piece(uint row, uint u, uint pc, out vec4 q[8]) {
    float m1;
    const float d1 = k4_raw_piece(row, u, pc, q, m1);
    return vec4(d1, 0.0, -m1, 0.0);
}
#elif defined(WTYPE_Q6_K)
#define MV_TWO_SCALES
vec4 mv_piece(uint row, uint u, uint pc, out vec4 q[8]) { return vec4(q6_raw_piece(row, u, pc, q), 0.0, 0.0); }
#endif

// The piece's contribution to one token's dot product (xv: the token's 32 x values).
float mv_dot(const vec4 q[8], vec4 s, const vec4 xv[8]) {
    float a = 0.0;
    [[unroll]] for (uint j = 0; j < 4; ++j) a += dot(q[j], xv[j]);
#if defined(MV_TWO_SCALES)
    float b = 0.0;
    [[unroll]] for (uint j = 4; j < 8; ++j) b += dot(q[j], xv[j]);
    float r = s.x * a + s.y * b;
#else
    [[unroll]] for (uint j = 4; j < 8; ++j) a += dot(q[j], xv[j]);
#if defined(MV_PLAIN)
    float r = a;
#else
    float r = s.x * a;
#endif
#endif
#if defined(MV_MIN)
    float sx = 0.0;
    [[unroll]] for (uint j = 0; j < 8; ++j) sx += dot(xv[j], vec4(1.0));
    r += s.z * sx;
#endif
    return r;
}
