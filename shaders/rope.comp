// SPDX-License-Identifier: Apache-2.0
// rope.comp: rotary position embedding over rows of head_dim (rows = tokens x heads).
//   MODE 0: NeoX pairs (i, i + n_rot/2)      MODE 1: adjacent pairs (2i, 2i+1)
// Partial rotary: dims >= n_rot pass through; so do the pairs of slots >= n_freq.
// Slot i (0..n_rot/2) has angle
//   pos_s * freq_scale * theta^(-2i/n_rot) / ff[i]
// where ff are optional frequency divisors (llama.cpp rope_freqs) and pos_s is the
// position stream chosen by SECTIONS: 0 none (stream 0), 1 contiguous sections
// (GLM/Qwen2-VL M-RoPE), 2 interleaved sections (Qwen3.5 IMROPE, llama.cpp rule).
// Each invocation rotates one pair (or copies one tail pair).
// Dispatch: x = ceil(head_dim/2 / local_size), y = rows (slices of 65535).
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const uint SECTIONS = 0;
layout(constant_id = 3) const uint HAS_FF = 0;

layout(binding = 0, std430) readonly buffer XBuf { float x[]; };
layout(binding = 1, std430) readonly buffer PosBuf { int pos[]; };
layout(binding = 2, std430) readonly buffer FfBuf { float ff[]; };
layout(binding = 3, std430) writeonly buffer YBuf { float y[]; };

layout(push_constant) uniform Params {
    uint rows, head_dim, n_rot, heads_per_token;
    uint x_off, x_stride, y_off, y_stride;
    uint pos_off, pos_stride;
    uint sec0, sec1, sec2;
    uint row0;
    float theta, freq_scale;
    uint n_freq;  // slots i >= n_freq keep angle 0 (proportional RoPE); n_rot/2 = all
} p;

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

void main() {
    const uint i = gl_GlobalInvocationID.x;
    const uint row = gl_WorkGroupID.y + p.row0;
    if (row >= p.rows || i >= p.head_dim / 2) return;
    const uint xb = p.x_off + row * p.x_stride, yb = p.y_off + row * p.y_stride;
    const uint half_rot = p.n_rot / 2;
    if (i >= half_rot) {  // tail: pass through
        const uint c = p.n_rot + 2 * (i - half_rot);
        y[yb + c] = x[xb + c];
        y[yb + c + 1] = x[xb + c + 1];
        return;
    }
    const uint i0 = MODE == 0 ? i : 2 * i;
    const uint i1 = MODE == 0 ? i + half_rot : 2 * i + 1;
    if (i >= p.n_freq) {  // angle 0: an exact pass-through, not cos/sin of a tiny angle
        y[yb + i0] = x[xb + i0];
        y[yb + i1] = x[xb + i1];
        return;
    }
    const uint token = row / p.heads_per_token;
    const float ps = float(pos[p.pos_off + token * p.pos_stride + stream_of(i)]);
    float inv = p.freq_scale * exp2(-2.0 * float(i) / float(p.n_rot) * log2(p.theta));
    if (HAS_FF != 0) inv /= ff[i];
    const float a = ps * inv;
    const float cs = cos(a), sn = sin(a);
    const float x0 = x[xb + i0], x1 = x[xb + i1];
    y[yb + i0] = x0 * cs - x1 * sn;
    y[yb + i1] = x1 * cs + x0 * sn;
}
