// SPDX-License-Identifier: Apache-2.0
// gated_delta_rule.comp: the gated delta rule, recurrent form
// (TDM_OP_GATED_DELTA_RULE with i[5] = 0; docs/models/common.md §6). Per token t and
// value head h, with key head kh (tiled h % Nk or grouped h / (Nv / Nk)):
//   k^ = k / sqrt(|k|^2 + eps),  q^ = scale * q / sqrt(|q|^2 + eps)
//   S <- exp(g) S;  u = S^T k^;  S <- S + k^ (x) beta (v - u);  o = S^T q^
// S is the head's [dk][dv] f32 state.
//
// One workgroup per value head, one lane per column j of S (local size = dv).
// Lane j keeps column j of S in registers across all tokens of the batch: every
// quantity it needs is either its own column (S[:, j], v[j], o[j]) or shared
// read-only input (q, k, g, beta of the token), so there is no cross-lane
// reduction. The token's q and k are staged once per workgroup in shared memory
// (double-buffered by token parity: one barrier per token) and read back with
// constant indices, which lavapipe turns into uniform loads; every lane then
// normalises them itself, in the same order. (Fetching them per lane instead
// ran as fast but took 2.5x longer to JIT.) The code applied to a token never
// depends on the batch size n, so a token's output and the states written after
// it are bit-identical whether it is decoded alone (state read back from its
// checkpoint) or is row i of a batch: the basis of exact speculative
// verification and rollback by checkpoint.
// The batch's segments (recurrent_state.glsl: runs of rows of one sequence) run in
// workgroup rows of their own. A segment's state is read from its checkpoint into
// registers before its first row and written after row i to checkpoint
// state_io[1 + i] when >= 0 (each lane writes only its own column, so writing the
// checkpoint that was read is safe).
//
// Dispatch: x = Nv, y = the most segments a batch can hold. Variants: gated_delta_rule_<tex|buf> (activation reads through
// texel views or storage buffers); spec constant DK (dk); the head map is a push
// constant.
#version 450
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DK = 128;

layout(push_constant) uniform Params {
    uint n_tokens, n_k_heads, n_v_heads, dv;
    uint grouped;              // head map: 1 kh = h / (Nv / Nk), 0 kh = h % Nk
    uint chunk;                // (chunked form only)
    uint qkv_off, qkv_stride;  // qkv row t at qkv_off + t * qkv_stride: q | k | v
    uint g_off, beta_off;      // g, beta: [Nv, n] contiguous
    uint o_off, o_stride;      // out row (t, h) at o_off + (t * Nv + h) * o_stride
    uint io_off, seq_off, n_ckpt, n_seqs, n_f32;
    float eps, scale;
} p;

#include "activations.glsl"
ACT_INPUT(0, qkv)
ACT_INPUT(1, g)
ACT_INPUT(2, beta)
layout(binding = 3, std430) writeonly buffer OBuf { float o[]; };
#define STATE_BINDING 4
#define IO_BINDING 5
#define SEQ_BINDING 6
#include "recurrent_state.glsl"

const uint DK4 = DK / 4;
shared vec4 sQK[2 * 2 * DK4];  // [token parity][q | k] of the current token

void main() {
    const uint h = gl_WorkGroupID.x, j = gl_LocalInvocationID.x;
    Segment sg;
    if (!batch_segment(gl_WorkGroupID.y, sg)) return;  // the same for the whole workgroup
    const uint kh = p.grouped != 0 ? h / (p.n_v_heads / p.n_k_heads) : h % p.n_k_heads;
    const uint head = h * DK * p.dv + j;  // element (h, 0, j) of a checkpoint

    vec4 S[DK4];  // S[i4][c] = S[4 * i4 + c][j]
    uint base;
    if (read_checkpoint(sg, base)) {
        [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4)
            S[i4] = vec4(st[base + head + (4 * i4) * p.dv], st[base + head + (4 * i4 + 1) * p.dv],
                         st[base + head + (4 * i4 + 2) * p.dv], st[base + head + (4 * i4 + 3) * p.dv]);
    } else {
        [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) S[i4] = vec4(0.0);
    }

    for (uint t = sg.first; t < sg.first + sg.count; ++t) {
        const uint row = p.qkv_off + t * p.qkv_stride;
        const uint qb = row + kh * DK, kb = row + (p.n_k_heads + kh) * DK;
        // Stage q | k in the half of sQK that token t-1 did not use: every lane has
        // passed token t-1's barrier, so nobody still reads the half of token t-2.
        const uint buf = (t & 1u) * 2 * DK4;
        for (uint e = j; e < 2 * DK4; e += p.dv) sQK[buf + e] = qkv_at4((e < DK4 ? qb : kb - 4 * DK4) + 4 * e);
        barrier();
        vec4 q[DK4], k[DK4];
        float ssq = 0.0, ssk = 0.0;
        [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) {
            q[i4] = sQK[buf + i4];
            k[i4] = sQK[buf + DK4 + i4];
            ssq += dot(q[i4], q[i4]);
            ssk += dot(k[i4], k[i4]);
        }
        const float ik = inversesqrt(ssk + p.eps);
        const float iq = inversesqrt(ssq + p.eps) * p.scale;
        const float decay = exp(g_at(p.g_off + t * p.n_v_heads + h));
        const float b = beta_at(p.beta_off + t * p.n_v_heads + h);
        const float v = qkv_at(row + 2 * p.n_k_heads * DK + h * p.dv + j);

        float u = 0.0;  // (S^T k)[j] after the decay
        [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) {
            S[i4] *= decay;
            u += dot(S[i4], k[i4]);
        }
        // S += k^ (x) delta with k^ = ik k and delta = beta (v - ik u)
        const float d = b * (v - u * ik) * ik;
        float acc = 0.0;
        [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) {
            S[i4] += k[i4] * d;
            acc += dot(S[i4], q[i4]);
        }
        o[p.o_off + (t * p.n_v_heads + h) * p.o_stride + j] = acc * iq;

        if (write_checkpoint(sg, t, base)) {
            [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4)
                [[unroll]] for (uint c = 0; c < 4; ++c) st[base + head + (4 * i4 + c) * p.dv] = S[i4][c];
        }
    }
}
