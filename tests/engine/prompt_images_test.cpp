// SPDX-License-Identifier: Apache-2.0
// tests/engine/prompt_images_test.cpp: PromptImages, the images of one prompt: expanding one
// placeholder per image into its rows, each token's rotary position (image rows at the image's
// first position plus their offsets, later text shifted by advance - rows), the row that
// replaces an embedding, and the refusals when placeholders and images do not match.
#include <gtest/gtest.h>

#include "engine/prompt_images.h"

namespace tdm {
namespace {

constexpr int32_t kImage = 99;

// n_rows rows of width 2 with row r = (r, -r); offsets (0, r / cols, r % cols); advance max.
EncodedImage image(uint32_t rows_down, uint32_t cols) {
    EncodedImage e;
    e.n_rows = rows_down * cols;
    for (uint32_t r = 0; r < e.n_rows; ++r) {
        e.rows.insert(e.rows.end(), {float(r), -float(r)});
        e.thw.insert(e.thw.end(), {0, int32_t(r / cols), int32_t(r % cols)});
    }
    e.advance = int32_t(std::max(rows_down, cols));
    return e;
}

TEST(PromptImages, placeholders_expand_and_positions_shift_after_each_image) {
    const std::vector<int32_t> prompt = {1, 2, kImage, 3, kImage, 4};
    std::vector<int32_t> out;
    auto im = PromptImages::expand(prompt, kImage, {image(2, 3), image(1, 2)}, &out);
    ASSERT_TRUE(im.ok()) << im.error().message();
    EXPECT_EQ(out, (std::vector<int32_t>{1, 2, kImage, kImage, kImage, kImage, kImage, kImage, 3, kImage, kImage, 4}));
    EXPECT_EQ(im->first_row(), 2u);
    EXPECT_EQ(im->n_embd(), 2u);
    using P = std::array<int32_t, 4>;
    EXPECT_EQ(im->position4(1), (P{1, 1, 1, 0}));
    EXPECT_EQ(im->position4(2), (P{2, 2, 2, 0}));  // first image row: (p, p + 0, p + 0)
    EXPECT_EQ(im->position4(7), (P{2, 3, 4, 0}));  // row 5 of 2x3: (p, p + 1, p + 2)
    EXPECT_EQ(im->position4(8), (P{5, 5, 5, 0}));  // text after it: p + max(2, 3)
    EXPECT_EQ(im->position4(9), (P{6, 6, 6, 0}));  // second image starts at 6
    EXPECT_EQ(im->position4(10), (P{6, 6, 7, 0}));
    EXPECT_EQ(im->position4(11), (P{8, 8, 8, 0}));  // 6 + max(1, 2)
    EXPECT_EQ(im->position4(20), (P{17, 17, 17, 0}));  // generated tokens go on
    EXPECT_EQ(im->row(1), nullptr);
    ASSERT_NE(im->row(7), nullptr);
    EXPECT_EQ(im->row(7)[0], 5.0f);
    EXPECT_EQ(im->row(10)[1], -1.0f);
    EXPECT_EQ(im->row(11), nullptr);
    EXPECT_TRUE(im->has_rows(0, 3));
    EXPECT_FALSE(im->has_rows(8, 9));
    EXPECT_FALSE(im->has_rows(11, 40));
}

TEST(PromptImages, placeholders_and_images_must_match) {
    std::vector<int32_t> out;
    auto more_places = PromptImages::expand(std::vector<int32_t>{kImage, kImage}, kImage, {image(1, 1)}, &out);
    ASSERT_FALSE(more_places.ok());
    EXPECT_NE(more_places.error().message().find("more image places"), std::string::npos);
    auto more_images = PromptImages::expand(std::vector<int32_t>{1, kImage}, kImage, {image(1, 1), image(1, 1)}, &out);
    ASSERT_FALSE(more_images.ok());
    EXPECT_NE(more_images.error().message().find("2 images"), std::string::npos) << more_images.error().message();
    EncodedImage broken = image(2, 2);
    broken.thw.pop_back();
    EXPECT_FALSE(PromptImages::expand(std::vector<int32_t>{kImage}, kImage, {broken}, &out).ok());
    EncodedImage wide = image(1, 1);
    wide.rows.push_back(0.0f);  // 3 values for one row: width 3 against the other's 2
    EXPECT_FALSE(PromptImages::expand(std::vector<int32_t>{kImage, kImage}, kImage, {image(1, 1), wide}, &out).ok());
    auto none = PromptImages::expand(std::vector<int32_t>{1, 2}, kImage, {}, &out);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->first_row(), UINT32_MAX);
    EXPECT_EQ(none->position4(1), (std::array<int32_t, 4>{1, 1, 1, 0}));
}

}  // namespace
}  // namespace tdm
