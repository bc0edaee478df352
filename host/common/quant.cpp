// SPDX-License-Identifier: Apache-2.0
// host/common/quant.cpp: CPU (de)quantization, see quant.h and docs/formats/quants.md.
// The dequantizers are ports of llama.cpp's dequantize_row_* loops (same f32 operations, same
// order) so that their output is the value GPU kernels must reproduce. The quantizers are simple
// and deterministic; they are what tests use to make weights, not a copy of llama-quantize.
// Not here: type traits (dtype.h).
#include "common/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/fp16.h"

namespace tdm {
namespace {

constexpr int kQK = 32;    // legacy block size
constexpr int kQKK = 256;  // K-quant super-block size

// Block byte sizes and field offsets (docs/formats/quants.md §3, §4).
constexpr int kQ4_0Bytes = 18;
constexpr int kQ5_0Bytes = 22;   // d@0 qh[4]@2 qs[16]@6
constexpr int kQ5_1Bytes = 24;   // d@0 m@2 qh[4]@4 qs[16]@8
constexpr int kQ8_0Bytes = 34;
constexpr int kQ4_KBytes = 144;  // d@0 dmin@2 scales[12]@4 qs[128]@16
constexpr int kQ5_KBytes = 176;  // d@0 dmin@2 scales[12]@4 qh[32]@16 qs[128]@48
constexpr int kQ6_KBytes = 210;  // ql[128]@0 qh[64]@128 scales[16]@192 d@208

// Blocks are only 2-byte aligned in general (and src may be any pointer): read halves bytewise.
float load_f16(const uint8_t* p) { return f16_to_f32(uint16_t(p[0] | (p[1] << 8))); }
void store_f16(uint8_t* p, float f) {
    const uint16_t h = f32_to_f16(f);
    p[0] = uint8_t(h & 0xff);
    p[1] = uint8_t(h >> 8);
}

// get_scale_min_k4 [quants.c]: 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = uint8_t((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
        *m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// Inverse of get_scale_min_k4: packs 8 scales and 8 mins (each 0..63).
void pack_scale_min_k4(const uint8_t sc[8], const uint8_t m[8], uint8_t* q) {
    for (int j = 0; j < 4; ++j) {
        q[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = uint8_t(m[j] | ((m[j + 4] >> 4) << 6));
        q[j + 8] = uint8_t((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
    }
}

int nearest_int(float f) { return int(std::lround(f)); }

// ===== dequantization (ports of dequantize_row_*) ===============================================

void dequant_q4_0(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQ4_0Bytes, y += kQK) {
        const float d = load_f16(x);
        const uint8_t* qs = x + 2;
        for (int j = 0; j < kQK / 2; ++j) {
            const int x0 = (qs[j] & 0x0F) - 8;
            const int x1 = (qs[j] >> 4) - 8;
            y[j] = float(x0) * d;
            y[j + kQK / 2] = float(x1) * d;
        }
    }
}

// The 32 fifth bits of a Q5 block: bit j belongs to weight j (little-endian uint32).
uint32_t load_qh(const uint8_t* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

void dequant_q5_0(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQ5_0Bytes, y += kQK) {
        const float d = load_f16(x);
        const uint32_t qh = load_qh(x + 2);
        const uint8_t* qs = x + 6;
        for (int j = 0; j < kQK / 2; ++j) {
            const int x0 = int((qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10)) - 16;
            const int x1 = int((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
            y[j] = float(x0) * d;
            y[j + kQK / 2] = float(x1) * d;
        }
    }
}

void dequant_q5_1(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQ5_1Bytes, y += kQK) {
        const float d = load_f16(x);
        const float m = load_f16(x + 2);
        const uint32_t qh = load_qh(x + 4);
        const uint8_t* qs = x + 8;
        for (int j = 0; j < kQK / 2; ++j) {
            const int x0 = int((qs[j] & 0x0F) | (((qh >> j) << 4) & 0x10));
            const int x1 = int((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
            y[j] = float(x0) * d + m;
            y[j + kQK / 2] = float(x1) * d + m;
        }
    }
}

void dequant_q8_0(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQ8_0Bytes, y += kQK) {
        const float d = load_f16(x);
        for (int j = 0; j < kQK; ++j) y[j] = float(int8_t(x[2 + j])) * d;
    }
}

void dequant_q4_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQ4_KBytes) {
        const float d = load_f16(x);
        const float min = load_f16(x + 2);
        const uint8_t* scales = x + 4;
        const uint8_t* q = x + 16;
        int is = 0;
        uint8_t sc, m;
        for (int j = 0; j < kQKK; j += 64) {
            get_scale_min_k4(is + 0, scales, &sc, &m);
            const float d1 = d * float(sc);
            const float m1 = min * float(m);
            get_scale_min_k4(is + 1, scales, &sc, &m);
            const float d2 = d * float(sc);
            const float m2 = min * float(m);
            for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
            q += 32;
            is += 2;
        }
    }
}

void dequant_q5_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQ5_KBytes) {
        const float d = load_f16(x);
        const float min = load_f16(x + 2);
        const uint8_t* scales = x + 4;
        const uint8_t* qh = x + 16;
        const uint8_t* ql = x + 48;
        int is = 0;
        uint8_t sc, m;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < kQKK; j += 64) {
            get_scale_min_k4(is + 0, scales, &sc, &m);
            const float d1 = d * float(sc);
            const float m1 = min * float(m);
            get_scale_min_k4(is + 1, scales, &sc, &m);
            const float d2 = d * float(sc);
            const float m2 = min * float(m);
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * float((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * float((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
            ql += 32;
            is += 2;
            u1 = uint8_t(u1 << 2);
            u2 = uint8_t(u2 << 2);
        }
    }
}

void dequant_q6_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQ6_KBytes) {
        const float d = load_f16(x + 208);
        const uint8_t* ql = x;
        const uint8_t* qh = x + 128;
        const int8_t* sc = reinterpret_cast<const int8_t*>(x + 192);
        for (int n = 0; n < kQKK; n += 128) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                // C evaluates d * sc[..] * q left to right: (d * sc) * q, all in f32.
                y[l + 0] = d * float(sc[is + 0]) * float(q1);
                y[l + 32] = d * float(sc[is + 2]) * float(q2);
                y[l + 64] = d * float(sc[is + 4]) * float(q3);
                y[l + 96] = d * float(sc[is + 6]) * float(q4);
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

// ===== quantization ==============================================================================

// ggml's quantize_row_q8_0_ref: d = amax / 127, q = round(x / d).
void quant_q8_0(const float* x, uint8_t* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQK, y += kQ8_0Bytes) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y, d);
        for (int j = 0; j < kQK; ++j) y[2 + j] = uint8_t(int8_t(std::round(x[j] * id)));
    }
}

// ggml's quantize_row_q4_0_ref: the signed value of largest magnitude maps to -8 exactly, so
// the opposite end of the range is clipped to 7 steps.
void quant_q4_0(const float* x, uint8_t* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQK, y += kQ4_0Bytes) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y, d);
        for (int j = 0; j < kQK / 2; ++j) {
            // The int8 cast truncates; +8.5 turns that into rounding (ggml does the same).
            const int xi0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
            const int xi1 = std::min(15, int(int8_t(x[j + kQK / 2] * id + 8.5f)));
            y[2 + j] = uint8_t(xi0 | (xi1 << 4));
        }
    }
}

void store_qh(uint8_t* p, uint32_t qh) {
    for (int i = 0; i < 4; ++i) p[i] = uint8_t(qh >> (8 * i));
}

// Packs 32 five-bit quants: low nibbles of weights j and j + 16 share qs[j], fifth bits go
// to bit j of qh (docs/formats/quants.md §3.3).
void pack_q5(const uint8_t q[kQK], uint8_t* qh_out, uint8_t* qs) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        qs[j] = uint8_t((q[j] & 0x0F) | ((q[j + kQK / 2] & 0x0F) << 4));
        qh |= uint32_t((q[j] >> 4) & 1) << j;
        qh |= uint32_t((q[j + kQK / 2] >> 4) & 1) << (j + kQK / 2);
    }
    store_qh(qh_out, qh);
}

// ggml's quantize_row_q5_0_ref: as Q4_0 with 32 levels, the signed extreme maps to -16.
void quant_q5_0(const float* x, uint8_t* y, int64_t nb) {
    uint8_t q[kQK];
    for (int64_t i = 0; i < nb; ++i, x += kQK, y += kQ5_0Bytes) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < kQK; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y, d);
        for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
        pack_q5(q, y + 2, y + 6);
    }
}

// ggml's quantize_row_q5_1_ref: d = (max - min) / 31 and m = min, q = round((x - min) / d).
void quant_q5_1(const float* x, uint8_t* y, int64_t nb) {
    uint8_t q[kQK];
    for (int64_t i = 0; i < nb; ++i, x += kQK, y += kQ5_1Bytes) {
        float min = x[0], max = x[0];
        for (int j = 1; j < kQK; ++j) {
            min = std::min(min, x[j]);
            max = std::max(max, x[j]);
        }
        const float d = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y, d);
        store_f16(y + 2, min);
        // The uint8 cast truncates; +0.5 turns that into rounding (ggml does the same).
        for (int j = 0; j < kQK; ++j) q[j] = uint8_t((x[j] - min) * id + 0.5f);
        pack_q5(q, y + 4, y + 8);
    }
}

// Fits x[0..n) ~ scale * q - min with integer q in [0, nmax], scale >= 0 and min >= 0 (the
// K-quant formats subtract an unsigned min, so the represented range always contains 0).
// Starts from the min/max fit and refines with a few least-squares steps, keeping the best.
void fit_scale_min(const float* x, int n, int nmax, float* scale, float* min) {
    float lo = 0.0f, hi = 0.0f;
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
    }
    float s = (hi - lo) / float(nmax), m = -lo;
    *scale = s;
    *min = m;
    if (s == 0.0f) return;
    auto error_of = [&](float es, float em) {
        double err = 0.0;
        for (int i = 0; i < n; ++i) {
            const int q = std::clamp(nearest_int((x[i] + em) / es), 0, nmax);
            const double e = double(es) * q - em - x[i];
            err += e * e;
        }
        return err;
    };
    double best = error_of(s, m);
    for (int iter = 0; iter < 4; ++iter) {
        // Least squares for (s, m) given the current integer assignment.
        double sq = 0, sqq = 0, sx = 0, sqx = 0;
        for (int i = 0; i < n; ++i) {
            const int q = std::clamp(nearest_int((x[i] + m) / s), 0, nmax);
            sq += q;
            sqq += double(q) * q;
            sx += x[i];
            sqx += double(q) * x[i];
        }
        const double det = n * sqq - sq * sq;
        if (det <= 0) break;
        double ns = (n * sqx - sq * sx) / det;
        double nm = (ns * sq - sx) / n;  // from x ~ s*q - m: m = (s*sum q - sum x) / n
        if (nm < 0) {                    // keep 0 representable: m >= 0
            nm = 0;
            ns = sqq > 0 ? sqx / sqq : 0;
        }
        if (!(ns > 0)) break;
        const double err = error_of(float(ns), float(nm));
        if (err >= best) break;
        best = err;
        s = float(ns);
        m = float(nm);
        *scale = s;
        *min = m;
    }
}

// Q4_K (nmax 15) and Q5_K (nmax 31): per 32-weight sub-block scale/min, both quantized to 6 bits
// against the f16 super-scales d = max scale / 63 and dmin = max min / 63. Final quants are
// computed from the decoded (d * sc, dmin * m), so they agree with what dequantization sees.
void quant_k_asym(const float* x, uint8_t* d_dmin, uint8_t* scales, uint8_t q_out[kQKK], int nmax) {
    float sub_scale[8], sub_min[8];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
        fit_scale_min(x + 32 * j, 32, nmax, &sub_scale[j], &sub_min[j]);
        max_scale = std::max(max_scale, sub_scale[j]);
        max_min = std::max(max_min, sub_min[j]);
    }
    store_f16(d_dmin, max_scale / 63.0f);
    store_f16(d_dmin + 2, max_min / 63.0f);
    const float d = load_f16(d_dmin);
    const float dmin = load_f16(d_dmin + 2);
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
        sc[j] = d > 0.0f ? uint8_t(std::clamp(nearest_int(sub_scale[j] / d), 0, 63)) : 0;
        m[j] = dmin > 0.0f ? uint8_t(std::clamp(nearest_int(sub_min[j] / dmin), 0, 63)) : 0;
    }
    pack_scale_min_k4(sc, m, scales);
    for (int j = 0; j < 8; ++j) {
        const float d1 = d * float(sc[j]);
        const float m1 = dmin * float(m[j]);
        for (int l = 0; l < 32; ++l) {
            const int t = 32 * j + l;
            q_out[t] = d1 > 0.0f ? uint8_t(std::clamp(nearest_int((x[t] + m1) / d1), 0, nmax)) : 0;
        }
    }
}

void quant_q4_k(const float* x, uint8_t* y, int64_t nb) {
    uint8_t q[kQKK];
    for (int64_t i = 0; i < nb; ++i, x += kQKK, y += kQ4_KBytes) {
        quant_k_asym(x, y, y + 4, q, 15);
        uint8_t* qs = y + 16;
        // Weight t lives in qs[32*(t/64) + t%32], low nibble for even sub-blocks.
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l)
                qs[32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
    }
}

void quant_q5_k(const float* x, uint8_t* y, int64_t nb) {
    uint8_t q[kQKK];
    for (int64_t i = 0; i < nb; ++i, x += kQKK, y += kQ5_KBytes) {
        quant_k_asym(x, y, y + 4, q, 31);
        uint8_t* qh = y + 16;
        uint8_t* qs = y + 48;
        std::memset(qh, 0, 32);
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l)
                qs[32 * c + l] = uint8_t((q[64 * c + l] & 0xF) | ((q[64 * c + 32 + l] & 0xF) << 4));
        // The fifth bit of weight t is bit (t / 32) of qh[t % 32].
        for (int t = 0; t < kQKK; ++t) qh[t % 32] = uint8_t(qh[t % 32] | ((q[t] >> 4) << (t / 32)));
    }
}

// Q6_K: per 16-weight sub-block a symmetric scale (q in -32..31), then int8 sub-block scales
// against one f16 super-scale (the largest maps to -128, as in ggml).
void quant_q6_k(const float* x, uint8_t* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQKK, y += kQ6_KBytes) {
        float sub_scale[16];
        float max_scale = 0.0f, max_abs_scale = 0.0f;
        for (int j = 0; j < 16; ++j) {
            float amax = 0.0f, max = 0.0f;
            for (int l = 0; l < 16; ++l) {
                const float v = x[16 * j + l];
                if (std::fabs(v) > amax) {
                    amax = std::fabs(v);
                    max = v;
                }
            }
            // Either the signed extreme maps to -32 (ggml's choice, which uses the extra negative
            // level but clips the opposite end by a step) or to +31 (never clips); keep the
            // candidate with the smaller squared error.
            sub_scale[j] = 0.0f;
            double best = INFINITY;
            for (const float cand : {max / -32.0f, max / 31.0f}) {
                if (cand == 0.0f) continue;
                double err = 0.0;
                for (int l = 0; l < 16; ++l) {
                    const float v = x[16 * j + l];
                    const int q = std::clamp(nearest_int(v / cand), -32, 31);
                    err += (double(cand) * q - v) * (double(cand) * q - v);
                }
                if (err < best) {
                    best = err;
                    sub_scale[j] = cand;
                }
            }
            if (std::fabs(sub_scale[j]) > max_abs_scale) {
                max_abs_scale = std::fabs(sub_scale[j]);
                max_scale = sub_scale[j];
            }
        }
        uint8_t* ql = y;
        uint8_t* qh = y + 128;
        int8_t scales[16] = {};
        if (max_abs_scale == 0.0f) {
            std::memset(y, 0, kQ6_KBytes);  // all zero: d = 0 decodes every weight to 0
            continue;
        }
        const float iscale = -128.0f / max_scale;
        store_f16(y + 208, 1.0f / iscale);
        const float d = load_f16(y + 208);
        for (int j = 0; j < 16; ++j) scales[j] = int8_t(std::min(127, nearest_int(iscale * sub_scale[j])));
        std::memcpy(y + 192, scales, 16);
        std::memset(ql, 0, 128);
        std::memset(qh, 0, 64);
        for (int t = 0; t < kQKK; ++t) {
            const float dj = d * float(scales[t / 16]);
            const int q = dj != 0.0f ? std::clamp(nearest_int(x[t] / dj), -32, 31) + 32 : 32;
            const int h = t / 128, g = (t % 128) / 32, l = t % 32;
            uint8_t& b = ql[64 * h + 32 * (g & 1) + l];
            b = uint8_t(b | ((q & 0xF) << (g < 2 ? 0 : 4)));
            qh[32 * h + l] = uint8_t(qh[32 * h + l] | ((q >> 4) << (2 * g)));
        }
    }
}

int64_t blocks_of(DType t, int64_t n) {
    const DTypeTraits* tr = dtype_traits(static_cast<uint32_t>(t));
    TDM_ASSERT_MSG(tr != nullptr, "unsupported type");
    TDM_ASSERT_MSG(n >= 0 && n % tr->block_size == 0, "n must be a multiple of the block size");
    return n / tr->block_size;
}

}  // namespace

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
    const int64_t nb = blocks_of(t, n);
    const auto* x = static_cast<const uint8_t*>(src);
    switch (t) {
        case DType::F32: std::memcpy(dst, x, size_t(n) * 4); return;
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) dst[i] = load_f16(x + 2 * i);
            return;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(uint16_t(x[2 * i] | (x[2 * i + 1] << 8)));
            return;
        case DType::Q4_0: dequant_q4_0(x, dst, nb); return;
        case DType::Q5_0: dequant_q5_0(x, dst, nb); return;
        case DType::Q5_1: dequant_q5_1(x, dst, nb); return;
        case DType::Q8_0: dequant_q8_0(x, dst, nb); return;
        case DType::Q4_K: dequant_q4_k(x, dst, nb); return;
        case DType::Q5_K: dequant_q5_k(x, dst, nb); return;
        case DType::Q6_K: dequant_q6_k(x, dst, nb); return;
        // integers (token id tables): exact while |v| < 2^24, which loaders check first
        case DType::I8:
            for (int64_t i = 0; i < n; ++i) dst[i] = float(int8_t(x[i]));
            return;
        case DType::I16:
            for (int64_t i = 0; i < n; ++i) dst[i] = float(int16_t(uint16_t(x[2 * i] | (x[2 * i + 1] << 8))));
            return;
        case DType::I32:
            for (int64_t i = 0; i < n; ++i) {
                int32_t v;
                std::memcpy(&v, x + 4 * i, 4);
                dst[i] = float(v);
            }
            return;
        case DType::I64:
            for (int64_t i = 0; i < n; ++i) {
                int64_t v;
                std::memcpy(&v, x + 8 * i, 8);
                dst[i] = float(v);
            }
            return;
        default: TDM_ASSERT_MSG(false, "dequantize_row: not a float or quantized type");
    }
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
    const int64_t nb = blocks_of(t, n);
    auto* y = static_cast<uint8_t*>(dst);
    switch (t) {
        case DType::F32: std::memcpy(y, src, size_t(n) * 4); return;
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) store_f16(y + 2 * i, src[i]);
            return;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_bf16(src[i]);
                y[2 * i] = uint8_t(h & 0xff);
                y[2 * i + 1] = uint8_t(h >> 8);
            }
            return;
        case DType::Q4_0: quant_q4_0(src, y, nb); return;
        case DType::Q5_0: quant_q5_0(src, y, nb); return;
        case DType::Q5_1: quant_q5_1(src, y, nb); return;
        case DType::Q8_0: quant_q8_0(src, y, nb); return;
        case DType::Q4_K: quant_q4_k(src, y, nb); return;
        case DType::Q5_K: quant_q5_k(src, y, nb); return;
        case DType::Q6_K: quant_q6_k(src, y, nb); return;
        default: TDM_ASSERT_MSG(false, "quantize_row: not a float or quantized type");
    }
}

std::vector<uint8_t> quantize_matrix(DType t, const float* src, int64_t rows, int64_t cols) {
    const uint64_t rb = row_bytes(t, uint64_t(cols));
    std::vector<uint8_t> out(size_t(rb * uint64_t(rows)));
    for (int64_t r = 0; r < rows; ++r) quantize_row(t, src + r * cols, out.data() + r * rb, cols);
    return out;
}

}  // namespace tdm
