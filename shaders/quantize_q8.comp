// SPDX-License-Identifier: Apache-2.0
// quantize_q8.comp: activation rows to int8 blocks for the int8 matmul
// (matmul_q8_rl.comp). Row t of x [K] becomes K/32 blocks of 32 int8, packed
// 4 per word (element 4w + j in byte j, as Q8_0 weights), then the blocks'
// f32 scales: q = round(x / d), d = max|x| / 127, rounding half away from
// zero (the Q8_0 rule of llama.cpp's quantize_row_q8_0: x * (1/d), 0 when d
// is 0; the scale stays f32 where llama.cpp stores f16). A block holding a NaN
// or infinity gets a NaN scale, so the matmul's result is NaN, as with f32
// activations (the logits check sees it); a block below 1e-30 is all zeros.
// A row's blocks never depend on other rows: batch-invariant.
// Output row: K/4 words of quants, then K/32 scales (as f32 bits), padded to 4.
// Dispatch: ceil(N * K/32 / 64) groups of 64, one invocation per block (wrapped into y
// beyond 65535 groups).
#version 450
layout(local_size_x = 64) in;
layout(binding = 0, std430) readonly buffer XBuf { vec4 x4[]; };
layout(binding = 1, std430) writeonly buffer QBuf { uint q[]; };

layout(push_constant) uniform Params {
    uint K, N, x_off, x_stride, q_off, q_stride;
} p;

void main() {
    const uint nb = p.K / 32;
    const uint i = (gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u) * 64u + gl_LocalInvocationID.x;
    if (i >= p.N * nb) return;
    const uint t = i / nb, b = i % nb;
    const uint xb = (p.x_off + t * p.x_stride + b * 32) >> 2;
    vec4 v[8];
    float amax = 0.0;
    bool finite = true;
    for (uint j = 0; j < 8; ++j) {
        v[j] = x4[xb + j];
        finite = finite && !any(isnan(v[j])) && !any(isinf(v[j]));
        const vec4 a = abs(v[j]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    float d = amax / 127.0;
    if (!finite || d < 1e-30) {
        // no quants (converting NaN or infinity to int is undefined); NaN carries on in d
        for (uint j = 0; j < 8; ++j) v[j] = vec4(0.0);
        d = finite ? 0.0 : uintBitsToFloat(0x7fc00000u);
    }
    const float id = finite && d != 0.0 ? 1.0 / d : 0.0;
    const uint qrow = p.q_off + t * p.q_stride;
    for (uint j = 0; j < 8; ++j) {
        const vec4 a = abs(v[j] * id);
        vec4 r = floor(a);
        r += vec4(greaterThanEqual(a - r, vec4(0.5)));  // half away from zero, exact (not floor(a + 0.5))
        const ivec4 qi = ivec4(sign(v[j]) * r);
        q[qrow + b * 8 + j] = uint(qi.x & 0xff) | (uint(qi.y & 0xff) << 8) | (uint(qi.z & 0xff) << 16) |
                              (uint(qi.w & 0xff) << 24);
    }
    q[qrow + nb * 8 + b] = floatBitsToUint(d);
}
