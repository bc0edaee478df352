// SPDX-License-Identifier: Apache-2.0
// softmax.comp: y[r][:] = softmax(x[r][:] * scale), one workgroup per row.
// Dispatch: x = rows (slices of 65535 via y).
#version 450
#include "reduce.glsl"
layout(local_size_x_id = 0) in;
layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) writeonly buffer YBuf { float y[]; };
layout(push_constant) uniform Params {
    uint rows, cols, x_off, x_stride, y_off, y_stride;
    float scale;
} p;

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
    if (row >= p.rows) return;
    const uint xb = p.x_off + row * p.x_stride, yb = p.y_off + row * p.y_stride;
    float m = -1.0 / 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) m = max(m, x[xb + c] * p.scale);
    m = workgroup_max(m);
    float s = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) s += exp(x[xb + c] * p.scale - m);
    s = workgroup_sum(s);
    const float inv = 1.0 / s;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x)
        y[yb + c] = exp(x[xb + c] * p.scale - m) * inv;
}
