// SPDX-License-Identifier: Apache-2.0
// moe_sum.comp: weighted sum of the experts' outputs (TDM_OP_MOE_SUM):
//   out[t][r] = sum_j w[t][j] * y[t][j][r], j = 0 .. n_used-1 in order
// (the order is fixed, so a token's result never depends on the batch size).
// Dispatch: x = ceil(M / local size), y = tokens (sliced by 65535, t0 = first
// token of the slice). Variants: moe_sum_<tex|buf> (y and w through texel views
// or storage buffers).
#version 450
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint M, n_used, n_tokens, t0;
    uint y_off, w_off, o_off;  // all contiguous
} p;

#include "activations.glsl"
ACT_INPUT(0, yin)
ACT_INPUT(1, win)
layout(binding = 2, std430) writeonly buffer OBuf { float o[]; };

void main() {
    const uint r = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y + p.t0;
    if (r >= p.M || t >= p.n_tokens) return;
    float acc = 0.0;
    for (uint j = 0; j < p.n_used; ++j)
        acc += win_at(p.w_off + t * p.n_used + j) * yin_at(p.y_off + (t * p.n_used + j) * p.M + r);
    o[p.o_off + t * p.M + r] = acc;
}
