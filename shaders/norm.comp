// SPDX-License-Identifier: Apache-2.0
// norm.comp: per-row normalisation, one workgroup per row.
//   MODE TDM_NORM_RMS: RMSNorm  y = x * rsqrt(mean(x^2) + eps) * W  (W: w, 1+w or none)
//   MODE TDM_NORM_L2: L2 norm  y = x * rsqrt(sum(x^2) + eps)
//   MODE TDM_NORM_GATED_RMS: gated RMSNorm  y = rms(x) * w * silu(z)  (Qwen3.5 GDN output)
//   MODE TDM_NORM_LAYER: LayerNorm  y = (x - mean) * rsqrt(var + eps) * w + b, the mean
//     and then the variance of the centred row summed in two passes (accurate when
//     the mean is large); b is read through z's binding (WMODE 3: w and b)
// (codes in include/op_codes.h, shared with host/ops/norm.cpp)
// Rows are `cols` wide; the weight (length cols) is shared by all rows, so the
// per-head q/k norms are the same kernel over rows of head_dim.
// WMODE (spec constant 2): 0 no weight, 1 w, 2 (1 + w), 3 w and a bias (LayerNorm).
// Dispatch: x = rows (up to 65535), y = rows / 65535 + 1.
#version 450
#include "op_codes.h"
#include "reduce.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint WMODE = 1;

layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) readonly buffer WBuf { float w[]; };
layout(binding = 2, std430) readonly buffer ZBuf { float z[]; };
layout(binding = 3, std430) writeonly buffer YBuf { float y[]; };

layout(push_constant) uniform Params {
    uint rows, cols;
    uint x_off, x_stride;
    uint y_off, y_stride;
    uint w_off;
    uint z_off, z_stride;
    float eps;
} p;

void main() {
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
    if (row >= p.rows) return;
    const uint xb = p.x_off + row * p.x_stride;
    float mean = 0.0;
    if (MODE == TDM_NORM_LAYER) {
        float s = 0.0;
        for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) s += x[xb + c];
        mean = workgroup_sum(s) / float(p.cols);
    }
    float ss = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        const float v = x[xb + c] - mean;
        ss += v * v;
    }
    ss = workgroup_sum(ss);
    const float scale = MODE == TDM_NORM_L2 ? inversesqrt(ss + p.eps) : inversesqrt(ss / float(p.cols) + p.eps);
    const uint yb = p.y_off + row * p.y_stride;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        float v = (x[xb + c] - mean) * scale;
        if (WMODE == 1 || WMODE == 3) v *= w[p.w_off + c];
        if (WMODE == 2) v *= 1.0 + w[p.w_off + c];
        if (WMODE == 3) v += z[p.z_off + c];
        if (MODE == TDM_NORM_GATED_RMS) {
            const float g = z[p.z_off + row * p.z_stride + c];
            v *= g / (1.0 + exp(-g));
        }
        y[yb + c] = v;
    }
}
