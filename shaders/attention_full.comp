// SPDX-License-Identifier: Apache-2.0
// attention_full.comp: attention of each query over plain K/V activations, without a KV
// layer or a causal mask (vision encoders), with GQA:
//   o[t][h] = sum_k softmax_k(scale * q[t][h] . k[k][h/G]) v[k][h/G]
// over keys k in [0, m), or in [begin, end) = (ranges[2t], ranges[2t + 1]) when ranges are given.
// Element (d, head, token) of q, k and v is at off + (token * heads + head) * row_stride + d.
//
// As attention.comp: one workgroup per (kv head, query) handles the G query heads that
// share the kv head; keys go in chunks of CH counted from the query's first key with an
// online softmax, scores by lanes over keys, then every lane walks the keys in order for
// its own output dims. So a query's result depends only on its keys: neither on the
// number of queries nor on where its key range sits in the batch.
// Dispatch: x = n_kv_head, y = queries (up to 65535 per slice, q0 the first).
#version 450
#include "reduce.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint G = 1;             // query heads per kv head
layout(constant_id = 2) const uint DV4_PER_LANE = 1;  // ceil(dv / 4 / local_size)

const uint CH = 256;

layout(binding = 0, std430) readonly buffer QBuf { float q[]; };
layout(binding = 1, std430) readonly buffer KBuf { float k[]; };
layout(binding = 2, std430) readonly buffer VBuf { float v[]; };
layout(binding = 3, std430) readonly buffer RBuf { int ranges[]; };
layout(binding = 4, std430) writeonly buffer OBuf { float o_out[]; };

layout(push_constant) uniform Params {
    uint n_q, n_head, n_kv_head, dk, dv, m;
    uint q_off, q_rs, k_off, k_rs, v_off, v_rs;
    uint o_off;
    uint r_off, has_ranges;
    uint q0;
    float scale;
} p;

shared float sm_score[G * CH];

vec4 load4(uint which, uint e) {
    if (which == 0) return vec4(k[e], k[e + 1], k[e + 2], k[e + 3]);
    return vec4(v[e], v[e + 1], v[e + 2], v[e + 3]);
}

void main() {
    const uint g = gl_WorkGroupID.x, t = gl_WorkGroupID.y + p.q0;
    if (t >= p.n_q) return;
    const uint lane = gl_LocalInvocationID.x, LS = gl_WorkGroupSize.x;
    uint k_begin = 0, k_end = p.m;
    if (p.has_ranges != 0) {
        k_begin = uint(max(ranges[p.r_off + 2 * t], 0));
        k_end = min(uint(max(ranges[p.r_off + 2 * t + 1], 0)), p.m);
    }

    float m[G], l[G];
    vec4 acc[G * DV4_PER_LANE];
    for (uint j = 0; j < G; ++j) { m[j] = -1.0 / 0.0; l[j] = 0.0; }
    for (uint i = 0; i < G * DV4_PER_LANE; ++i) acc[i] = vec4(0.0);

    for (uint c = k_begin; c < k_end; c += CH) {
        const uint c_end = min(c + CH, k_end);
        // phase 1: scores of this chunk, lanes over keys
        float cmax[G];
        for (uint j = 0; j < G; ++j) cmax[j] = -1.0 / 0.0;
        for (uint key = c + lane; key < c + CH; key += LS) {
            const bool valid = key >= k_begin && key < c_end;
            const uint kb = p.k_off + (key * p.n_kv_head + g) * p.k_rs;
            for (uint j = 0; j < G; ++j) {
                float sc = -1.0 / 0.0;
                if (valid) {
                    const uint qb = p.q_off + (t * p.n_head + g * G + j) * p.q_rs;
                    float dotv = 0.0;
                    for (uint d = 0; d < p.dk; d += 4)
                        dotv += dot(vec4(q[qb + d], q[qb + d + 1], q[qb + d + 2], q[qb + d + 3]), load4(0, kb + d));
                    sc = dotv * p.scale;
                }
                sm_score[j * CH + (key - c)] = sc;
                cmax[j] = max(cmax[j], sc);
            }
        }
        for (uint j = 0; j < G; ++j) cmax[j] = workgroup_max(cmax[j]);
        barrier();
        // phase 2: online softmax update; every lane walks the keys in order
        for (uint j = 0; j < G; ++j) {
            const float m_new = max(m[j], cmax[j]);
            const float alpha = exp(m[j] - m_new);
            l[j] *= alpha;
            for (uint i = 0; i < DV4_PER_LANE; ++i) acc[j * DV4_PER_LANE + i] *= alpha;
            m[j] = m_new;
        }
        for (uint key = max(c, k_begin); key < c_end; ++key) {
            const uint vb = p.v_off + (key * p.n_kv_head + g) * p.v_rs;
            for (uint j = 0; j < G; ++j) {
                const float pk = exp(sm_score[j * CH + (key - c)] - m[j]);
                l[j] += pk;
                for (uint i = 0; i < DV4_PER_LANE; ++i) {
                    const uint d4 = lane + i * LS;
                    if (4 * d4 < p.dv) acc[j * DV4_PER_LANE + i] += pk * load4(1, vb + 4 * d4);
                }
            }
        }
        barrier();  // sm_score is rewritten by the next chunk
    }

    for (uint j = 0; j < G; ++j) {
        // no keys (an empty range): zeros rather than 0/0
        const float inv = l[j] > 0.0 ? 1.0 / l[j] : 0.0;
        const uint ob = p.o_off + t * p.n_head * p.dv + (g * G + j) * p.dv;
        for (uint i = 0; i < DV4_PER_LANE; ++i) {
            const uint d4 = lane + i * LS;
            if (4 * d4 < p.dv) {
                const vec4 r = acc[j * DV4_PER_LANE + i] * inv;
                o_out[ob + 4 * d4] = r.x;
                o_out[ob + 4 * d4 + 1] = r.y;
                o_out[ob + 4 * d4 + 2] = r.z;
                o_out[ob + 4 * d4 + 3] = r.w;
            }
        }
    }
}
