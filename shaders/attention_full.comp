// SPDX-License-Identifier: Apache-2.0
// attention_full.comp: attention of each query over plain K/V activations, without a KV
// layer or a causal mask (vision encoders), with GQA:
//   o[t][h] = sum_k softmax_k(scale * q[t][h] . k[k][h/G]) v[k][h/G]
// over keys k in [0, m), or in [begin, end) = (ranges[2t], ranges[2t + 1]) when ranges are given.
// Element (d, head, token) of q, k and v is at off + (token * heads + head) * row_stride + d.
//
// Layout "rows per lane": every lane owns QL consecutive queries of one head and walks
// their keys alone, with queries and output accumulators in registers. A workgroup holds
// the G query heads of one kv head, so at any step its lanes read the same key and value
// rows (a gather on CPU devices, a broadcast on GPUs), and each fetched row serves the QL
// queries of a lane. Keys go in chunks of CH counted from the query's first key, with an
// online softmax: scores of the chunk, its maximum, one rescale, then the weighted values
// in key order. Nothing crosses lanes and a query's operations are the same whatever QL
// is, so its bits depend only on its own keys: neither on the other queries of the batch
// nor on where its key range sits. A lane whose queries have different key ranges (an
// image boundary) runs one pass per query. Key loads in a chunk's tail are clamped to its
// last key and weighted by exp(-inf) = 0, which adds exact zeros, so the loop has no
// data-dependent branch around a load.
// Dispatch: x = n_kv_head, y = blocks of (local size / G) * QL queries (up to 65535 per
// slice, q0 the first query).
#version 450
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;                       // QB * G lanes
layout(constant_id = 1) const uint G = 1;             // query heads per kv head
layout(constant_id = 2) const uint DK4 = 16;          // dk / 4
layout(constant_id = 3) const uint DV4 = 16;          // dv / 4
layout(constant_id = 4) const uint CH = 32;           // keys per chunk (set from dk and dv alone)
layout(constant_id = 5) const uint QL = 1;            // queries per lane

layout(binding = 0, std430) readonly buffer QBuf { float q[]; };
#ifdef ACT_TEXEL
// RGBA32F views; the host takes this variant only when every offset and row stride is a
// multiple of 4, so one fetch is one aligned vec4.
layout(binding = 1) uniform samplerBuffer k_tex;
layout(binding = 2) uniform samplerBuffer v_tex;
vec4 k4(uint e) { return texelFetch(k_tex, int(e >> 2)); }
vec4 v4(uint e) { return texelFetch(v_tex, int(e >> 2)); }
#else
layout(binding = 1, std430) readonly buffer KBuf { float k[]; };
layout(binding = 2, std430) readonly buffer VBuf { float v[]; };
vec4 k4(uint e) { return vec4(k[e], k[e + 1], k[e + 2], k[e + 3]); }
vec4 v4(uint e) { return vec4(v[e], v[e + 1], v[e + 2], v[e + 3]); }
#endif
layout(binding = 3, std430) readonly buffer RBuf { int ranges[]; };
layout(binding = 4, std430) writeonly buffer OBuf { float o_out[]; };

layout(push_constant) uniform Params {
    uint n_q, n_head, n_kv_head, m;
    uint q_off, q_rs, k_off, k_rs, v_off, v_rs;
    uint o_off;
    uint r_off, has_ranges;
    uint q0;
    float scale;
} p;

void main() {
    const uint g = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
    const uint slots = gl_WorkGroupSize.x / G;
    const uint t0 = p.q0 + (gl_WorkGroupID.y * slots + lane / G) * QL;
    const uint head = g * G + lane % G;
    if (t0 >= p.n_q) return;

    // The lane's queries t0 .. t0 + QL - 1 (past the end: the last query again, not stored).
    uint kb[QL], ke[QL];
    vec4 qv[QL * DK4];
    bool same = true;
    [[unroll]] for (uint j = 0; j < QL; ++j) {
        const uint t = min(t0 + j, p.n_q - 1);
        kb[j] = 0;
        ke[j] = p.m;
        if (p.has_ranges != 0) {
            kb[j] = uint(max(ranges[p.r_off + 2 * t], 0));
            ke[j] = min(uint(max(ranges[p.r_off + 2 * t + 1], 0)), p.m);
        }
        same = same && kb[j] == kb[0] && ke[j] == ke[0];
        const uint qbase = p.q_off + (t * p.n_head + head) * p.q_rs;
        [[unroll]] for (uint i = 0; i < DK4; ++i)
            qv[j * DK4 + i] = vec4(q[qbase + 4 * i], q[qbase + 4 * i + 1], q[qbase + 4 * i + 2], q[qbase + 4 * i + 3]);
    }

    // One pass when the lane's queries share their keys (each fetched key then serves all
    // of them); otherwise one pass per query, keeping only that query's result.
    const uint passes = same ? 1 : QL;
    for (uint pass = 0; pass < passes; ++pass) {
        uint k_begin = kb[0], k_end = ke[0];
        [[unroll]] for (uint j = 1; j < QL; ++j)
            if (j == pass) k_begin = kb[j], k_end = ke[j];

        float mx[QL], l[QL], s[QL * CH];
        vec4 acc[QL * DV4];
        [[unroll]] for (uint j = 0; j < QL; ++j) mx[j] = -1.0 / 0.0, l[j] = 0.0;
        [[unroll]] for (uint i = 0; i < QL * DV4; ++i) acc[i] = vec4(0.0);

        for (uint c = k_begin; c < k_end; c += CH) {
            const uint last = min(c + CH, k_end) - 1;
            float cmax[QL];
            [[unroll]] for (uint j = 0; j < QL; ++j) cmax[j] = -1.0 / 0.0;
            [[unroll]] for (uint i = 0; i < CH; ++i) {
                const uint kbase = p.k_off + (min(c + i, last) * p.n_kv_head + g) * p.k_rs;
                float dotv[QL];
                [[unroll]] for (uint j = 0; j < QL; ++j) dotv[j] = 0.0;
                [[unroll]] for (uint d = 0; d < DK4; ++d) {
                    const vec4 kk = k4(kbase + 4 * d);
                    [[unroll]] for (uint j = 0; j < QL; ++j) dotv[j] += dot(qv[j * DK4 + d], kk);
                }
                [[unroll]] for (uint j = 0; j < QL; ++j) {
                    s[j * CH + i] = c + i <= last ? dotv[j] * p.scale : -1.0 / 0.0;
                    cmax[j] = max(cmax[j], s[j * CH + i]);
                }
            }
            [[unroll]] for (uint j = 0; j < QL; ++j) {
                const float m_new = max(mx[j], cmax[j]);
                const float alpha = exp(mx[j] - m_new);
                l[j] *= alpha;
                [[unroll]] for (uint i = 0; i < DV4; ++i) acc[j * DV4 + i] *= alpha;
                mx[j] = m_new;
            }
            [[unroll]] for (uint i = 0; i < CH; ++i) {
                const uint vbase = p.v_off + (min(c + i, last) * p.n_kv_head + g) * p.v_rs;
                float pk[QL];
                [[unroll]] for (uint j = 0; j < QL; ++j) {
                    pk[j] = exp(s[j * CH + i] - mx[j]);
                    l[j] += pk[j];
                }
                [[unroll]] for (uint d = 0; d < DV4; ++d) {
                    const vec4 vv = v4(vbase + 4 * d);
                    [[unroll]] for (uint j = 0; j < QL; ++j) acc[j * DV4 + d] += pk[j] * vv;
                }
            }
        }

        [[unroll]] for (uint j = 0; j < QL; ++j) {
            if ((!same && j != pass) || t0 + j >= p.n_q) continue;
            // no keys (an empty range): zeros rather than 0/0
            const float inv = l[j] > 0.0 ? 1.0 / l[j] : 0.0;
            const uint ob = p.o_off + ((t0 + j) * p.n_head + head) * (4 * DV4);
            [[unroll]] for (uint i = 0; i < DV4; ++i) {
                const vec4 r = acc[j * DV4 + i] * inv;
                o_out[ob + 4 * i] = r.x;
                o_out[ob + 4 * i + 1] = r.y;
                o_out[ob + 4 * i + 2] = r.z;
                o_out[ob + 4 * i + 3] = r.w;
            }
        }
    }
}
