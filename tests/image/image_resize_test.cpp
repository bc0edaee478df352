// SPDX-License-Identifier: Apache-2.0
// tests/image/image_resize_test.cpp: resize_bicubic against PIL's Image.resize(size, BICUBIC)
// (tests/fixtures/images/resize_WxH.rgb, made by make_golden.py from rgb8.png): shrinking
// (antialiased), enlarging, one axis only, to a single pixel.
#include "image/image.h"
#include "image/image_resize.h"
#include "image_fixtures.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

using namespace tdm;
using namespace tdm::test;

namespace {

struct Size {
    uint32_t w, h;
};

class ResizeLikePil : public ::testing::TestWithParam<Size> {};

TEST_P(ResizeLikePil, every_sample_equals_pils) {
    const Size s = GetParam();
    auto src = decode_image(image_fixture("rgb8.png"));
    ASSERT_TRUE(src.ok()) << src.error().message();
    const Image out = resize_bicubic(*src, s.w, s.h);
    ASSERT_EQ(out.width, s.w);
    ASSERT_EQ(out.height, s.h);
    const std::vector<uint8_t> golden = image_fixture(fmt::format("resize_{}x{}.rgb", s.w, s.h));
    ASSERT_EQ(out.rgb.size(), golden.size());
    size_t differing = 0, first = golden.size();
    for (size_t i = 0; i < golden.size(); ++i)
        if (out.rgb[i] != golden[i]) {
            ++differing;
            first = std::min(first, i);
        }
    EXPECT_EQ(differing, 0u) << differing << " samples differ; first at " << first << ": "
                             << (first < golden.size() ? int(out.rgb[first]) : 0) << " vs PIL's "
                             << (first < golden.size() ? int(golden[first]) : 0);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ResizeLikePil,
                         ::testing::Values(Size{28, 28}, Size{112, 84}, Size{37, 10}, Size{16, 23}, Size{200, 151},
                                           Size{9, 5}, Size{36, 24}, Size{1, 1}, Size{74, 3}),
                         [](const auto& param_info) { return fmt::format("to_{}x{}", param_info.param.w, param_info.param.h); });

TEST(ImageResize, the_same_size_is_a_copy) {
    auto src = decode_image(image_fixture("rgb8.png"));
    ASSERT_TRUE(src.ok());
    EXPECT_EQ(resize_bicubic(*src, src->width, src->height).rgb, src->rgb);
}

}  // namespace
