// SPDX-License-Identifier: Apache-2.0
// attention.comp: causal attention of each token's query heads over its sequence's
// paged KV (include/paged_kv.glsl), with GQA, sliding window, custom scale and
// logit softcap.
//   o[t][h] = sum_k softmax_k(cap(scale * q[t][h] . K[k][h/G])) V[k][h/G]
// over keys k with k <= pos[t] and, if window > 0, pos[t] - k < window. A row of a
// tree batch reads key k where its tree puts it (include/kv_tree.glsl): the same keys in
// the same order as a plain decode of its path, so the same bits.
//
// One workgroup per (kv head, token) handles the G query heads that share the kv
// head, so K/V are read once for them. Keys are processed in chunks of CH at
// fixed absolute boundaries (multiples of CH) with an online softmax; within a
// chunk, scores are computed by lanes over keys, then every lane walks the keys
// in order for its own output dims. Each query's result therefore depends only
// on its own keys, never on how many tokens share the batch (batch invariance).
//
// KV pools are read as vec4 texels (KV_TEXEL: uniform texel buffers, RGBA16F or
// RGBA32F views) or as storage buffers (KV_F16 selects packed halves).
// Dispatch: x = n_kv_head, y = n_tokens.
//
// SPLIT (attention_split_*, "split-KV" for GPUs, host/ops/attention_split.cpp): a token's
// keys are cut at fixed absolute multiples of SPLIT_KEYS (a multiple of CH), and the state
// (running max m, sum l, unnormalised output acc) of each split is computed from scratch
// with the chunk arithmetic above. Two modes of the one pipeline, so that a split's state
// is the same compiled code in both:
//   fold = 0, the first of two passes: workgroup z computes split (k_begin / SPLIT_KEYS + z)
//     and writes, per query head, [m, l, acc[dv]] to the partials (split-major: at
//     ((z * n_tokens + t) * n_head + h) * (dv + 2) from o_off); a workgroup whose split
//     starts past the token's last key exits. attention_combine.comp merges a token's
//     splits in order. Dispatch: z = the splits of the batch's longest context (indirect).
//   fold = 1: one workgroup per (kv head, token) computes the token's splits in order and
//     merges each into a running state with attention_combine.comp's arithmetic
//     (split_merge.glsl), keeping the running output in the output row itself: the same
//     bits as the two passes, for batches too wide to need them. Dispatch: z = 1.
#version 450
#include "reduce.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint G = 1;            // query heads per kv head
layout(constant_id = 2) const uint KV_F16 = 1;
layout(constant_id = 3) const uint DV4_PER_LANE = 1; // ceil(dv / 4 / local_size)
#ifdef SPLIT
layout(constant_id = 4) const uint SPLIT_KEYS = 256;  // keys per split, a multiple of CH
#endif
#define KV_TREE_CONSTANT_ID 5  // include/kv_tree.glsl (4 is SPLIT_KEYS)

const uint CH = 256;

layout(binding = 0, std430) readonly buffer QBuf { float q[]; };
#ifdef KV_TEXEL
layout(binding = 1) uniform samplerBuffer k_tex;
layout(binding = 2) uniform samplerBuffer v_tex;
vec4 load_k4(uint e) { return texelFetch(k_tex, int(e >> 2)); }
vec4 load_v4(uint e) { return texelFetch(v_tex, int(e >> 2)); }
#else
layout(binding = 1, std430) readonly buffer KPool { uint k_pool[]; };
layout(binding = 2, std430) readonly buffer VPool { uint v_pool[]; };
vec4 load_k4(uint e) {
    if (KV_F16 != 0) return vec4(unpackHalf2x16(k_pool[e >> 1]), unpackHalf2x16(k_pool[(e >> 1) + 1]));
    return uintBitsToFloat(uvec4(k_pool[e], k_pool[e + 1], k_pool[e + 2], k_pool[e + 3]));
}
vec4 load_v4(uint e) {
    if (KV_F16 != 0) return vec4(unpackHalf2x16(v_pool[e >> 1]), unpackHalf2x16(v_pool[(e >> 1) + 1]));
    return uintBitsToFloat(uvec4(v_pool[e], v_pool[e + 1], v_pool[e + 2], v_pool[e + 3]));
}
#endif
layout(binding = 3, std430) readonly buffer PosBuf { int pos[]; };
layout(binding = 4, std430) readonly buffer SeqBuf { int seq[]; };
layout(binding = 5, std430) readonly buffer BtBuf { int bt[]; };
#ifdef SPLIT
layout(binding = 6, std430) buffer OBuf { float o_out[]; };  // the fold reads its running output back
#else
layout(binding = 6, std430) writeonly buffer OBuf { float o_out[]; };
#endif
layout(binding = 7, std430) readonly buffer TreeBuf { int tree[]; };

layout(push_constant) uniform Params {
    uint n_tokens, n_head, n_kv_head, dk, dv;
    uint q_off, q_stride, o_off, o_stride;
    uint pos_off, seq_off;
    uint block_size, max_blocks, ring_blocks;
    uint window;
    float scale, softcap;
    uint t_base;    // attention_rl.comp's; unused here
    uint tree_off;  // kNoTree: no tree input
#ifdef SPLIT
    uint fold;  // 0: write split z's partials; 1: fold every split into the output
#endif
} p;

#include "kv_tree.glsl"
#include "paged_kv.glsl"

shared float sm_score[G * CH];
#ifdef SPLIT
#include "split_merge.glsl"
#endif

// The online softmax state of the keys walked, per query head of the workgroup's kv head.
float m[G], l[G];
vec4 acc[G * DV4_PER_LANE];

// Walks the token's keys [r_begin, r_end) in chunks at absolute multiples of CH: the state
// starts empty (m = -inf, l = 0, acc = 0).
void walk_keys(uint s, uint g, uint qb, uvec3 tr, uint r_begin, uint r_end) {
    const uint lane = gl_LocalInvocationID.x, LS = gl_WorkGroupSize.x;
    for (uint j = 0; j < G; ++j) { m[j] = -1.0 / 0.0; l[j] = 0.0; }
    for (uint i = 0; i < G * DV4_PER_LANE; ++i) acc[i] = vec4(0.0);

    for (uint c = (r_begin / CH) * CH; c < r_end; c += CH) {
        const uint c_end = min(c + CH, r_end);
        // phase 1: scores of this chunk, lanes over keys
        float cmax[G];
        for (uint j = 0; j < G; ++j) cmax[j] = -1.0 / 0.0;
        for (uint k = c + lane; k < c + CH; k += LS) {
            const bool valid = k >= r_begin && k < c_end;
            const uint kb = valid ? kv_element(s, tree_key(tr, k), g, p.dk, 0) : 0;
            for (uint j = 0; j < G; ++j) {
                float sc = -1.0 / 0.0;
                if (valid) {
                    float dotv = 0.0;
                    for (uint d = 0; d < p.dk; d += 4)
                        dotv += dot(vec4(q[qb + j * p.dk + d], q[qb + j * p.dk + d + 1], q[qb + j * p.dk + d + 2],
                                         q[qb + j * p.dk + d + 3]),
                                    load_k4(kb + d));
                    sc = dotv * p.scale;
                    if (p.softcap > 0.0) sc = p.softcap * tanh(sc / p.softcap);
                }
                sm_score[j * CH + (k - c)] = sc;
                cmax[j] = max(cmax[j], sc);
            }
        }
        for (uint j = 0; j < G; ++j) cmax[j] = workgroup_max(cmax[j]);  // includes a barrier when multi-subgroup
        barrier();
        // phase 2: online softmax update; every lane walks the keys in order
        for (uint j = 0; j < G; ++j) {
            const float m_new = max(m[j], cmax[j]);
            const float alpha = exp(m[j] - m_new);
            l[j] *= alpha;
            for (uint i = 0; i < DV4_PER_LANE; ++i) acc[j * DV4_PER_LANE + i] *= alpha;
            m[j] = m_new;
        }
        for (uint k = max(c, r_begin); k < c_end; ++k) {
            const uint vb = kv_element(s, tree_key(tr, k), g, p.dv, 0);
            for (uint j = 0; j < G; ++j) {
                const float pk = exp(sm_score[j * CH + (k - c)] - m[j]);
                l[j] += pk;
                for (uint i = 0; i < DV4_PER_LANE; ++i) {
                    const uint d4 = lane + i * LS;
                    if (4 * d4 < p.dv) acc[j * DV4_PER_LANE + i] += pk * load_v4(vb + 4 * d4);
                }
            }
        }
        barrier();  // sm_score is rewritten by the next chunk
    }
}

void main() {
    const uint g = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    if (t >= p.n_tokens) return;
    const uint lane = gl_LocalInvocationID.x, LS = gl_WorkGroupSize.x;
    const uint s = uint(seq[p.seq_off + t]);
    const uint pq = uint(pos[p.pos_off + t]);
    const uint k_end = pq + 1;
    const uint k_begin = (p.window > 0 && pq + 1 > p.window) ? pq + 1 - p.window : 0;
    const uint qb = p.q_off + t * p.q_stride + g * G * p.dk;
    const uvec3 tr = tree_row(t);
    // the output row of query head g * G + j starts at ob + j * dv
    const uint ob = p.o_off + t * p.o_stride + g * G * p.dv;

#ifdef SPLIT
    const uint first = k_begin / SPLIT_KEYS, n_splits = pq / SPLIT_KEYS - first + 1;
    const uint z_begin = p.fold != 0 ? 0 : gl_WorkGroupID.z;
    if (z_begin >= n_splits) return;  // the token's keys end before this split
    const uint z_end = p.fold != 0 ? n_splits : z_begin + 1;
    float run_m[G], run_l[G];  // fold: the state of the splits merged so far
    for (uint z = z_begin; z < z_end; ++z) {
        const uint split = first + z;
        walk_keys(s, g, qb, tr, max(k_begin, split * SPLIT_KEYS), min(k_end, (split + 1) * SPLIT_KEYS));
        for (uint j = 0; j < G; ++j) {
            if (p.fold == 0) {
                const uint pb = p.o_off + ((z * p.n_tokens + t) * p.n_head + g * G + j) * (p.dv + 2);
                if (lane == 0) {
                    o_out[pb] = m[j];
                    o_out[pb + 1] = l[j];
                }
                for (uint i = 0; i < DV4_PER_LANE; ++i) {
                    const uint d4 = lane + i * LS;
                    if (4 * d4 < p.dv) {
                        const vec4 v = acc[j * DV4_PER_LANE + i];
                        o_out[pb + 2 + 4 * d4] = v.x;
                        o_out[pb + 3 + 4 * d4] = v.y;
                        o_out[pb + 4 + 4 * d4] = v.z;
                        o_out[pb + 5 + 4 * d4] = v.w;
                    }
                }
                continue;
            }
            // fold: the running output lives in the lane's own elements of the output row
            SplitWeights w;
            if (z > 0) {
                w = split_weights(run_m[j], m[j]);
                run_l[j] = split_merge(run_l[j], l[j], w);
                run_m[j] = w.m;
            } else {
                run_m[j] = m[j];
                run_l[j] = l[j];
            }
            for (uint i = 0; i < DV4_PER_LANE; ++i) {
                const uint d4 = lane + i * LS, o = ob + j * p.dv + 4 * d4;
                if (4 * d4 >= p.dv) continue;
                vec4 v = acc[j * DV4_PER_LANE + i];
                if (z > 0) v = split_merge(vec4(o_out[o], o_out[o + 1], o_out[o + 2], o_out[o + 3]), v, w);
                if (z + 1 == z_end) v *= 1.0 / run_l[j];  // attention_combine.comp's last step
                o_out[o] = v.x;
                o_out[o + 1] = v.y;
                o_out[o + 2] = v.z;
                o_out[o + 3] = v.w;
            }
        }
    }
#else
    walk_keys(s, g, qb, tr, k_begin, k_end);
    for (uint j = 0; j < G; ++j) {
        const float inv = 1.0 / l[j];
        for (uint i = 0; i < DV4_PER_LANE; ++i) {
            const uint d4 = lane + i * LS;
            if (4 * d4 < p.dv) {
                const vec4 v = acc[j * DV4_PER_LANE + i] * inv;
                o_out[ob + j * p.dv + 4 * d4] = v.x;
                o_out[ob + j * p.dv + 4 * d4 + 1] = v.y;
                o_out[ob + j * p.dv + 4 * d4 + 2] = v.z;
                o_out[ob + j * p.dv + 4 * d4 + 3] = v.w;
            }
        }
    }
#endif
}
