// SPDX-License-Identifier: Apache-2.0
// argmax_combine.comp: the second pass of the two-pass argmax (host/ops/argmax.cpp).
// One workgroup per row combines the row's n_slices (maximum, lowest index) pairs from
// argmax_slices.comp: the largest value wins and, among equal values, the lowest index,
// so the result is the whole row's first maximum whatever the slicing. A row with no
// value above -inf (all -inf or NaN) gives index 0, as the one-pass kernel did.
// Writes ids[r] and values[r] = x[r][ids[r]] (what the host's cheap finite check of the
// logits reads when the logits themselves stay on the device).
// Dispatch: x = rows.
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable
layout(local_size_x_id = 0) in;
layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) readonly buffer PartBuf { uint part[]; };
layout(binding = 2, std430) writeonly buffer IdBuf { int ids[]; };
layout(binding = 3, std430) writeonly buffer ValBuf { float vals[]; };
layout(push_constant) uniform Params { uint rows, x_off, x_stride, n_slices, p_off, p_stride, y_off, v_off; } p;

shared float sm_val[64];
shared uint sm_idx[64];

void main() {
    const uint row = gl_WorkGroupID.x;
    if (row >= p.rows) return;
    const uint pb = p.p_off + row * p.p_stride;
    float best = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    // a lane's slices come in column order: strictly greater keeps the lowest index
    for (uint s = gl_LocalInvocationID.x; s < p.n_slices; s += gl_WorkGroupSize.x) {
        const float v = uintBitsToFloat(part[pb + s]);
        if (v > best) { best = v; bi = part[pb + p.n_slices + s]; }
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
    if (gl_LocalInvocationID.x == 0) {
        const uint id = idx == 0xffffffffu ? 0u : idx;
        ids[p.y_off + row] = int(id);
        vals[p.v_off + row] = x[p.x_off + row * p.x_stride + id];
    }
}
