// SPDX-License-Identifier: Apache-2.0
// argmax_slices.comp: the first pass of the two-pass argmax (host/ops/argmax.cpp).
// Workgroup (s, r) reduces slice s of row r, columns [s * slice, (s + 1) * slice), to its
// maximum and that maximum's lowest index, and writes the pair to partials row r: the
// value's bits at word s, the index at word n_slices + s. Only values above -inf count
// (NaN never does), so a slice without one writes (-inf, 0xffffffff), exactly what the
// one-workgroup scan it replaces saw for such columns. Many workgroups per row keep a
// GPU's multiprocessors (and lavapipe's threads) busy on a 150k-256k vocabulary.
// Dispatch: x = n_slices, y = rows.
#version 450
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable
layout(local_size_x_id = 0) in;
layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) writeonly buffer PartBuf { uint part[]; };
layout(push_constant) uniform Params { uint cols, x_off, x_stride, slice, n_slices, p_off, p_stride; } p;

shared float sm_val[64];
shared uint sm_idx[64];

void main() {
    const uint s = gl_WorkGroupID.x, row = gl_WorkGroupID.y;
    const uint xb = p.x_off + row * p.x_stride;
    const uint end = min(p.cols, (s + 1) * p.slice);
    float best = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    for (uint c = s * p.slice + gl_LocalInvocationID.x; c < end; c += gl_WorkGroupSize.x) {
        const float v = x[xb + c];
        if (v > best) { best = v; bi = c; }  // strictly greater: keeps the lowest index
    }
    const float m = subgroupMax(best);
    uint idx = subgroupMin(best == m ? bi : 0xffffffffu);
    float gm = m;
    if (gl_NumSubgroups > 1) {
        if (subgroupElect()) { sm_val[gl_SubgroupID] = m; sm_idx[gl_SubgroupID] = idx; }
        barrier();
        gm = sm_val[0];
        idx = sm_idx[0];
        for (uint i = 1; i < gl_NumSubgroups; ++i)
            if (sm_val[i] > gm || (sm_val[i] == gm && sm_idx[i] < idx)) { gm = sm_val[i]; idx = sm_idx[i]; }
    }
    if (gl_LocalInvocationID.x == 0) {
        const uint pb = p.p_off + row * p.p_stride;
        part[pb + s] = floatBitsToUint(gm);
        part[pb + p.n_slices + s] = idx;
    }
}
