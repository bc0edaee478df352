/* SPDX-License-Identifier: Apache-2.0 */
// host/common/fp16.h: exact IEEE binary16 and bfloat16 conversions on the host.
// f16 -> f32 is exact (subnormals preserved); f32 -> f16 rounds to nearest even,
// as F16C's vcvtps2ph and ggml do. bf16 rounding follows ggml (nearest even,
// NaNs forced quiet).
#pragma once

#include <cstdint>
#include <cstring>

namespace tdm {

inline float bits_to_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint32_t f32_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float f16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0) {
        if (man == 0) return bits_to_f32(sign);
        // subnormal: normalise
        exp = 127 - 15 + 1;
        while ((man & 0x400) == 0) {
            man <<= 1;
            --exp;
        }
        man &= 0x3ff;
        return bits_to_f32(sign | (exp << 23) | (man << 13));
    }
    if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000 | (man << 13));
    return bits_to_f32(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
    const uint32_t x = f32_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t ax = x & 0x7fffffff;
    if (ax >= 0x7f800000) return uint16_t(sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0));  // inf/nan
    if (ax >= 0x477ff000) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: overflow to inf
    if (ax < 0x38800000) {  // result is subnormal or zero
        if (ax < 0x33000000) return uint16_t(sign);  // < 2^-25: rounds to zero
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e;  // 14 + (113 - e)
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = ((ax >> 13) - ((127 - 15) << 10));
    const uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;
    return uint16_t(sign | r);
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
    uint32_t u = f32_to_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000) return uint16_t((u >> 16) | 64);  // quiet NaN
    return uint16_t((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

// Round-trip helpers used by references that model f16 storage.
inline float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

}  // namespace tdm
