// SPDX-License-Identifier: Apache-2.0
// fixed_width.comp: a test shader with a literal workgroup width of 32 instead
// of spec constant 0: creating a custom op from it with local_size_x 64 is refused.
#version 450
layout(local_size_x = 32) in;
layout(binding = 0, std430) readonly buffer A { float a[]; };
layout(binding = 1, std430) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint rows, cols, out_off, out_stride, a_off, a_stride, a_cols; } p;
void main() {
    const uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (c < p.cols) y[p.out_off + r * p.out_stride + c] = a[p.a_off + r * p.a_stride + c];
}
