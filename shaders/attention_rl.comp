// SPDX-License-Identifier: Apache-2.0
// attention_rl.comp: attention.comp's op (causal attention of each token's query heads
// over its sequence's paged KV, GQA, sliding window, scale, logit softcap) in the layout
// "rows per lane", for CPU devices, where a lane is a SIMD slot of one thread and every
// key or value fetch is a gather.
//
// Every lane owns QL consecutive tokens of one query head, with their queries and output
// accumulators in registers, and walks their keys alone; a workgroup holds the G query
// heads of one kv head. When the lane's tokens share a sequence (a prompt: consecutive
// positions), keys go from the first key any of them sees to the last, and each fetched
// key and value row serves all of them; a key outside a token's own range (later in the
// prompt, or out of its window) is masked for it. Tokens of different sequences get one
// pass each. Keys are taken in chunks of CH at fixed absolute boundaries (multiples of CH)
// with an online softmax, as in attention.comp: a token's operations are those it would
// do alone, since a chunk without a key of its own leaves its state as it was (no
// rescale, exact zeros added by selection, never 0 * a value). So a token's bits depend
// only on its keys, never on the batch (tandem.h invariant 1). Rows of a tree batch read
// their keys where the tree puts them (include/kv_tree.glsl), each row in a pass of its
// own: the keys of a plain decode of its path, in the same order and chunks.
// K/V: RGBA16F or RGBA32F texel views of the pools (include/paged_kv.glsl).
// Dispatch: x = n_kv_head, y = blocks of (local size / G) * QL tokens, from t_base.
#version 450
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;                       // slots * G lanes
layout(constant_id = 1) const uint G = 1;             // query heads per kv head
layout(constant_id = 2) const uint DK4 = 16;          // dk / 4
layout(constant_id = 3) const uint DV4 = 16;          // dv / 4
layout(constant_id = 4) const uint CH = 8;            // keys per chunk (set from dk and dv alone)
layout(constant_id = 5) const uint QL = 4;            // tokens per lane
#define KV_TREE_CONSTANT_ID 6                               // include/kv_tree.glsl

layout(binding = 0, std430) readonly buffer QBuf { float q[]; };
layout(binding = 1) uniform samplerBuffer k_tex;
layout(binding = 2) uniform samplerBuffer v_tex;
layout(binding = 3, std430) readonly buffer PosBuf { int pos[]; };
layout(binding = 4, std430) readonly buffer SeqBuf { int seq[]; };
layout(binding = 5, std430) readonly buffer BtBuf { int bt[]; };
layout(binding = 6, std430) writeonly buffer OBuf { float o_out[]; };
layout(binding = 7, std430) readonly buffer TreeBuf { int tree[]; };

layout(push_constant) uniform Params {
    uint n_tokens, n_head, n_kv_head, dk, dv;
    uint q_off, q_stride, o_off, o_stride;
    uint pos_off, seq_off;
    uint block_size, max_blocks, ring_blocks;
    uint window;
    float scale, softcap;
    uint t_base;  // first token of this dispatch (grids split at 65535 workgroup rows)
    uint tree_off;  // kNoTree: no tree input
} p;

#include "kv_tree.glsl"
#include "paged_kv.glsl"

const float NEG_INF = -1.0 / 0.0;

void main() {
    const uint g = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x;
    const uint slots = gl_WorkGroupSize.x / G;
    const uint t0 = p.t_base + (gl_WorkGroupID.y * slots + lane / G) * QL;
    const uint head = g * G + lane % G;
    if (t0 >= p.n_tokens) return;

    // The lane's tokens t0 .. t0 + QL - 1 (past the end: the last token again, not stored),
    // each with its keys [kb, ke).
    uint sq[QL], kb[QL], ke[QL];
    uvec3 tr[QL];
    vec4 qv[QL * DK4];
    bool same = true;
    [[unroll]] for (uint j = 0; j < QL; ++j) {
        const uint t = min(t0 + j, p.n_tokens - 1);
        sq[j] = uint(seq[p.seq_off + t]);
        const uint pq = uint(pos[p.pos_off + t]);
        ke[j] = pq + 1;
        kb[j] = (p.window > 0 && pq + 1 > p.window) ? pq + 1 - p.window : 0;
        tr[j] = tree_row(t);
        same = same && sq[j] == sq[0] && (tr[j].y | tr[j].z) == 0u;
        const uint qbase = p.q_off + t * p.q_stride + head * p.dk;
        [[unroll]] for (uint i = 0; i < DK4; ++i)
            qv[j * DK4 + i] = vec4(q[qbase + 4 * i], q[qbase + 4 * i + 1], q[qbase + 4 * i + 2], q[qbase + 4 * i + 3]);
    }

    const uint passes = same ? 1 : QL;
    for (uint pass = 0; pass < passes; ++pass) {
        // the sequence and key span of this pass: all the lane's tokens, or token `pass`
        uint s = sq[0], lo = kb[0], hi = ke[0];
        uvec3 r = tr[0];  // where its keys are stored (ordinary rows: where they are)
        [[unroll]] for (uint j = 1; j < QL; ++j) {
            if (same) lo = min(lo, kb[j]), hi = max(hi, ke[j]);
            else if (j == pass) s = sq[j], lo = kb[j], hi = ke[j], r = tr[j];
        }

        float mx[QL], l[QL], sc[QL * CH];
        vec4 acc[QL * DV4];
        [[unroll]] for (uint j = 0; j < QL; ++j) mx[j] = NEG_INF, l[j] = 0.0;
        [[unroll]] for (uint i = 0; i < QL * DV4; ++i) acc[i] = vec4(0.0);

        for (uint c = (lo / CH) * CH; c < hi; c += CH) {
            float cmax[QL];
            [[unroll]] for (uint j = 0; j < QL; ++j) cmax[j] = NEG_INF;
            [[unroll]] for (uint i = 0; i < CH; ++i) {
                // keys past the span are read as its last key (they exist) and masked
                const uint key = min(c + i, hi - 1);
                const uint kbase = kv_element(s, tree_key(r, key), g, p.dk, 0);
                float dotv[QL];
                [[unroll]] for (uint j = 0; j < QL; ++j) dotv[j] = 0.0;
                [[unroll]] for (uint d = 0; d < DK4; ++d) {
                    const vec4 kk = texelFetch(k_tex, int((kbase >> 2) + d));
                    [[unroll]] for (uint j = 0; j < QL; ++j) dotv[j] += dot(qv[j * DK4 + d], kk);
                }
                [[unroll]] for (uint j = 0; j < QL; ++j) {
                    float x = dotv[j] * p.scale;
                    if (p.softcap > 0.0) x = p.softcap * tanh(x / p.softcap);
                    const bool mine = c + i >= kb[j] && c + i < ke[j];
                    sc[j * CH + i] = mine ? x : NEG_INF;
                    cmax[j] = max(cmax[j], sc[j * CH + i]);
                }
            }
            [[unroll]] for (uint j = 0; j < QL; ++j) {
                // a chunk without a key of this token's leaves its state untouched
                const float m_new = max(mx[j], cmax[j]);
                const float alpha = cmax[j] == NEG_INF ? 1.0 : exp(mx[j] - m_new);
                l[j] *= alpha;
                [[unroll]] for (uint i = 0; i < DV4; ++i) acc[j * DV4 + i] *= alpha;
                mx[j] = m_new;
            }
            [[unroll]] for (uint i = 0; i < CH; ++i) {
                const uint vbase = kv_element(s, tree_key(r, min(c + i, hi - 1)), g, p.dv, 0);
                float pk[QL];
                bool mine[QL];
                [[unroll]] for (uint j = 0; j < QL; ++j) {
                    mine[j] = c + i >= kb[j] && c + i < ke[j];
                    pk[j] = mine[j] ? exp(sc[j * CH + i] - mx[j]) : 0.0;
                    l[j] += pk[j];
                }
                [[unroll]] for (uint d = 0; d < DV4; ++d) {
                    const vec4 vv = texelFetch(v_tex, int((vbase >> 2) + d));
                    [[unroll]] for (uint j = 0; j < QL; ++j)
                        acc[j * DV4 + d] = mine[j] ? acc[j * DV4 + d] + pk[j] * vv : acc[j * DV4 + d];
                }
            }
        }

        [[unroll]] for (uint j = 0; j < QL; ++j) {
            if ((!same && j != pass) || t0 + j >= p.n_tokens) continue;
            const float inv = 1.0 / l[j];
            const uint ob = p.o_off + (t0 + j) * p.o_stride + head * p.dv;
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
