// SPDX-License-Identifier: Apache-2.0
// select_rows.comp: y[i][:] = x[ids[i]][:] (picks the rows whose logits are needed).
// Dispatch: x = ceil(cols / local_size), y = number of ids.
#version 450
layout(local_size_x_id = 0) in;
layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) readonly buffer IdBuf { int ids[]; };
layout(binding = 2, std430) writeonly buffer YBuf { float y[]; };
layout(push_constant) uniform Params { uint n, cols, x_off, x_stride, ids_off, y_off, y_stride; } p;

void main() {
    const uint c = gl_GlobalInvocationID.x, i = gl_WorkGroupID.y;
    if (c >= p.cols || i >= p.n) return;
    y[p.y_off + i * p.y_stride + c] = x[p.x_off + uint(ids[p.ids_off + i]) * p.x_stride + c];
}
