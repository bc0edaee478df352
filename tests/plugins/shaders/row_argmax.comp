// SPDX-License-Identifier: Apache-2.0
// row_argmax.comp: a test custom op (tandem/ext/custom_op.h): per row r,
// y[r][0] = (index of the largest x[r][c], lowest on ties) + base[r][0].
// Dispatch TDM_CUSTOM_DISPATCH_ROWS (one workgroup per row, the lanes stride
// over the columns), output TDM_CUSTOM_OUTPUT_COLS_PARAM (i[0] = 1 column),
// I32. Inputs: x f32, base i32.
#version 450
layout(local_size_x_id = 0) in;

layout(binding = 0, std430) readonly buffer X { float x[]; };
layout(binding = 1, std430) readonly buffer Base { int base[]; };
layout(binding = 2, std430) writeonly buffer Y { int y[]; };

layout(push_constant) uniform Params {
    uint rows, cols, out_off, out_stride;  // the output (cols = i[0])
    uint x_off, x_stride, x_cols;          // input 0
    uint b_off, b_stride, b_cols;          // input 1
    int out_cols;                          // i[0]
} p;

shared float s_val[gl_WorkGroupSize.x];
shared uint s_idx[gl_WorkGroupSize.x];

void main() {
    const uint r = gl_WorkGroupID.y, lane = gl_LocalInvocationID.x;
    float best = -1.0 / 0.0;
    uint best_i = 0xffffffffu;
    for (uint c = lane; c < p.x_cols; c += gl_WorkGroupSize.x) {
        const float v = x[p.x_off + r * p.x_stride + c];
        if (v > best || best_i == 0xffffffffu) { best = v; best_i = c; }
    }
    s_val[lane] = best;
    s_idx[lane] = best_i;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
        if (lane < s) {
            const float v = s_val[lane + s];
            const uint i = s_idx[lane + s];
            if (i != 0xffffffffu && (s_idx[lane] == 0xffffffffu || v > s_val[lane] || (v == s_val[lane] && i < s_idx[lane]))) {
                s_val[lane] = v;
                s_idx[lane] = i;
            }
        }
        barrier();
    }
    if (lane == 0) y[p.out_off + r * p.out_stride] = int(s_idx[0]) + base[p.b_off + r * p.b_stride];
}
