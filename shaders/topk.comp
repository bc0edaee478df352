// SPDX-License-Identifier: Apache-2.0
// topk.comp: the k largest entries of each row, sorted descending (ties: lower
// index first): ids[r][0..k) and vals[r][0..k). One workgroup per row; k rounds
// of a workgroup argmax that skips already chosen indices (k is small: sampling
// candidates, MoE routing).
// Dispatch: x = rows.
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable
layout(local_size_x_id = 0) in;
layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) writeonly buffer IdBuf { int ids[]; };
layout(binding = 2, std430) writeonly buffer ValBuf { float vals[]; };
layout(push_constant) uniform Params { uint rows, cols, x_off, x_stride, k, y_off, y_stride; } p;

shared float sm_val[64];
shared uint sm_idx[64];

void main() {
    const uint row = gl_WorkGroupID.x;
    if (row >= p.rows) return;
    const uint xb = p.x_off + row * p.x_stride;
    const uint k = min(p.k, min(256u, p.cols));
    // Previous pick (value, index): candidates must come strictly after it in
    // (value desc, index asc) order, which excludes everything chosen so far.
    float prev_v = 1.0 / 0.0;
    uint prev_i = 0;
    bool first = true;
    for (uint j = 0; j < k; ++j) {
        float best = -1.0 / 0.0;
        uint bi = 0xffffffffu;
        for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
            const float v = x[xb + c];
            const bool after = first || v < prev_v || (v == prev_v && c > prev_i);
            if (after && (v > best || bi == 0xffffffffu)) { best = v; bi = c; }
        }
        float m = subgroupMax(bi == 0xffffffffu ? -1.0 / 0.0 : best);
        uint idx = subgroupMin((bi != 0xffffffffu && best == m) ? bi : 0xffffffffu);
        if (gl_NumSubgroups > 1) {
            if (subgroupElect()) { sm_val[gl_SubgroupID] = m; sm_idx[gl_SubgroupID] = idx; }
            barrier();
            float gm = sm_val[0];
            uint gi = sm_idx[0];
            for (uint i = 1; i < gl_NumSubgroups; ++i)
                if (sm_idx[i] != 0xffffffffu && (gi == 0xffffffffu || sm_val[i] > gm || (sm_val[i] == gm && sm_idx[i] < gi))) {
                    gm = sm_val[i];
                    gi = sm_idx[i];
                }
            m = gm;
            idx = gi;
            barrier();
        }
        if (gl_LocalInvocationID.x == 0) {
            ids[p.y_off + row * p.y_stride + j] = int(idx);
            vals[p.y_off + row * p.y_stride + j] = m;
        }
        prev_v = m;
        prev_i = idx;
        first = false;
    }
}
