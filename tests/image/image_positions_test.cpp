// SPDX-License-Identifier: Apache-2.0
// tests/image/image_positions_test.cpp: 3-D positions of prompts with one and two images
// against tables from a numpy restatement of transformers' get_rope_index
// (tests/fixtures/images/image_positions.txt, make_golden.py), and prompts whose image
// tokens do not match the images.
#include "image/image_positions.h"
#include "image_fixtures.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

using namespace tdm;
using namespace tdm::test;

namespace {

struct GoldenPrompt {
    std::vector<ImageGrid> grids;
    std::vector<int32_t> tokens, t, h, w;
    int64_t next = -1;
};

std::map<std::string, GoldenPrompt> golden_prompts() {
    const std::vector<uint8_t> bytes = image_fixture("image_positions.txt");
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    std::map<std::string, GoldenPrompt> out;
    GoldenPrompt* cur = nullptr;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string key;
        ls >> key;
        if (key == "prompt") {
            std::string name;
            ls >> name;
            cur = &out[name];
        } else if (cur && key == "grids") {
            ImageGrid g;
            while (ls >> g.grid_t >> g.grid_h >> g.grid_w) cur->grids.push_back(g);
        } else if (cur && (key == "tokens" || key == "t" || key == "h" || key == "w")) {
            std::vector<int32_t>& v = key == "tokens" ? cur->tokens : key == "t" ? cur->t : key == "h" ? cur->h : cur->w;
            int32_t x = 0;
            while (ls >> x) v.push_back(x);
        } else if (cur && key == "next") {
            ls >> cur->next;
        }
    }
    return out;
}

constexpr int32_t kImageToken = 59280;

TEST(ImagePositions, prompts_with_one_and_two_images_equal_get_rope_index) {
    const auto prompts = golden_prompts();
    ASSERT_EQ(prompts.size(), 3u);
    for (const auto& [name, g] : prompts) {
        auto pos = image_positions(g.tokens, kImageToken, g.grids, 2);
        ASSERT_TRUE(pos.ok()) << name << ": " << pos.error().message();
        EXPECT_EQ(pos->t, g.t) << name;
        EXPECT_EQ(pos->h, g.h) << name;
        EXPECT_EQ(pos->w, g.w) << name;
        EXPECT_EQ(pos->next, g.next) << name;
        EXPECT_LE(pos->next, int64_t(g.tokens.size())) << name << ": an image takes at most as many positions as tokens";
    }
}

TEST(ImagePositions, text_only_prompts_count_one_position_per_token) {
    const std::vector<int32_t> tokens = {5, 6, 7, 8};
    auto pos = image_positions(tokens, kImageToken, {}, 2);
    ASSERT_TRUE(pos.ok());
    EXPECT_EQ(pos->t, (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(pos->h, pos->t);
    EXPECT_EQ(pos->w, pos->t);
    EXPECT_EQ(pos->next, 4);
}

TEST(ImagePositions, token_runs_that_do_not_match_the_images_are_errors) {
    const std::vector<ImageGrid> one = {{1, 4, 4}};  // 2 x 2 cells: 4 tokens
    const std::vector<int32_t> three = {1, kImageToken, kImageToken, kImageToken, 2};
    auto a = image_positions(three, kImageToken, one, 2);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message().find("image 1: the prompt has 3 image tokens in a row where its 2 x 2 cells need 4"),
              std::string::npos)
        << a.error().message();

    const std::vector<int32_t> two_runs = {kImageToken, kImageToken, kImageToken, kImageToken, 1,
                                           kImageToken, kImageToken, kImageToken, kImageToken};
    auto b = image_positions(two_runs, kImageToken, one, 2);
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().message().find("more images"), std::string::npos) << b.error().message();

    const std::vector<ImageGrid> two = {{1, 4, 4}, {1, 2, 2}};
    auto c = image_positions(std::vector<int32_t>{kImageToken, kImageToken, kImageToken, kImageToken}, kImageToken,
                             two, 2);
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("1 runs of image tokens but 2 images"), std::string::npos) << c.error().message();

    auto d = image_positions(three, kImageToken, std::vector<ImageGrid>{{1, 3, 2}}, 2);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message().find("does not divide"), std::string::npos) << d.error().message();

    auto e = image_positions(three, kImageToken, std::vector<ImageGrid>{{2, 2, 6}}, 2);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message().find("still images"), std::string::npos) << e.error().message();
}

}  // namespace
