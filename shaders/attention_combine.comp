// SPDX-License-Identifier: Apache-2.0
// attention_combine.comp: the second pass of split-KV attention (host/ops/attention_split.cpp):
// merges the partials attention.comp (SPLIT) wrote for each of a token's key splits, in
// split order s = 0, 1, 2, ..., into the token's output:
//   m = max(m, m_s), l = l * exp(m_old - m) + l_s * exp(m_s - m), the same for each dim of
//   acc; o = acc * (1 / l).
// The order and the number of splits depend only on the token's position (and the
// window), never on the batch, so each query's bits do not either. With one split the
// output is acc * (1 / l), attention.comp's own last step.
// Partials of (token t, query head h, split z): [m, l, acc[dv]] at
// ((t * n_head + h) * max_splits + z) * (dv + 2) from part_off.
// Dispatch: x = n_head, y = n_tokens; lanes over output dims.
#version 450
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint SPLIT_KEYS = 256;  // attention.comp's (SPLIT)

layout(binding = 0, std430) readonly buffer PartBuf { float part[]; };
layout(binding = 1, std430) readonly buffer PosBuf { int pos[]; };
layout(binding = 2, std430) writeonly buffer OBuf { float o_out[]; };

layout(push_constant) uniform Params {
    uint n_tokens, n_head, dv, max_splits;
    uint part_off, pos_off, o_off, o_stride;
    uint window;
} p;

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    if (t >= p.n_tokens) return;
    const uint pq = uint(pos[p.pos_off + t]);
    const uint k_begin = (p.window > 0 && pq + 1 > p.window) ? pq + 1 - p.window : 0;
    const uint n = min(pq / SPLIT_KEYS - k_begin / SPLIT_KEYS + 1, p.max_splits);
    const uint pb = p.part_off + (t * p.n_head + h) * p.max_splits * (p.dv + 2);
    const uint ob = p.o_off + t * p.o_stride + h * p.dv;
    for (uint d = gl_LocalInvocationID.x; d < p.dv; d += gl_WorkGroupSize.x) {
        float m = part[pb], l = part[pb + 1], a = part[pb + 2 + d];
        for (uint z = 1; z < n; ++z) {
            const uint zb = pb + z * (p.dv + 2);
            const float mz = part[zb];
            const float m_new = max(m, mz);
            const float alpha = exp(m - m_new), beta = exp(mz - m_new);
            l = l * alpha + part[zb + 1] * beta;
            a = a * alpha + part[zb + 2 + d] * beta;
            m = m_new;
        }
        o_out[ob + d] = a * (1.0 / l);
    }
}
