// SPDX-License-Identifier: Apache-2.0
// add_rms_norm.comp: a residual add and the RMSNorm of the sum, one workgroup per row:
//   s = a + b                                  (binding 3: the new residual)
//   y = s * rsqrt(mean(s^2) + eps) * W          (binding 4; W: w, 1 + w or none)
// Batch-invariant and equal to elementwise.comp's add followed by norm.comp's RMS
// mode, bit for bit: s is the same f32 sum; the sum of squares runs the same
// strided loop over the same local size into the same workgroup_sum, and y is
// formed in norm.comp's order (s * scale, then * w). Keep the two in step.
// WMODE (spec constant 1): 0 no weight, 1 w, 2 (1 + w), as host/ops/add_rms_norm.cpp
// passes tdm_norm_weight.
// Dispatch: x = rows (up to 65535), y = rows / 65535 + 1.
#version 450
#include "reduce.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WMODE = 1;

layout(binding = 0, std430) readonly buffer ABuf { float a[]; };
layout(binding = 1, std430) readonly buffer BBuf { float b[]; };
layout(binding = 2, std430) readonly buffer WBuf { float w[]; };
layout(binding = 3, std430) writeonly buffer SBuf { float s[]; };
layout(binding = 4, std430) writeonly buffer YBuf { float y[]; };

layout(push_constant) uniform Params {
    uint rows, cols;
    uint a_off, a_stride;
    uint b_off, b_stride;
    uint s_off, s_stride;
    uint y_off, y_stride;
    uint w_off;
    float eps;
} p;

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
    if (row >= p.rows) return;
    const uint ab = p.a_off + row * p.a_stride;
    const uint bb = p.b_off + row * p.b_stride;
    const uint sb = p.s_off + row * p.s_stride;
    float ss = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        const float v = a[ab + c] + b[bb + c];
        s[sb + c] = v;
        ss += v * v;
    }
    ss = workgroup_sum(ss);
    const float scale = inversesqrt(ss / float(p.cols) + p.eps);
    const uint yb = p.y_off + row * p.y_stride;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        float v = (a[ab + c] + b[bb + c]) * scale;
        if (WMODE == 1) v *= w[p.w_off + c];
        if (WMODE == 2) v *= 1.0 + w[p.w_off + c];
        y[yb + c] = v;
    }
}
