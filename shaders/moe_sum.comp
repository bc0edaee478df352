// SPDX-License-Identifier: Apache-2.0
// moe_sum.comp: weighted sum of the experts' outputs (TDM_OP_MOE_SUM):
//   out[t][r] = sum_j w[t][j] * y[t][j][r], j = 0 .. n_used-1 in order
// (the order is fixed, so a token's result never depends on the batch size).
// With SCALED (spec constant 1), each slot's weight is first multiplied by
// its expert's scale: w[t][j] * scale[ids[t][j]] (Gemma 4's per-expert scale).
// Dispatch: x = ceil(M / local size), y = tokens (sliced by 65535, t0 = first
// token of the slice). Variants: moe_sum_<tex|buf> (y and w through texel views
// or storage buffers).
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint SCALED = 0;

layout(push_constant) uniform Params {
    uint M, n_used, n_tokens, t0;
    uint y_off, w_off, o_off;  // all contiguous
    uint ids_off, n_expert;
} p;

#include "activations.glsl"
ACT_INPUT(0, yin)
ACT_INPUT(1, win)
layout(binding = 2, std430) writeonly buffer OBuf { float o[]; };
layout(binding = 3, std430) readonly buffer IdBuf { int ids[]; };
layout(binding = 4, std430) readonly buffer ScaleBuf { float scale[]; };

void main() {
    const uint r = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y + p.t0;
    if (r >= p.M || t >= p.n_tokens) return;
    float acc = 0.0;
    for (uint j = 0; j < p.n_used; ++j) {
        float w = win_at(p.w_off + t * p.n_used + j);
        if (SCALED != 0) {
            const int e = ids[p.ids_off + t * p.n_used + j];
            w *= e >= 0 && uint(e) < p.n_expert ? scale[uint(e)] : 0.0;
        }
        acc += w * yin_at(p.y_off + (t * p.n_used + j) * p.M + r);
    }
    o[p.o_off + t * p.M + r] = acc;
}
