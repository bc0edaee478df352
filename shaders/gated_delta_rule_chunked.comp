// SPDX-License-Identifier: Apache-2.0
// gated_delta_rule_chunked.comp: the gated delta rule in chunked (WY / UT
// transform) form, as HF's torch_chunk_gated_delta_rule (TDM_OP_GATED_DELTA_RULE
// with i[5] = chunk size C > 0): the same result as gated_delta_rule.comp up to
// f32 rounding, for long prefill batches. Per chunk of c tokens and value head,
// with q^, k^ normalised (q^ scaled), G the cumulative sum of g inside the chunk,
// L[i][m] = exp(G_i - G_m) (m <= i) and S the state entering the chunk:
//   A = -(beta k^ k^T) (.) L, strictly lower;  T = (I - A)^-1 (forward substitution)
//   V' = T (beta (.) (v - exp(G) (.) (k^ S)))       [= U - W S of the HF code]
//   O  = exp(G) (.) (q^ S) + ((q^ k^T) (.) L, incl. diagonal) V'
//   S <- exp(G_last) S + (k^ (.) exp(G_last - G))^T V'
// W = T (beta k^ exp(G)) is never formed: W S = T (beta exp(G) (k^ S)).
//
// One workgroup per value head, WG = max(dv, CMAX) lanes. Lane j < dv keeps column j
// of S in registers, with its columns of V' and of the intermediate products;
// the chunk's C x C matrices (A, then T, then q^k^T (.) L) live in one shared
// array, built cooperatively (lanes over pairs) and read with uniform indices.
// Lane m < c owns column m of T during the forward substitution (column m of T
// needs only column m and the rows of A), so the substitution needs no barrier.
//
// Checkpoints: a chunk also ends after every row whose state_io entry asks for a
// checkpoint, so the state written there is the exact state after that row (a
// verify-style batch where every row checkpoints degenerates to chunks of one
// token). Each segment of the batch (recurrent_state.glsl: a run of rows of one
// sequence) runs in a workgroup row of its own, its state read from its checkpoint
// before its first row; chunks never cross a segment's end.
// Not batch-invariant: chunk boundaries depend on n. Use the recurrent form for
// decode and verify batches.
//
// Cost: per token and lane about as many multiply-adds as the recurrent form,
// but the dependency chain through S is one step per chunk instead of one per
// token, which is what a GPU needs on long prompts. Without matrix units the
// chunk's extra C x C work is pure overhead: on lavapipe this form measured 2-3x
// slower than gated_delta_rule.comp (dk = dv = 128, 256 tokens), and its
// pipeline takes seconds to JIT at dk = 128.
//
// Dispatch: x = Nv, y = the most segments a batch can hold. Variants:
// gated_delta_rule_chunked_<tex|buf>; spec constants
// DK (dk) and CMAX (the largest chunk, sizing the arrays: graph.h
// kMaxDeltaRuleChunk); the chunk size and head map are push constants, so one
// pipeline serves every chunk size.
#version 450
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DK = 128;
layout(constant_id = 2) const uint CMAX = 64;  // largest chunk (array sizes)

layout(push_constant) uniform Params {
    uint n_tokens, n_k_heads, n_v_heads, dv;
    uint grouped;              // head map: 1 kh = h / (Nv / Nk), 0 kh = h % Nk
    uint chunk;                // chunked form: rows per chunk (<= CMAX)
    uint qkv_off, qkv_stride;
    uint g_off, beta_off;
    uint o_off, o_stride;
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

shared float sM[CMAX * CMAX];  // [i][m]: A, then T, then (q^ k^T) (.) L
shared float sG[CMAX];         // G_i: cumulative g inside the chunk
shared float sB[CMAX];         // beta_i
shared float sIK[CMAX];        // 1 / |k_i|
shared float sIQ[CMAX];        // scale / |q_i|

uint qcol(uint kh) { return kh * DK; }
uint kcol(uint kh) { return (p.n_k_heads + kh) * DK; }
float dot_rows(uint a, uint b) {  // dk-long dot product of two qkv segments
    float s = 0.0;
    [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) s += dot(qkv_at4(a + 4 * i4), qkv_at4(b + 4 * i4));
    return s;
}

void main() {
    const uint h = gl_WorkGroupID.x, lane = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
    Segment sg;
    if (!batch_segment(gl_WorkGroupID.y, sg)) return;  // the same for the whole workgroup
    const uint end = sg.first + sg.count;
    const uint kh = p.grouped != 0 ? h / (p.n_v_heads / p.n_k_heads) : h % p.n_k_heads;
    const bool col = lane < p.dv;                         // lane owns column `lane` of S
    const uint head = h * DK * p.dv + min(lane, p.dv - 1);  // element (h, 0, lane) of a checkpoint
    const uint vcol = 2 * p.n_k_heads * DK + h * p.dv + lane;

    vec4 S[DK4];
    uint base;
    const bool have = read_checkpoint(sg, base);
    [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4)
        S[i4] = have && col ? vec4(st[base + head + (4 * i4) * p.dv], st[base + head + (4 * i4 + 1) * p.dv],
                                   st[base + head + (4 * i4 + 2) * p.dv], st[base + head + (4 * i4 + 3) * p.dv])
                            : vec4(0.0);

    float Tc[CMAX], Vp[CMAX], r[CMAX];
    for (uint c0 = sg.first; c0 < end;) {
        // Chunk: at most p.chunk rows, ending after any row that asks for a checkpoint.
        // Every lane computes the same cn from the same reads: control stays uniform.
        uint cn = min(p.chunk, end - c0);
        for (uint i = 0; i < cn; ++i)
            if (sio[p.io_off + 1 + c0 + i] >= 0) {
                cn = i + 1;
                break;
            }
        barrier();  // the previous chunk's readers of shared memory are done

        // 1. per-row scalars; lane i sums g_0..g_i itself, in order
        if (lane < cn) {
            const uint row = p.qkv_off + (c0 + lane) * p.qkv_stride;
            sIK[lane] = inversesqrt(dot_rows(row + kcol(kh), row + kcol(kh)) + p.eps);
            sIQ[lane] = inversesqrt(dot_rows(row + qcol(kh), row + qcol(kh)) + p.eps) * p.scale;
            sB[lane] = beta_at(p.beta_off + (c0 + lane) * p.n_v_heads + h);
            float G = 0.0;
            for (uint m = 0; m <= lane; ++m) G += g_at(p.g_off + (c0 + m) * p.n_v_heads + h);
            sG[lane] = G;
        }
        barrier();

        // 2. A[i][m] = -beta_i (k^_i . k^_m) exp(G_i - G_m) for m < i, else 0
        for (uint e = lane; e < cn * cn; e += WG) {
            const uint i = e / cn, m = e % cn;
            float a = 0.0;
            if (m < i) {
                const uint ri = p.qkv_off + (c0 + i) * p.qkv_stride, rm = p.qkv_off + (c0 + m) * p.qkv_stride;
                a = -sB[i] * dot_rows(ri + kcol(kh), rm + kcol(kh)) * sIK[i] * sIK[m] * exp(sG[i] - sG[m]);
            }
            sM[i * CMAX + m] = a;
        }
        barrier();

        // 3. T = (I - A)^-1: lane m owns column m. T'[i][m] = A[i][m] + sum_{l<i} A[i][l] T'[l][m]
        //    with T' strictly lower (T'[l][m] = 0 for l <= m), then T = T' + I.
        if (lane < cn) {
            for (uint i = 0; i < cn; ++i) {
                float t = sM[i * CMAX + lane];
                for (uint l = 0; l < i; ++l) t += sM[i * CMAX + l] * Tc[l];
                Tc[i] = i > lane ? t : 0.0;
            }
            Tc[lane] = 1.0;
        }
        barrier();  // everyone is done reading A
        if (lane < cn)
            for (uint i = 0; i < cn; ++i) sM[i * CMAX + lane] = Tc[i];
        barrier();

        // 4. V'[:, j] = T r with r_m = beta_m (v_m[j] - exp(G_m) (k^_m . S[:, j]))
        if (col) {
            for (uint m = 0; m < cn; ++m) {
                const uint rm = p.qkv_off + (c0 + m) * p.qkv_stride;
                float y = 0.0;
                [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) y += dot(S[i4], qkv_at4(rm + kcol(kh) + 4 * i4));
                r[m] = sB[m] * (qkv_at(rm + vcol) - exp(sG[m]) * (y * sIK[m]));
            }
            for (uint i = 0; i < cn; ++i) {
                float acc = 0.0;
                for (uint m = 0; m <= i; ++m) acc += sM[i * CMAX + m] * r[m];
                Vp[i] = acc;
            }
        }
        barrier();  // T is consumed

        // 5. (q^_i . k^_m) exp(G_i - G_m) for m <= i, else 0
        for (uint e = lane; e < cn * cn; e += WG) {
            const uint i = e / cn, m = e % cn;
            float a = 0.0;
            if (m <= i) {
                const uint ri = p.qkv_off + (c0 + i) * p.qkv_stride, rm = p.qkv_off + (c0 + m) * p.qkv_stride;
                a = dot_rows(ri + qcol(kh), rm + kcol(kh)) * sIQ[i] * sIK[m] * exp(sG[i] - sG[m]);
            }
            sM[i * CMAX + m] = a;
        }
        barrier();

        if (col) {
            // 6. O[i][j] = exp(G_i) (q^_i . S[:, j]) + sum_{m<=i} M[i][m] V'[m]
            for (uint i = 0; i < cn; ++i) {
                const uint ri = p.qkv_off + (c0 + i) * p.qkv_stride;
                float qs = 0.0;
                [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) qs += dot(S[i4], qkv_at4(ri + qcol(kh) + 4 * i4));
                float acc = exp(sG[i]) * (qs * sIQ[i]);
                for (uint m = 0; m <= i; ++m) acc += sM[i * CMAX + m] * Vp[m];
                o[p.o_off + ((c0 + i) * p.n_v_heads + h) * p.o_stride + lane] = acc;
            }
            // 7. S <- exp(G_last) S + sum_m k^_m exp(G_last - G_m) V'[m]
            const float gl = sG[cn - 1];
            for (uint m = 0; m < cn; ++m) r[m] = sIK[m] * exp(gl - sG[m]) * Vp[m];
            const float decay = exp(gl);
            [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4) {
                vec4 acc = S[i4] * decay;
                for (uint m = 0; m < cn; ++m)
                    acc += qkv_at4(p.qkv_off + (c0 + m) * p.qkv_stride + kcol(kh) + 4 * i4) * r[m];
                S[i4] = acc;
            }
            if (write_checkpoint(sg, c0 + cn - 1, base)) {
                [[unroll]] for (uint i4 = 0; i4 < DK4; ++i4)
                    [[unroll]] for (uint c = 0; c < 4; ++c) st[base + head + (4 * i4 + c) * p.dv] = S[i4][c];
            }
        }
        c0 += cn;
    }
}
