// SPDX-License-Identifier: Apache-2.0
// reduce.glsl: deterministic workgroup sums and maxima.
// Each lane reduces its strided elements in index order, then subgroupAdd (a
// fixed tree on a given device), then subgroup partials are combined in
// subgroup order by every lane reading shared memory in the same order. The
// result depends only on the row and the workgroup size, never on how many rows
// a dispatch holds, which keeps norms batch-invariant.
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable

shared float red_partials[64];

float workgroup_sum(float v) {
    v = subgroupAdd(v);
    if (gl_NumSubgroups == 1) return v;
    if (subgroupElect()) red_partials[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0; i < gl_NumSubgroups; ++i) s += red_partials[i];
    barrier();
    return s;
}

float workgroup_max(float v) {
    v = subgroupMax(v);
    if (gl_NumSubgroups == 1) return v;
    if (subgroupElect()) red_partials[gl_SubgroupID] = v;
    barrier();
    float s = red_partials[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) s = max(s, red_partials[i]);
    barrier();
    return s;
}
