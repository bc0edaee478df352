// SPDX-License-Identifier: Apache-2.0
// tests/common/quant_test.cpp: CPU (de)quantization (host/common/quant.h) against
// docs/formats/quants.md: its worked examples (blocks built byte by byte), its closed-form
// "value of weight t" formulas on random blocks, and quantize -> dequantize error bounds.
// To add a case: for a new type, add its worked example as a hand-built block, a closed-form
// weight function below, and a row in RoundTrip.error_is_bounded_on_uniform_data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/fp16.h"
#include "common/quant.h"

using namespace tdm;

namespace {

void put_f16(uint8_t* p, uint16_t h) {
    p[0] = uint8_t(h & 0xff);
    p[1] = uint8_t(h >> 8);
}
float get_f16(const uint8_t* p) { return f16_to_f32(uint16_t(p[0] | (p[1] << 8))); }

std::vector<float> dequant(DType t, const std::vector<uint8_t>& bytes) {
    const int64_t n = int64_t(bytes.size() / traits(t).block_bytes * traits(t).block_size);
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(t, bytes.data(), y.data(), n);
    return y;
}

// ===== closed-form weight values, written from the spec formulas (not from quant.cpp) ==========

float q4_0_weight(const uint8_t* b, int t) {  // §3.1
    const int j = t % 16;
    const int nib = t < 16 ? (b[2 + j] & 0xF) : (b[2 + j] >> 4);
    return float(nib - 8) * get_f16(b);
}

// §3.3/§3.4: qh is a little-endian uint32 whose bit t is the fifth bit of weight t; the low
// four bits of weight t are the low nibble of qs[t] (t < 16) or the high nibble of qs[t - 16].
int q5_quant(const uint8_t* qh_bytes, const uint8_t* qs, int t) {
    const uint32_t qh = uint32_t(qh_bytes[0]) | uint32_t(qh_bytes[1]) << 8 | uint32_t(qh_bytes[2]) << 16 |
                        uint32_t(qh_bytes[3]) << 24;
    const int nib = t < 16 ? (qs[t] & 0xF) : (qs[t - 16] >> 4);
    return nib | int((qh >> t) & 1) << 4;
}

float q5_0_weight(const uint8_t* b, int t) {  // §3.3: d@0 qh@2 qs@6
    return float(q5_quant(b + 2, b + 6, t) - 16) * get_f16(b);
}

float q5_1_weight(const uint8_t* b, int t) {  // §3.4: d@0 m@2 qh@4 qs@8
    return float(q5_quant(b + 4, b + 8, t)) * get_f16(b) + get_f16(b + 2);
}

float q8_0_weight(const uint8_t* b, int t) {  // §3.5
    return float(int8_t(b[2 + t])) * get_f16(b);
}

// §4.3 bit map of the 12 scale bytes: scale and min of sub-block s.
void k4_scale_min(const uint8_t* sc, int s, int* scale, int* min) {
    if (s < 4) {
        *scale = sc[s] & 0x3F;
        *min = sc[4 + s] & 0x3F;
    } else {
        const int k = s - 4;
        *scale = (sc[8 + k] & 0x0F) | ((sc[k] >> 6) << 4);
        *min = (sc[8 + k] >> 4) | ((sc[4 + k] >> 6) << 4);
    }
}

float q4_k_weight(const uint8_t* b, int t) {  // §4.3
    const float d = get_f16(b), dmin = get_f16(b + 2);
    const int s = t / 32;
    int sc, m;
    k4_scale_min(b + 4, s, &sc, &m);
    const uint8_t byte = b[16 + 32 * (t / 64) + t % 32];
    const int q = s % 2 == 0 ? (byte & 0xF) : (byte >> 4);
    return (d * float(sc)) * float(q) - (dmin * float(m));
}

float q5_k_weight(const uint8_t* b, int t) {  // §4.4
    const float d = get_f16(b), dmin = get_f16(b + 2);
    const int s = t / 32;
    int sc, m;
    k4_scale_min(b + 4, s, &sc, &m);
    const uint8_t byte = b[48 + 32 * (t / 64) + t % 32];
    const int hbit = (b[16 + t % 32] >> s) & 1;
    const int q = (s % 2 == 0 ? (byte & 0xF) : (byte >> 4)) + 16 * hbit;
    return (d * float(sc)) * float(q) - (dmin * float(m));
}

float q6_k_weight(const uint8_t* b, int t) {  // §4.5
    const float d = get_f16(b + 208);
    const int h = t / 128, g = (t % 128) / 32, l = t % 32;
    const uint8_t lb = b[64 * h + 32 * (g & 1) + l];
    const int low = g < 2 ? (lb & 0xF) : (lb >> 4);
    const int high = (b[128 + 32 * h + l] >> (2 * g)) & 3;
    const int q = (low | (high << 4)) - 32;
    return (d * float(int8_t(b[192 + t / 16]))) * float(q);
}

// A random finite f16 (any sign, any exponent but inf/NaN, subnormals included).
uint16_t random_finite_f16(std::mt19937& rng) {
    for (;;) {
        const uint16_t h = uint16_t(rng() & 0xffff);
        if ((h & 0x7c00) != 0x7c00) return h;
    }
}

// n random blocks of t, with every f16 scale field replaced by a finite value.
std::vector<uint8_t> random_blocks(DType t, int n, std::mt19937& rng) {
    const int bb = int(traits(t).block_bytes);
    std::vector<uint8_t> bytes(size_t(n * bb));
    for (uint8_t& b : bytes) b = uint8_t(rng() & 0xff);
    for (int i = 0; i < n; ++i) {
        uint8_t* b = bytes.data() + i * bb;
        switch (t) {
            case DType::Q4_0:
            case DType::Q5_0:
            case DType::Q8_0: put_f16(b, random_finite_f16(rng)); break;
            case DType::Q5_1:
            case DType::Q4_K:
            case DType::Q5_K:
                put_f16(b, random_finite_f16(rng));
                put_f16(b + 2, random_finite_f16(rng));
                break;
            case DType::Q6_K: put_f16(b + 208, random_finite_f16(rng)); break;
            default: ADD_FAILURE() << "no random block layout for " << dtype_name(t);
        }
    }
    return bytes;
}

// Counts weights where dequantize_row and the closed form differ in any bit.
int count_mismatches(DType t, float (*weight)(const uint8_t*, int), int n_blocks, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::vector<uint8_t> bytes = random_blocks(t, n_blocks, rng);
    const std::vector<float> y = dequant(t, bytes);
    const int qk = int(traits(t).block_size), bb = int(traits(t).block_bytes);
    int mismatches = 0;
    for (int i = 0; i < n_blocks; ++i)
        for (int w = 0; w < qk; ++w) {
            const float want = weight(bytes.data() + i * bb, w);
            if (f32_to_bits(y[size_t(i * qk + w)]) != f32_to_bits(want)) {
                if (mismatches < 5)
                    ADD_FAILURE() << dtype_name(t) << " block " << i << " weight " << w << ": got "
                                  << y[size_t(i * qk + w)] << ", formula " << want;
                ++mismatches;
            }
        }
    return mismatches;
}

}  // namespace

// ===== worked examples of docs/formats/quants.md ========================================================

TEST(QuantSpec, q4_0_worked_example) {
    std::vector<uint8_t> b(18, 0);
    b[0] = 0x00, b[1] = 0x38;  // d = 0.5
    b[2 + 3] = 0xA7;
    const std::vector<float> y = dequant(DType::Q4_0, b);
    EXPECT_EQ(y[3], -0.5f);
    EXPECT_EQ(y[19], 1.0f);
    EXPECT_EQ(y[0], -4.0f);  // nibble 0 -> (0 - 8) * 0.5
}

TEST(QuantSpec, q5_0_worked_example) {
    std::vector<uint8_t> b(22, 0);
    b[0] = 0x00, b[1] = 0x38;                    // d = 0.5
    b[2] = 0x08, b[3] = 0x00, b[4] = 0x02;       // qh = 0x00020008: bits 3 and 17
    b[6 + 3] = 0x2C;
    b[6 + 1] = 0x9F;
    const std::vector<float> y = dequant(DType::Q5_0, b);
    EXPECT_EQ(y[3], 6.0f);    // (0xC | 0x10) - 16
    EXPECT_EQ(y[19], -7.0f);  // 2 - 16, bit 19 clear
    EXPECT_EQ(y[1], -0.5f);   // 15 - 16, bit 1 clear
    EXPECT_EQ(y[17], 4.5f);   // (9 | 0x10) - 16
    EXPECT_EQ(y[0], -8.0f);   // all bits clear: q = 0 -> -16 * d
}

TEST(QuantSpec, q5_0_extremes_and_negative_scale) {
    // Every bit set: q = 31 -> 15 * d; the top fifth bit (31) belongs to the last weight.
    std::vector<uint8_t> b(22, 0xFF);
    b[0] = 0x00, b[1] = 0xB4;  // d = -0.25
    std::vector<float> y = dequant(DType::Q5_0, b);
    for (int t = 0; t < 32; ++t) EXPECT_EQ(y[size_t(t)], -3.75f) << t;
    b[5] = 0x7F;  // clear qh bit 31: weight 31 drops to q = 15 -> (15 - 16) * -0.25
    y = dequant(DType::Q5_0, b);
    EXPECT_EQ(y[31], 0.25f);
    EXPECT_EQ(y[15], -3.75f);  // shares qs[15] with weight 31, keeps its own bit 15
    std::vector<uint8_t> z(22, 0);
    z[0] = 0x00, z[1] = 0xB4;
    y = dequant(DType::Q5_0, z);
    EXPECT_EQ(y[16], 4.0f);  // q = 0 -> -16 * -0.25
}

TEST(QuantSpec, q5_1_hand_built_block) {
    std::vector<uint8_t> b(24, 0);
    b[0] = 0x00, b[1] = 0x34;  // d = 0.25
    b[2] = 0x00, b[3] = 0xBE;  // m = -1.5
    b[4] = 0x01, b[7] = 0x80;  // qh = 0x80000001: bits 0 and 31
    b[8 + 0] = 0x3E;
    b[8 + 15] = 0xF0;
    const std::vector<float> y = dequant(DType::Q5_1, b);
    EXPECT_EQ(y[0], 6.0f);     // (0xE | 0x10) = 30 -> 30 * 0.25 - 1.5
    EXPECT_EQ(y[16], -0.75f);  // 3, bit 16 clear
    EXPECT_EQ(y[15], -1.5f);   // 0 -> m
    EXPECT_EQ(y[31], 6.25f);   // (0xF | 0x10) = 31
    EXPECT_EQ(y[7], -1.5f);
}

TEST(QuantSpec, q8_0_worked_example) {
    std::vector<uint8_t> b(34, 0);
    b[0] = 0x00, b[1] = 0x34;  // d = 0.25
    b[2 + 5] = 0xF6;           // -10
    const std::vector<float> y = dequant(DType::Q8_0, b);
    EXPECT_EQ(y[5], -2.5f);
    EXPECT_EQ(y[4], 0.0f);
}

namespace {
// Bytes 0-15 of the Q4_K/Q5_K examples: d = 0.0625, dmin = 0.125, then the 12 scale bytes.
constexpr uint8_t kK4Head[16] = {0x00, 0x2c, 0x00, 0x30, 0x45, 0x83, 0x00, 0x00,
                                 0xc2, 0x44, 0x00, 0x00, 0x3a, 0x97, 0x00, 0x00};
}  // namespace

TEST(QuantSpec, q4_k_worked_example) {
    std::vector<uint8_t> b(144, 0);
    std::memcpy(b.data(), kK4Head, 16);
    b[16 + 74] = 0xB4;
    EXPECT_EQ(get_f16(b.data()), 0.0625f);
    EXPECT_EQ(get_f16(b.data() + 2), 0.125f);
    const std::vector<float> y = dequant(DType::Q4_K, b);
    EXPECT_EQ(y[170], 23.6875f);  // s = 5: sc 39, m 25, q = 11
    EXPECT_EQ(y[138], 0.125f);    // s = 4: sc 26, m 51, q = 4
    EXPECT_EQ(y[0], -0.25f);      // s = 0: q = 0, m = 0xC2 & 63 = 2
}

TEST(QuantSpec, q5_k_worked_example) {
    std::vector<uint8_t> b(176, 0);
    std::memcpy(b.data(), kK4Head, 16);
    b[16 + 10] = 0x20;  // qh[10]
    b[48 + 74] = 0xB4;  // qs[74]
    const std::vector<float> y = dequant(DType::Q5_K, b);
    EXPECT_EQ(y[170], 62.6875f);  // q = 11 + 16
    EXPECT_EQ(y[138], 0.125f);    // qh bit 4 clear
}

TEST(QuantSpec, q6_k_worked_example) {
    std::vector<uint8_t> b(210, 0);
    b[72] = 0x5E;           // ql[72]
    b[128 + 40] = 0x20;     // qh[40]
    b[192 + 12] = 0xFD;     // scales[12] = -3
    b[208] = 0x00, b[209] = 0x28;  // d = 0.03125
    const std::vector<float> y = dequant(DType::Q6_K, b);
    EXPECT_EQ(y[200], -0.46875f);
    EXPECT_EQ(y[192], 0.03125f * -3.0f * -32.0f);  // all-zero bits: q = -32
}

// ===== bit layouts: dequantize_row == closed-form formulas on random blocks =====================

TEST(QuantSpec, dequantize_matches_closed_form_on_random_blocks) {
    EXPECT_EQ(count_mismatches(DType::Q4_0, q4_0_weight, 200, 1), 0);
    EXPECT_EQ(count_mismatches(DType::Q8_0, q8_0_weight, 200, 2), 0);
    EXPECT_EQ(count_mismatches(DType::Q5_0, q5_0_weight, 200, 10), 0);
    EXPECT_EQ(count_mismatches(DType::Q5_1, q5_1_weight, 200, 11), 0);
    EXPECT_EQ(count_mismatches(DType::Q4_K, q4_k_weight, 200, 3), 0);
    EXPECT_EQ(count_mismatches(DType::Q5_K, q5_k_weight, 200, 4), 0);
    EXPECT_EQ(count_mismatches(DType::Q6_K, q6_k_weight, 200, 5), 0);
}

TEST(QuantSpec, dequantize_accepts_unaligned_source) {
    std::mt19937 rng(6);
    const std::vector<uint8_t> bytes = random_blocks(DType::Q6_K, 2, rng);
    std::vector<uint8_t> shifted(bytes.size() + 1);
    std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
    std::vector<float> a(512), b(512);
    dequantize_row(DType::Q6_K, bytes.data(), a.data(), 512);
    dequantize_row(DType::Q6_K, shifted.data() + 1, b.data(), 512);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
}

// ===== float paths ==============================================================================

TEST(QuantFloat, f16_and_bf16_rows_decode_little_endian) {
    const std::vector<uint8_t> f16 = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0xff, 0x7b};
    const std::vector<float> y = dequant(DType::F16, f16);
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -2.0f);
    EXPECT_EQ(y[2], 5.9604645e-8f);  // subnormal kept
    EXPECT_EQ(y[3], 65504.0f);
    const std::vector<uint8_t> bf16 = {0x80, 0x3f, 0x40, 0xc0};
    const std::vector<float> z = dequant(DType::BF16, bf16);
    EXPECT_EQ(z[0], 1.0f);
    EXPECT_EQ(z[1], -3.0f);
}

TEST(QuantFloat, f16_bf16_f32_rows_round_to_nearest_even) {
    const float x[4] = {1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f, -0.1f, 1e6f};
    uint8_t h[8];
    quantize_row(DType::F16, x, h, 4);
    EXPECT_EQ(h[0] | (h[1] << 8), 0x3c00);  // tie -> even
    EXPECT_EQ(h[2] | (h[3] << 8), 0x3c02);  // tie -> even (up)
    EXPECT_EQ(h[4] | (h[5] << 8), f32_to_f16(-0.1f));
    EXPECT_EQ(h[6] | (h[7] << 8), 0x7c00);  // overflow -> inf
    const float xb[2] = {bits_to_f32(0x3f808000), bits_to_f32(0x3f818000)};
    uint8_t b[4];
    quantize_row(DType::BF16, xb, b, 2);
    EXPECT_EQ(b[0] | (b[1] << 8), 0x3f80);
    EXPECT_EQ(b[2] | (b[3] << 8), 0x3f82);
    uint8_t f[16];
    float back[4];
    quantize_row(DType::F32, x, f, 4);
    dequantize_row(DType::F32, f, back, 4);
    EXPECT_EQ(0, std::memcmp(x, back, sizeof x));
}

// ===== quantizers ===============================================================================

TEST(Quantize, q8_0_and_q4_0_follow_ggml_reference_scheme) {
    // Q8_0: amax 127 -> d = 1 exactly, q = round(x).
    float x[32];
    for (int j = 0; j < 32; ++j) x[j] = float(j * 8 - 127) + (j % 2 ? 0.25f : -0.25f);
    x[0] = -127.0f;
    uint8_t b8[34];
    quantize_row(DType::Q8_0, x, b8, 32);
    EXPECT_EQ(get_f16(b8), 1.0f);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(int8_t(b8[2 + j]), int(std::round(x[j]))) << j;

    // Q4_0: the largest magnitude is -4, so d = -4 / -8 = 0.5 and values k*0.5 are exact.
    float y[32];
    for (int j = 0; j < 32; ++j) y[j] = 0.5f * float((j % 15) - 7);
    y[9] = -4.0f;
    uint8_t b4[18];
    quantize_row(DType::Q4_0, y, b4, 32);
    EXPECT_EQ(get_f16(b4), 0.5f);
    float back[32];
    dequantize_row(DType::Q4_0, b4, back, 32);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(back[j], y[j]) << j;
}

TEST(Quantize, q5_0_and_q5_1_follow_ggml_reference_scheme) {
    // Q5_0: the signed extreme maps to q - 16 = -16. Extreme -8 -> d = 0.5, values k * 0.5 in
    // [-8, 7.5] are exact; extreme +8 -> d = -0.5, values in [-7.5, 8] are exact.
    for (const float sign : {1.0f, -1.0f}) {
        float x[32];
        for (int j = 0; j < 32; ++j) x[j] = sign * 0.5f * float((j * 7) % 32 - 16);
        x[9] = sign * -8.0f;
        uint8_t b[22];
        quantize_row(DType::Q5_0, x, b, 32);
        EXPECT_EQ(get_f16(b), sign * 0.5f);
        for (int j = 0; j < 32; ++j) EXPECT_EQ(q5_0_weight(b, j), x[j]) << j << " sign " << sign;
    }
    // Q5_1: d = (max - min) / 31, m = min: -1.5 + k * 0.25 for k = 0..31 are exact.
    float y[32];
    for (int j = 0; j < 32; ++j) y[j] = -1.5f + 0.25f * float((j * 13) % 32);
    uint8_t b1[24];
    quantize_row(DType::Q5_1, y, b1, 32);
    EXPECT_EQ(get_f16(b1), 0.25f);
    EXPECT_EQ(get_f16(b1 + 2), -1.5f);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(q5_1_weight(b1, j), y[j]) << j;
    // A constant block has d = 0 and decodes to m.
    float c[32];
    std::fill(c, c + 32, 2.5f);
    quantize_row(DType::Q5_1, c, b1, 32);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(q5_1_weight(b1, j), 2.5f) << j;
}

TEST(Quantize, matrix_is_rows_quantized_back_to_back_and_deterministic) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    const int64_t rows = 3, cols = 512;
    std::vector<float> x(size_t(rows * cols));
    for (float& v : x) v = u(rng);
    for (DType t : {DType::F16, DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K,
                    DType::Q6_K}) {
        const std::vector<uint8_t> m = quantize_matrix(t, x.data(), rows, cols);
        const uint64_t rb = row_bytes(t, cols);
        ASSERT_EQ(m.size(), rb * rows) << dtype_name(t);
        std::vector<uint8_t> row(rb);
        for (int64_t r = 0; r < rows; ++r) {
            quantize_row(t, x.data() + r * cols, row.data(), cols);
            EXPECT_EQ(0, std::memcmp(row.data(), m.data() + r * rb, rb)) << dtype_name(t);
        }
        EXPECT_EQ(m, quantize_matrix(t, x.data(), rows, cols)) << dtype_name(t);
    }
}

namespace {

struct ErrorStats {
    double max_err_over_block_amax = 0.0;  // worst |err| / max|x| of its block
    double rms_err_over_rms = 0.0;          // RMS error / RMS of the input
    bool finite = true;
};

ErrorStats round_trip(DType t, const std::vector<float>& x) {
    const int64_t n = int64_t(x.size());
    std::vector<uint8_t> q(row_bytes(t, uint64_t(n)));
    quantize_row(t, x.data(), q.data(), n);
    std::vector<float> y(x.size());
    dequantize_row(t, q.data(), y.data(), n);
    const int64_t bs = std::max<int64_t>(traits(t).block_size, 32);
    ErrorStats s;
    double se = 0.0, sx = 0.0;
    for (int64_t b0 = 0; b0 < n; b0 += bs) {
        double amax = 0.0, emax = 0.0;
        for (int64_t i = b0; i < b0 + bs; ++i) {
            if (!std::isfinite(y[size_t(i)])) s.finite = false;
            const double e = double(y[size_t(i)]) - x[size_t(i)];
            amax = std::max(amax, std::fabs(double(x[size_t(i)])));
            emax = std::max(emax, std::fabs(e));
            se += e * e;
            sx += double(x[size_t(i)]) * x[size_t(i)];
        }
        if (amax > 0) s.max_err_over_block_amax = std::max(s.max_err_over_block_amax, emax / amax);
        else if (emax > 0) s.max_err_over_block_amax = INFINITY;
    }
    s.rms_err_over_rms = sx > 0 ? std::sqrt(se / sx) : (se > 0 ? INFINITY : 0.0);
    return s;
}

}  // namespace

TEST(RoundTrip, error_is_bounded_on_uniform_data) {
    std::mt19937 rng(8);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(256 * 64);
    for (float& v : x) v = u(rng);
    // Bounds in units of each format's step on U(-1, 1) data (x = amax * q / levels): a
    // uniform rounding error of one step has RMS step / sqrt(12), i.e. step / 2 relative to the
    // data's RMS 1 / sqrt(3), so every format must stay within 1.1 * step / 2 of RMS error. The
    // worst single error is about half a step, more where a format clips: Q4_0 and Q5_0 lose one step
    // at the end opposite its extreme, the K-quant fits trade a little clipping for lower MSE,
    // and their 6-bit / int8 sub-block scales add rounding.
    struct Row {
        DType t;
        double step, max_err_steps;
    } rows[] = {
        {DType::F16, 1.0 / 1024, 0.5},  {DType::BF16, 1.0 / 128, 0.5},
        {DType::Q8_0, 1.0 / 127, 0.6},  {DType::Q4_0, 1.0 / 8, 1.02},
        {DType::Q5_0, 1.0 / 16, 1.02},  {DType::Q5_1, 2.0 / 31, 0.55},
        {DType::Q4_K, 2.0 / 15, 0.65},  {DType::Q5_K, 2.0 / 31, 0.85},
        {DType::Q6_K, 2.0 / 63, 1.0},
    };
    for (const Row& r : rows) {
        const ErrorStats s = round_trip(r.t, x);
        EXPECT_TRUE(s.finite) << dtype_name(r.t);
        EXPECT_LE(s.max_err_over_block_amax, r.max_err_steps * r.step) << dtype_name(r.t);
        EXPECT_LE(s.rms_err_over_rms, 1.1 * r.step / 2) << dtype_name(r.t);
    }
}

TEST(RoundTrip, quantizers_stay_valid_on_hard_blocks) {
    // Super-blocks with awkward contents: zeros, constants, one sign only, small magnitudes
    // (f16 subnormal scales), one outlier, and sub-blocks whose ranges differ by 1000x.
    std::mt19937 rng(9);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<std::vector<float>> blocks;
    blocks.push_back(std::vector<float>(256, 0.0f));
    blocks.push_back(std::vector<float>(256, 3.0f));
    blocks.push_back(std::vector<float>(256, -3.0f));
    std::vector<float> pos(256), neg(256), small(256), outlier(256), ranges(256), vanishing(256);
    for (int i = 0; i < 256; ++i) {
        pos[size_t(i)] = 1.0f + std::fabs(g(rng));
        neg[size_t(i)] = -1.0f - std::fabs(g(rng));
        small[size_t(i)] = 1e-3f * g(rng);
        outlier[size_t(i)] = g(rng);
        ranges[size_t(i)] = g(rng) * (i / 32 % 2 ? 1000.0f : 1.0f);
        vanishing[size_t(i)] = 1e-9f * g(rng);
    }
    outlier[77] = 50.0f;
    for (auto* b : {&pos, &neg, &small, &outlier, &ranges}) blocks.push_back(*b);
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
        for (size_t k = 0; k < blocks.size(); ++k) {
            const ErrorStats s = round_trip(t, blocks[k]);
            EXPECT_TRUE(s.finite) << dtype_name(t) << " block " << k;
            // Loose on purpose: covers Q4_0's clipped end and sub-blocks whose range is small
            // next to the super-block's largest (their 6-bit scale has few steps).
            EXPECT_LE(s.max_err_over_block_amax, 0.2) << dtype_name(t) << " block " << k;
        }
        // Below f16's smallest subnormal the scales flush to zero: the block decodes to
        // (almost) nothing, but never to garbage.
        const ErrorStats s = round_trip(t, vanishing);
        EXPECT_TRUE(s.finite) << dtype_name(t);
        EXPECT_LE(s.max_err_over_block_amax, 1.0) << dtype_name(t);
    }
}
