// matmul.comp: y[t][r] = sum_k W[r][k] * x[t][k] (+ add[t][r]) for the N tokens of a
// decode or verify batch, W in any supported weight type.
//
// Layout "rowlane": one invocation per weight row; the invocation walks its row
// once and applies each dequantized weight to all N tokens, so weights are read
// once per batch. x loads are the same for every lane (subgroup-uniform: cheap
// on lavapipe), weight loads are per lane (a gather through a texel buffer on
// lavapipe, a storage-buffer load elsewhere).
//
// Batch invariance (DESIGN invariant 1): the value for token t is computed by the
// same instruction sequence whatever N is. N is a push constant; the tokens are
// processed NT at a time (NT is a specialization constant, NT in {1,2,4,8}) and
// each token's accumulation order depends only on the row, never on N or NT.
// tests/ops/batch_invariance_test.cpp checks this bit for bit.
//
// Dispatch: x = ceil(M / local_size). Variants: matmul_<wtype>_<tex|buf>, wtype in
// f32 f16 bf16 q8_0 q4_0 q4_K q5_K q6_K (WTYPE_*). Weight planes: see
// host/graph/weight_layout.h (main plane of 16-byte texels per row; f16 scale
// plane for q8_0, q4_0, q6_K).
#version 450
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NT = 8;        // tokens per pass
layout(constant_id = 2) const uint FUSE_ADD = 0;  // 1: y = W x + add

#define W_BINDING 0
#define S_BINDING 1
#include "weights.glsl"
layout(binding = 2, std430) readonly buffer XBuf { vec4 x4[]; };
layout(binding = 3, std430) writeonly buffer YBuf { float y[]; };
layout(binding = 4, std430) readonly buffer ABuf { float add[]; };

layout(push_constant) uniform Params {
    uint K;         // columns
    uint M;         // rows in this dispatch
    uint N;         // tokens
    uint x_off;     // element offset of token 0 (multiple of 4)
    uint x_stride;  // elements between tokens (multiple of 4)
    uint y_off;     // element offset of (token 0, row 0) of this dispatch
    uint y_stride;
    uint w_off;     // texel offset of row 0 in the main plane
    uint s_off;     // element offset of row 0 in the scale plane
    uint add_off;
    uint add_stride;
} p;

#define X4(t, k) x4[(p.x_off + (t0 + (t)) * p.x_stride + (k)) >> 2]
#define FOR_TOKENS [[unroll]] for (uint t = 0; t < NT; ++t) if (t < nt)

void main() {
    const uint r = gl_GlobalInvocationID.x;
    if (r >= p.M) return;

    for (uint t0 = 0; t0 < p.N; t0 += NT) {
        const uint nt = min(NT, p.N - t0);
        float acc[NT];
        [[unroll]] for (uint t = 0; t < NT; ++t) acc[t] = 0.0;

#if defined(WTYPE_F32)
        const uint units = p.K / 4;
        const uint base = p.w_off + r * units;
        for (uint u = 0; u < units; ++u) {
            const vec4 w = uintBitsToFloat(load_w(base + u));
            FOR_TOKENS { acc[t] += dot(w, X4(t, 4 * u)); }
        }
#elif defined(WTYPE_F16) || defined(WTYPE_BF16)
        const uint units = p.K / 8;
        const uint base = p.w_off + r * units;
        for (uint u = 0; u < units; ++u) {
            const uvec4 q = load_w(base + u);
#if defined(WTYPE_F16)
            const vec4 wa = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
            const vec4 wb = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
#else
            const vec4 wa = uintBitsToFloat(uvec4(q.x << 16, q.x & 0xffff0000u, q.y << 16, q.y & 0xffff0000u));
            const vec4 wb = uintBitsToFloat(uvec4(q.z << 16, q.z & 0xffff0000u, q.w << 16, q.w & 0xffff0000u));
#endif
            FOR_TOKENS { acc[t] += dot(wa, X4(t, 8 * u)) + dot(wb, X4(t, 8 * u + 4)); }
        }
#elif defined(WTYPE_Q8_0)
        const uint nb = p.K / 32;
        const uint base = p.w_off + r * nb * 2;
        const uint sbase = p.s_off + r * nb;
        for (uint b = 0; b < nb; ++b) {
            const uvec4 q0 = load_w(base + 2 * b), q1 = load_w(base + 2 * b + 1);
            const float d = load_scale(sbase + b);
            vec4 w[8];
            w[0] = vec4(i8x4(q0.x)); w[1] = vec4(i8x4(q0.y)); w[2] = vec4(i8x4(q0.z)); w[3] = vec4(i8x4(q0.w));
            w[4] = vec4(i8x4(q1.x)); w[5] = vec4(i8x4(q1.y)); w[6] = vec4(i8x4(q1.z)); w[7] = vec4(i8x4(q1.w));
            FOR_TOKENS {
                float s = 0.0;
                [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(w[j] * d, X4(t, 32 * b + 4 * j));
                acc[t] += s;
            }
        }
#elif defined(WTYPE_Q4_0)
        const uint nb = p.K / 32;
        const uint base = p.w_off + r * nb;
        const uint sbase = p.s_off + r * nb;
        for (uint b = 0; b < nb; ++b) {
            const uvec4 q = load_w(base + b);
            const float d = load_scale(sbase + b);
            vec4 w[8];
            [[unroll]] for (uint j = 0; j < 4; ++j) {
                w[j] = (lo4(q[j]) - 8.0) * d;      // weights 4j .. 4j+3
                w[4 + j] = (hi4(q[j]) - 8.0) * d;  // weights 16+4j ..
            }
            FOR_TOKENS {
                float s = 0.0;
                [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(w[j], X4(t, 32 * b + 4 * j));
                acc[t] += s;
            }
        }
#elif defined(WTYPE_Q4_K) || defined(WTYPE_Q5_K)
#if defined(WTYPE_Q4_K)
        const uint TEX = 9;   // header, qs[128]
        const uint QS = 1;
#else
        const uint TEX = 11;  // header, qh[32], qs[128]
        const uint QS = 3;
#endif
        const uint nb = p.K / 256;
        const uint base = p.w_off + r * nb * TEX;
        for (uint b = 0; b < nb; ++b) {
            const uvec4 h = load_w(base + b * TEX);
            const float d = half_lo(h.x), dmin = half_hi(h.x);
            const uvec4 sa = u8x4(h.y), sb = u8x4(h.z), sc8 = u8x4(h.w);  // scales[0..3], [4..7], [8..11]
#if defined(WTYPE_Q5_K)
            const uvec4 qh0 = load_w(base + b * TEX + 1), qh1 = load_w(base + b * TEX + 2);
#endif
            [[unroll]] for (uint c = 0; c < 4; ++c) {
                // sub-blocks 2c (low nibbles) and 2c+1 (high nibbles): get_scale_min_k4
                uint sl, ml, sh, mh;
                if (c < 2) {
                    sl = sa[2 * c] & 63u;       ml = sb[2 * c] & 63u;
                    sh = sa[2 * c + 1] & 63u;   mh = sb[2 * c + 1] & 63u;
                } else {
                    const uint jl = 2 * c, jh = 2 * c + 1;  // 4..7
                    sl = (sc8[jl - 4] & 15u) | ((sa[jl - 4] >> 6) << 4);
                    ml = (sc8[jl - 4] >> 4) | ((sb[jl - 4] >> 6) << 4);
                    sh = (sc8[jh - 4] & 15u) | ((sa[jh - 4] >> 6) << 4);
                    mh = (sc8[jh - 4] >> 4) | ((sb[jh - 4] >> 6) << 4);
                }
                const float d1 = d * float(sl), m1 = dmin * float(ml);
                const float d2 = d * float(sh), m2 = dmin * float(mh);
                const uvec4 qa = load_w(base + b * TEX + QS + 2 * c);
                const uvec4 qb = load_w(base + b * TEX + QS + 2 * c + 1);
                vec4 wl[8], wh[8];
                [[unroll]] for (uint j = 0; j < 4; ++j) {
                    vec4 la = lo4(qa[j]), lb = lo4(qb[j]), ha = hi4(qa[j]), hb = hi4(qb[j]);
#if defined(WTYPE_Q5_K)
                    // 5th bit: qh[l] bit (2c) for the low half, bit (2c+1) for the high half
                    const uint wa = qh0[j], wb = qh1[j];
                    la += 16.0 * vec4(uvec4(wa >> (2 * c), wa >> (8 + 2 * c), wa >> (16 + 2 * c), wa >> (24 + 2 * c)) & 1u);
                    lb += 16.0 * vec4(uvec4(wb >> (2 * c), wb >> (8 + 2 * c), wb >> (16 + 2 * c), wb >> (24 + 2 * c)) & 1u);
                    ha += 16.0 * vec4(uvec4(wa >> (2 * c + 1), wa >> (9 + 2 * c), wa >> (17 + 2 * c), wa >> (25 + 2 * c)) & 1u);
                    hb += 16.0 * vec4(uvec4(wb >> (2 * c + 1), wb >> (9 + 2 * c), wb >> (17 + 2 * c), wb >> (25 + 2 * c)) & 1u);
#endif
                    wl[j] = d1 * la - m1;
                    wl[4 + j] = d1 * lb - m1;
                    wh[j] = d2 * ha - m2;
                    wh[4 + j] = d2 * hb - m2;
                }
                const uint k0 = 256 * b + 64 * c;
                FOR_TOKENS {
                    float s = 0.0;
                    [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(wl[j], X4(t, k0 + 4 * j));
                    [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(wh[j], X4(t, k0 + 32 + 4 * j));
                    acc[t] += s;
                }
            }
        }
#elif defined(WTYPE_Q6_K)
        const uint TEX = 13;  // ql[128] (texels 0-7), qh[64] (8-11), scales[16] (12)
        const uint nb = p.K / 256;
        const uint base = p.w_off + r * nb * TEX;
        const uint sbase = p.s_off + r * nb;
        for (uint b = 0; b < nb; ++b) {
            const float d = load_scale(sbase + b);
            const uvec4 scv = load_w(base + b * TEX + 12);
            [[unroll]] for (uint hh = 0; hh < 2; ++hh) {
                const uvec4 qh0 = load_w(base + b * TEX + 8 + 2 * hh), qh1 = load_w(base + b * TEX + 9 + 2 * hh);
                [[unroll]] for (uint g = 0; g < 4; ++g) {
                    const uint qlt = 4 * hh + 2 * (g & 1u);  // texel of ql[64hh + 32(g&1)]
                    const uvec4 qa = load_w(base + b * TEX + qlt), qb = load_w(base + b * TEX + qlt + 1);
                    const uint is = 8 * hh + 2 * g;  // scale index of weights l = 0..15
                    const float da = d * float(bitfieldExtract(int(scv[is >> 2]), int((is & 3u) * 8u), 8));
                    const float db = d * float(bitfieldExtract(int(scv[(is + 1) >> 2]), int(((is + 1) & 3u) * 8u), 8));
                    vec4 w[8];
                    [[unroll]] for (uint j = 0; j < 4; ++j) {
                        const vec4 la = g < 2 ? lo4(qa[j]) : hi4(qa[j]);
                        const vec4 lb = g < 2 ? lo4(qb[j]) : hi4(qb[j]);
                        const uint ha = qh0[j] >> (2 * g), hb = qh1[j] >> (2 * g);
                        const vec4 hia = vec4(uvec4(ha, ha >> 8, ha >> 16, ha >> 24) & 3u);
                        const vec4 hib = vec4(uvec4(hb, hb >> 8, hb >> 16, hb >> 24) & 3u);
                        w[j] = da * (la + 16.0 * hia - 32.0);
                        w[4 + j] = db * (lb + 16.0 * hib - 32.0);
                    }
                    const uint k0 = 256 * b + 128 * hh + 32 * g;
                    FOR_TOKENS {
                        float s = 0.0;
                        [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(w[j], X4(t, k0 + 4 * j));
                        acc[t] += s;
                    }
                }
            }
        }
#else
#error "matmul.comp: define one WTYPE_*"
#endif

        FOR_TOKENS {
            float v = acc[t];
            if (FUSE_ADD != 0) v += add[p.add_off + (t0 + t) * p.add_stride + r];
            y[p.y_off + (t0 + t) * p.y_stride + r] = v;
        }
    }
}
