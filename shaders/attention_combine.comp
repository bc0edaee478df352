// SPDX-License-Identifier: Apache-2.0
// attention_combine.comp: the second pass of split-KV attention (host/ops/attention_split.cpp):
// merges the partials attention.comp (SPLIT) wrote for each of a token's key splits, in
// split order s = 0, 1, 2, ..., into the token's output:
//   m = max(m, m_s), l = l * exp(m_old - m) + l_s * exp(m_s - m), the same for each dim of
//   acc; o = acc * (1 / l)   (include/split_merge.glsl, shared with attention.comp's fold).
// The order and the number of splits depend only on the token's position (and the
// window), never on the batch, so each query's bits do not either. With one split the
// output is acc * (1 / l), attention.comp's own last step.
// Partials of (split z, token t, query head h): [m, l, acc[dv]] at
// ((z * n_tokens + t) * n_head + h) * (dv + 2) from part_off: split-major, so that their
// layout does not depend on how many splits a run uses. grid[2] holds that number (the
// first pass's indirect dispatch): a token never reads a split the run did not write.
// Dispatch: x = n_head, y = n_tokens; lanes over output dims.
#version 450
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint SPLIT_KEYS = 256;  // attention.comp's (SPLIT)

layout(binding = 0, std430) readonly buffer PartBuf { float part[]; };
layout(binding = 1, std430) readonly buffer PosBuf { int pos[]; };
layout(binding = 2, std430) readonly buffer GridBuf { uint grid[]; };
layout(binding = 3, std430) writeonly buffer OBuf { float o_out[]; };

layout(push_constant) uniform Params {
    uint n_tokens, n_head, dv;
    uint part_off, pos_off, grid_off, o_off, o_stride;
    uint window;
} p;

#include "split_merge.glsl"

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    if (t >= p.n_tokens) return;
    const uint pq = uint(pos[p.pos_off + t]);
    const uint k_begin = (p.window > 0 && pq + 1 > p.window) ? pq + 1 - p.window : 0;
    const uint n = min(pq / SPLIT_KEYS - k_begin / SPLIT_KEYS + 1, grid[p.grid_off + 2]);
    const uint pb = p.part_off + (t * p.n_head + h) * (p.dv + 2);
    const uint split_stride = p.n_tokens * p.n_head * (p.dv + 2);
    const uint ob = p.o_off + t * p.o_stride + h * p.dv;
    for (uint d = gl_LocalInvocationID.x; d < p.dv; d += gl_WorkGroupSize.x) {
        float m = part[pb], l = part[pb + 1], a = part[pb + 2 + d];
        for (uint z = 1; z < n; ++z) {
            const uint zb = pb + z * split_stride;
            const SplitWeights w = split_weights(m, part[zb]);
            l = split_merge(l, part[zb + 1], w);
            a = split_merge(a, part[zb + 2 + d], w);
            m = w.m;
        }
        o_out[ob + d] = a * (1.0 / l);
    }
}
