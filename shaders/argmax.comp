// SPDX-License-Identifier: Apache-2.0
// argmax.comp: ids[r] = index of the maximum of x[r][:] (lowest index on ties),
// one workgroup per row. Used in-graph so that only token ids cross to the host.
// Dispatch: x = rows.
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable
layout(local_size_x_id = 0) in;
layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) writeonly buffer IdBuf { int ids[]; };
layout(push_constant) uniform Params { uint rows, cols, x_off, x_stride, y_off; } p;

shared float sm_val[64];
shared uint sm_idx[64];

void main() {
    const uint row = gl_WorkGroupID.x;
    if (row >= p.rows) return;
    const uint xb = p.x_off + row * p.x_stride;
    float best = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
        const float v = x[xb + c];
        if (v > best) { best = v; bi = c; }  // strictly greater: keeps the lowest index
    }
    const float m = subgroupMax(best);
    uint idx = subgroupMin(best == m ? bi : 0xffffffffu);
    if (gl_NumSubgroups > 1) {
        if (subgroupElect()) { sm_val[gl_SubgroupID] = m; sm_idx[gl_SubgroupID] = idx; }
        barrier();
        float gm = sm_val[0];
        uint gi = sm_idx[0];
        for (uint i = 1; i < gl_NumSubgroups; ++i)
            if (sm_val[i] > gm || (sm_val[i] == gm && sm_idx[i] < gi)) { gm = sm_val[i]; gi = sm_idx[i]; }
        idx = gi;
    }
    if (gl_LocalInvocationID.x == 0) ids[p.y_off + row] = int(idx == 0xffffffffu ? 0u : idx);
}
