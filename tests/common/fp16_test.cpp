// SPDX-License-Identifier: Apache-2.0
// tests/common/fp16_test.cpp: host f16/bf16 conversions and dtype traits.
// To add a case: append a TEST with a value whose encoding you know by hand.
#include <gtest/gtest.h>

#include "common/dtype.h"
#include "common/fp16.h"

using namespace tdm;

TEST(Fp16, known_values_round_trip) {
    EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);              // overflow -> inf
    EXPECT_EQ(f32_to_f16(5.9604645e-8f), 0x0001);     // smallest subnormal
    EXPECT_FLOAT_EQ(f16_to_f32(0x0001), 5.9604645e-8f);
    EXPECT_FLOAT_EQ(f16_to_f32(0x3555), 0.33325195f);
    for (uint32_t h = 0; h < 0x7c00; ++h) EXPECT_EQ(f32_to_f16(f16_to_f32(uint16_t(h))), h);
}

TEST(Fp16, rounds_to_nearest_even) {
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
    EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048.0f), 0x3c00);
    // 1 + 3*2^-11 is halfway between 1+2^-10 and 1+2^-9: ties to even (0x3c02).
    EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048.0f), 0x3c02);
}

TEST(Bf16, conversion_matches_ggml_rounding) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_FLOAT_EQ(bf16_to_f32(0x3f80), 1.0f);
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f808000)), 0x3f80);  // tie -> even
    EXPECT_EQ(f32_to_bf16(bits_to_f32(0x3f818000)), 0x3f82);  // tie -> even (up)
}

TEST(DType, traits_match_ggml_block_layouts) {
    EXPECT_EQ(traits(DType::Q8_0).block_bytes, 34u);
    EXPECT_EQ(traits(DType::Q4_K).block_size, 256u);
    EXPECT_EQ(row_bytes(DType::Q6_K, 512), 420u);
    EXPECT_EQ(dtype_traits(16), nullptr);  // iq2_xxs: not supported
    EXPECT_EQ(ggml_type_name(16), "iq2_xxs");
    DType t;
    EXPECT_TRUE(parse_dtype("Q4_K", &t));
    EXPECT_EQ(t, DType::Q4_K);
    EXPECT_FALSE(parse_dtype("q3_K", &t));
}
