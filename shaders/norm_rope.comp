// SPDX-License-Identifier: Apache-2.0
// norm_rope.comp: the attention prologue of a layer in one dispatch, the fusion of
// rms_norm -> rope for the query heads and rms_norm -> rope -> kv_store for the key
// heads (with the value heads, optionally RMS-normed without a weight, stored beside
// them). host/graph/fusion.cpp forms it from those ops; host/ops/norm_rope.cpp records it.
//   q rows (workgroups [0, q_rows)): y = rope(norm_q(x))           -> an activation
//   k rows (workgroups [q_rows, q_rows + n_tok * n_kv_head), STORE): per (token, head)
//     K = rope(norm_k(k)) and V = norm_v(v)                       -> the paged KV pools
// norm_*: none (0), RMSNorm without weight (1), times w (2), times (1 + w) (3).
// Bit for bit the unfused ops: the workgroup is norm.comp's (same local size, same
// strided sum of squares into the same workgroup_sum), each element is normed in
// norm.comp's order (x * scale, then * w), each pair is rotated by rope.comp's
// arithmetic and stored as kv_store.comp stores it. The normed row goes through shared
// memory (rope pairs NeoX elements i and i + n_rot/2; the store packs d and d + 1).
// Batch-invariant like those ops: one row's arithmetic never depends on the rows
// beside it. Rows are at most MAX_DIM (host/ops/norm_rope.cpp checks) elements.
// Dispatch: x = rows (up to 65535), y = rows / 65535 + 1.
#version 450
#include "reduce.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MODE = 0;      // tdm_rope_mode: 0 NeoX, 1 adjacent pairs
layout(constant_id = 2) const uint SECTIONS = 0;  // tdm_rope_sections (q rows only)
layout(constant_id = 3) const uint HAS_FF = 0;
layout(constant_id = 4) const uint Q_NORM = 0;
layout(constant_id = 5) const uint K_NORM = 0;
layout(constant_id = 6) const uint V_NORM = 0;    // 0 or 1 (no weight)
layout(constant_id = 7) const uint STORE = 0;     // 1: k rows exist
layout(constant_id = 8) const uint KV_F16 = 1;

const uint MAX_DIM = 512;

layout(binding = 0, std430) readonly buffer QBuf { float q_in[]; };
layout(binding = 1, std430) readonly buffer KBuf { float k_in[]; };
layout(binding = 2, std430) readonly buffer VBuf { float v_in[]; };
layout(binding = 3, std430) readonly buffer PosBuf { int pos[]; };
layout(binding = 4, std430) readonly buffer FfBuf { float ff[]; };
layout(binding = 5, std430) readonly buffer QwBuf { float qw[]; };
layout(binding = 6, std430) readonly buffer KwBuf { float kw[]; };
layout(binding = 7, std430) writeonly buffer YBuf { float y[]; };
layout(binding = 8, std430) readonly buffer SeqBuf { int seq[]; };
layout(binding = 9, std430) readonly buffer BtBuf { int bt[]; };
layout(binding = 10, std430) buffer KPool { uint k_pool[]; };
layout(binding = 11, std430) buffer VPool { uint v_pool[]; };

layout(push_constant) uniform Params {
    uint q_rows, head_dim, n_rot, q_heads;  // q_heads: q rows per token
    uint q_off, q_stride, y_off, y_stride;
    uint n_kv_head, k_off, k_stride, v_off, v_stride, dv;
    uint pos_off, pos_stride;
    uint sec0, sec1, sec2;
    float theta, freq_scale;
    uint n_freq;
    float eps;
    uint seq_off, block_size, max_blocks, ring_blocks;
    uint k_rows;
} p;

#include "paged_kv.glsl"

shared float row[MAX_DIM];
shared float rot[MAX_DIM];

// rope.comp's stream_of
uint stream_of(uint i) {
    if (SECTIONS == 1) {
        if (i < p.sec0) return 0;
        if (i < p.sec0 + p.sec1) return 1;
        if (i < p.sec0 + p.sec1 + p.sec2) return 2;
        return 3;
    }
    if (SECTIONS == 2) {
        if (i % 3 == 1 && i < 3 * p.sec1) return 1;
        if (i % 3 == 2 && i < 3 * p.sec2) return 2;
        if (i % 3 == 0 && i < 3 * p.sec0) return 0;
        return 3;
    }
    return 0;
}

// norm.comp's RMS mode over `cols` elements of src at `base` into row[]; NORM as Q_NORM.
#define NORM_INTO_ROW(src, base, cols, NORM, wbuf)                                               \
    {                                                                                           \
        if (NORM == 0) {                                                                        \
            for (uint c = gl_LocalInvocationID.x; c < cols; c += gl_WorkGroupSize.x)            \
                row[c] = src[base + c];                                                         \
        } else {                                                                                \
            float ss = 0.0;                                                                     \
            for (uint c = gl_LocalInvocationID.x; c < cols; c += gl_WorkGroupSize.x) {          \
                const float v = src[base + c];                                                  \
                ss += v * v;                                                                    \
            }                                                                                   \
            ss = workgroup_sum(ss);                                                             \
            const float scale = inversesqrt(ss / float(cols) + p.eps);                         \
            for (uint c = gl_LocalInvocationID.x; c < cols; c += gl_WorkGroupSize.x) {          \
                float v = src[base + c] * scale;                                                \
                if (NORM == 2) v *= wbuf[c];                                                    \
                if (NORM == 3) v *= 1.0 + wbuf[c];                                              \
                row[c] = v;                                                                     \
            }                                                                                   \
        }                                                                                       \
        barrier();                                                                              \
    }

// rope.comp's rotation of row[] (a head of `token`) into rot[].
void rope_row(uint token) {
    const uint half_rot = p.n_rot / 2;
    for (uint i = gl_LocalInvocationID.x; i < p.head_dim / 2; i += gl_WorkGroupSize.x) {
        if (i >= half_rot) {  // tail: pass through
            const uint c = p.n_rot + 2 * (i - half_rot);
            rot[c] = row[c];
            rot[c + 1] = row[c + 1];
            continue;
        }
        const uint i0 = MODE == 0 ? i : 2 * i;
        const uint i1 = MODE == 0 ? i + half_rot : 2 * i + 1;
        if (i >= p.n_freq) {
            rot[i0] = row[i0];
            rot[i1] = row[i1];
            continue;
        }
        const float ps = float(pos[p.pos_off + token * p.pos_stride + stream_of(i)]);
        float inv = p.freq_scale * exp2(-2.0 * float(i) / float(p.n_rot) * log2(p.theta));
        if (HAS_FF != 0) inv /= ff[i];
        const float a = ps * inv;
        const float cs = cos(a), sn = sin(a);
        const float x0 = row[i0], x1 = row[i1];
        rot[i0] = x0 * cs - x1 * sn;
        rot[i1] = x1 * cs + x0 * sn;
    }
    barrier();
}

// kv_store.comp's store of a pair
void store(uint e, float a, float b, bool is_k) {
    if (KV_F16 != 0) {
        const uint w = packHalf2x16(vec2(a, b));
        if (is_k) k_pool[e / 2] = w; else v_pool[e / 2] = w;
    } else {
        if (is_k) { k_pool[e] = floatBitsToUint(a); k_pool[e + 1] = floatBitsToUint(b); }
        else { v_pool[e] = floatBitsToUint(a); v_pool[e + 1] = floatBitsToUint(b); }
    }
}

void main() {
    const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
    if (wg < p.q_rows) {
        const uint token = wg / p.q_heads;
        NORM_INTO_ROW(q_in, p.q_off + wg * p.q_stride, p.head_dim, Q_NORM, qw)
        rope_row(token);
        const uint yb = p.y_off + wg * p.y_stride;
        for (uint c = gl_LocalInvocationID.x; c < p.head_dim; c += gl_WorkGroupSize.x) y[yb + c] = rot[c];
        return;
    }
    if (STORE == 0 || wg >= p.q_rows + p.k_rows) return;
    const uint r = wg - p.q_rows;  // k row: token t, head h
    const uint t = r / p.n_kv_head, h = r % p.n_kv_head;
    NORM_INTO_ROW(k_in, p.k_off + r * p.k_stride, p.head_dim, K_NORM, kw)
    rope_row(t);
    const uint s = uint(seq[p.seq_off + t]), ps = uint(pos[p.pos_off + t * p.pos_stride]);
    for (uint d = 2 * gl_LocalInvocationID.x; d < p.head_dim; d += 2 * gl_WorkGroupSize.x)
        store(kv_element(s, ps, h, p.head_dim, d), rot[d], rot[d + 1], true);
    barrier();  // row[] is rewritten for V
    NORM_INTO_ROW(v_in, p.v_off + r * p.v_stride, p.dv, V_NORM, kw)
    for (uint d = 2 * gl_LocalInvocationID.x; d < p.dv; d += 2 * gl_WorkGroupSize.x)
        store(kv_element(s, ps, h, p.dv, d), row[d], row[d + 1], false);
}
