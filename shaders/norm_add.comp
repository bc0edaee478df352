// SPDX-License-Identifier: Apache-2.0
// norm_add.comp: a post-norm residual step in one dispatch, one workgroup per row:
//   s = (x + rms(f) * W1) [* sc]                       (binding 5: the new residual)
//   y = rms(s) * W2                                    (binding 6, NEXT_NORM != 0)
// the fusion of rms_norm -> add [-> mul by a one-element weight] [-> rms_norm] that
// Gemma 4 runs after each branch (host/graph/fusion.cpp forms it; host/ops/norm_add.cpp
// records it). W: none, w or (1 + w) (W1MODE, and NEXT_NORM = 1 + mode of W2).
// Bit for bit the unfused ops: each sum of squares is norm.comp's (the same strided loop
// over the same local size into the same workgroup_sum), rms(f) * W1 is formed in
// norm.comp's order, the add and the scaling are the f32 operations elementwise.comp
// does, and y is norm.comp's over the s written here (recomputed, not re-read).
// Batch-invariant: a row's arithmetic never depends on the other rows.
// Dispatch: x = rows (up to 65535), y = rows / 65535 + 1.
#version 450
#include "reduce.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint W1MODE = 1;    // tdm_norm_weight of rms(f)
layout(constant_id = 2) const uint SCALE = 0;     // 1: times the one-element sc
layout(constant_id = 3) const uint NEXT_NORM = 0; // 0: no y; else 1 + tdm_norm_weight of rms(s)

layout(binding = 0, std430) readonly buffer FBuf { float f[]; };
layout(binding = 1, std430) readonly buffer XBuf { float x[]; };
layout(binding = 2, std430) readonly buffer W1Buf { float w1[]; };
layout(binding = 3, std430) readonly buffer ScBuf { float sc[]; };
layout(binding = 4, std430) readonly buffer W2Buf { float w2[]; };
layout(binding = 5, std430) writeonly buffer SBuf { float s[]; };
layout(binding = 6, std430) writeonly buffer YBuf { float y[]; };

layout(push_constant) uniform Params {
    uint rows, cols;
    uint f_off, f_stride, x_off, x_stride;
    uint s_off, s_stride, y_off, y_stride;
    float eps1, eps2;
} p;

// The new residual at column c of the row (fb, xb: the row's f and x). precise: the
// unfused add reads rms(f) * W1 rounded to f32 from memory, so the product must not be
// contracted into the add (an FMA on GPUs).
float residual(uint fb, uint xb, uint c, float scale1) {
    precise float n = f[fb + c] * scale1;
    if (W1MODE == 1) n *= w1[c];
    if (W1MODE == 2) n *= 1.0 + w1[c];
    precise float v = x[xb + c] + n;
    if (SCALE != 0) v = v * sc[0];
    return v;
}

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
    if (row >= p.rows) return;
    const uint fb = p.f_off + row * p.f_stride, xb = p.x_off + row * p.x_stride;
    float ss = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        const float v = f[fb + c];
        ss += v * v;
    }
    ss = workgroup_sum(ss);
    const float scale1 = inversesqrt(ss / float(p.cols) + p.eps1);
    const uint sb = p.s_off + row * p.s_stride;
    float ss2 = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        const float v = residual(fb, xb, c, scale1);
        s[sb + c] = v;
        ss2 += v * v;
    }
    if (NEXT_NORM == 0) return;
    ss2 = workgroup_sum(ss2);
    const float scale2 = inversesqrt(ss2 / float(p.cols) + p.eps2);
    const uint yb = p.y_off + row * p.y_stride;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        float v = residual(fb, xb, c, scale1) * scale2;
        if (NEXT_NORM == 2) v *= w2[c];
        if (NEXT_NORM == 3) v *= 1.0 + w2[c];
        y[yb + c] = v;
    }
}
