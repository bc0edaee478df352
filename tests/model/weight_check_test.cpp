// SPDX-License-Identifier: Apache-2.0
// tests/model/weight_check_test.cpp: the NaN/Inf scan of weights at load finds the first
// bad element of plain tensors and the first bad block scale (d, dmin or m, at each format's
// own offset) of quantized ones, and its error names the file, the tensor and the place.
// To add a type: build a SourceTensor over bytes in memory with one bad value.
#include <gtest/gtest.h>

#include "common/dtype.h"
#include "common/fp16.h"
#include "common/quant.h"
#include "model/weight_check.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace tdm;

namespace {

SourceTensor tensor_over(const std::vector<uint8_t>& bytes, DType type, int64_t ne0, int64_t ne1) {
    SourceTensor t{};
    t.name = "blk.0.w";
    t.type = uint32_t(type);
    t.n_dims = 2;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = t.ne[3] = 1;
    t.data = bytes.data();
    t.nbytes = bytes.size();
    t.dtype = std::string(dtype_name(type));
    return t;
}

std::vector<uint8_t> quantized(DType type, int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[size_t(i)] = std::sin(float(i)) * 0.5f;
    return quantize_matrix(type, x.data(), 1, n);
}

void put_u16(std::vector<uint8_t>& b, size_t at, uint16_t v) { std::memcpy(b.data() + at, &v, 2); }

}  // namespace

TEST(WeightCheck, finds_the_first_non_finite_element_of_plain_types) {
    std::vector<float> f(64, 1.0f);
    f[37] = std::numeric_limits<float>::quiet_NaN();
    f[50] = std::numeric_limits<float>::infinity();
    std::vector<uint8_t> b(f.size() * 4);
    std::memcpy(b.data(), f.data(), b.size());
    auto bad = find_non_finite(tensor_over(b, DType::F32, 16, 4));
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->index, 37u);
    EXPECT_FALSE(bad->is_block);
    EXPECT_TRUE(std::isnan(bad->value));

    std::vector<uint8_t> h(64 * 2, 0);
    put_u16(h, 2 * 9, 0xfc00);  // f16 -inf
    bad = find_non_finite(tensor_over(h, DType::F16, 16, 4));
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->index, 9u);
    EXPECT_EQ(bad->value, -std::numeric_limits<float>::infinity());

    std::vector<uint8_t> bf(64 * 2, 0);
    put_u16(bf, 2 * 63, 0x7fc0);  // bf16 NaN
    bad = find_non_finite(tensor_over(bf, DType::BF16, 16, 4));
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->index, 63u);
}

TEST(WeightCheck, clean_tensors_of_every_type_pass) {
    for (DType t : {DType::F16, DType::BF16, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K,
                    DType::Q5_K, DType::Q6_K}) {
        const std::vector<uint8_t> b = quantized(t, 512);
        EXPECT_FALSE(find_non_finite(tensor_over(b, t, 512, 1)).has_value()) << dtype_name(t);
    }
}

TEST(WeightCheck, finds_bad_block_scales_at_each_format_s_offset) {
    struct Case {
        DType type;
        size_t field_offset;
        const char* field;
    } cases[] = {{DType::Q4_0, 0, "d"},    {DType::Q5_0, 0, "d"},   {DType::Q5_1, 0, "d"},
                 {DType::Q5_1, 2, "m"},    {DType::Q8_0, 0, "d"},   {DType::Q4_K, 0, "d"},
                 {DType::Q4_K, 2, "dmin"}, {DType::Q5_K, 2, "dmin"}, {DType::Q6_K, 208, "d"}};
    for (const Case& c : cases) {
        std::vector<uint8_t> b = quantized(c.type, 512);
        const uint32_t block_bytes = traits(c.type).block_bytes;
        const size_t block = b.size() / block_bytes - 1;  // the last block
        put_u16(b, block * block_bytes + c.field_offset, 0x7e00);  // f16 NaN
        auto bad = find_non_finite(tensor_over(b, c.type, 512, 1));
        ASSERT_TRUE(bad.has_value()) << dtype_name(c.type) << " " << c.field;
        EXPECT_TRUE(bad->is_block);
        EXPECT_EQ(bad->index, block) << dtype_name(c.type);
        EXPECT_STREQ(bad->field, c.field);
    }
}

TEST(WeightCheck, the_error_names_the_file_the_tensor_and_the_place) {
    std::vector<uint8_t> q = quantized(DType::Q8_0, 128);
    put_u16(q, 2 * 34, 0x7c00);  // block 2's d = +inf
    Status st = check_weights_finite("m.gguf", tensor_over(q, DType::Q8_0, 64, 2));
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("m.gguf: tensor 'blk.0.w' (q8_0): block 2 (elements 64..95, row 1) has a "
                                        "+inf scale d"),
              std::string::npos)
        << st.error().message();
    EXPECT_NE(st.error().message().find("--no-check-weights"), std::string::npos);

    std::vector<float> f(32, 0.0f);
    f[21] = std::numeric_limits<float>::quiet_NaN();
    std::vector<uint8_t> b(f.size() * 4);
    std::memcpy(b.data(), f.data(), b.size());
    st = check_weights_finite("m.gguf", tensor_over(b, DType::F32, 8, 4));
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("tensor 'blk.0.w' (f32): element 21 (row 2, column 5) is NaN"),
              std::string::npos)
        << st.error().message();
    EXPECT_TRUE(check_weights_finite("m.gguf", tensor_over(quantized(DType::Q8_0, 128), DType::Q8_0, 64, 2)).ok());
}
