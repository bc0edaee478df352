// SPDX-License-Identifier: Apache-2.0
// scale_add.comp: a test custom op (tandem/ext/custom_op.h): y = a * f[0] + b,
// element by element. Dispatch TDM_CUSTOM_DISPATCH_ELEMENTS (row = workgroup y,
// column = global x), output like input 0. Inputs may be strided views.
#version 450
layout(local_size_x_id = 0) in;

layout(binding = 0, std430) readonly buffer A { float a[]; };
layout(binding = 1, std430) readonly buffer B { float b[]; };
layout(binding = 2, std430) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint rows, cols, out_off, out_stride;  // the output
    uint a_off, a_stride, a_cols;          // input 0
    uint b_off, b_stride, b_cols;          // input 1
    float scale;                           // f[0]
} p;

void main() {
    const uint c = gl_GlobalInvocationID.x;
    const uint r = gl_WorkGroupID.y;
    if (c >= p.cols || r >= p.rows) return;
    y[p.out_off + r * p.out_stride + c] = a[p.a_off + r * p.a_stride + c] * p.scale + b[p.b_off + r * p.b_stride + c];
}
