// SPDX-License-Identifier: Apache-2.0
// quantize_q8.comp: activation rows to int8 blocks for the int8 matmul
// (matmul_q8_rl.comp). Row t of x [K] becomes K/32 blocks of 32 int8, packed
// 4 per word (element 4w + j in byte j, as Q8_0 weights), then the blocks'
// f32 scales: q = round(x / d), d = max|x| / 127, rounding half away from
// zero as llama.cpp's quantize_row_q8_0 (x * (1/d), 0 when d is 0). A row's
// blocks never depend on other rows: batch-invariant.
// Output row: K/4 words of quants, then K/32 scales (as f32 bits), padded to 4.
// Dispatch: x = ceil(N * K/32 / 64), one invocation per block.
#version 450
layout(local_size_x = 64) in;
layout(binding = 0, std430) readonly buffer XBuf { vec4 x4[]; };
layout(binding = 1, std430) writeonly buffer QBuf { uint q[]; };

layout(push_constant) uniform Params {
    uint K, N, x_off, x_stride, q_off, q_stride;
} p;

void main() {
    const uint nb = p.K / 32;
    const uint i = gl_GlobalInvocationID.x;
    if (i >= p.N * nb) return;
    const uint t = i / nb, b = i % nb;
    const uint xb = (p.x_off + t * p.x_stride + b * 32) >> 2;
    vec4 v[8];
    float amax = 0.0;
    for (uint j = 0; j < 8; ++j) {
        v[j] = x4[xb + j];
        const vec4 a = abs(v[j]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    const float d = amax / 127.0;
    const float id = d != 0.0 ? 1.0 / d : 0.0;
    const uint qrow = p.q_off + t * p.q_stride;
    for (uint j = 0; j < 8; ++j) {
        const vec4 s = v[j] * id;
        const ivec4 r = ivec4(sign(s) * floor(abs(s) + 0.5));  // roundf: half away from zero
        q[qrow + b * 8 + j] = uint(r.x & 0xff) | (uint(r.y & 0xff) << 8) | (uint(r.z & 0xff) << 16) |
                              (uint(r.w & 0xff) << 24);
    }
    q[qrow + nb * 8 + b] = floatBitsToUint(d);
}
