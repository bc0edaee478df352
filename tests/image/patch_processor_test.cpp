// SPDX-License-Identifier: Apache-2.0
// tests/image/patch_processor_test.cpp: the GLM-4V image processor steps against golden data
// from Python (tests/fixtures/images/make_golden.py): smart_resize over 322 sizes by
// transformers' rule in Python floats, and the full pixel_values of one image (PIL resize,
// numpy float32 normalisation, HF's reshape/transpose order).
#include "image/image.h"
#include "image/patch_processor.h"
#include "image_fixtures.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

using namespace tdm;
using namespace tdm::test;

namespace {

std::string text_fixture(const std::string& name) { return read_fixture("images/" + name); }

TEST(PatchProcessor, smart_resize_equals_transformers_on_every_listed_size) {
    std::istringstream lines(text_fixture("smart_resize.txt"));
    const PatchProcessorConfig cfg;  // GLM-OCR's defaults, the budget the golden file used
    std::string line;
    int checked = 0, refused = 0;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] == '#') continue;
        uint32_t h = 0, w = 0, rh = 0, rw = 0;
        std::istringstream(line) >> h >> w >> rh >> rw;
        auto r = smart_resize(h, w, cfg);
        if (rh == 0) {
            EXPECT_FALSE(r.ok()) << h << " x " << w << " should be refused";
            if (!r.ok()) {
                EXPECT_NE(r.error().message().find("aspect ratio"), std::string::npos);
            }
            ++refused;
        } else {
            ASSERT_TRUE(r.ok()) << h << " x " << w << ": " << r.error().message();
            EXPECT_EQ(r->height, rh) << "height of " << h << " x " << w;
            EXPECT_EQ(r->width, rw) << "width of " << h << " x " << w;
            EXPECT_EQ(r->height % 28, 0u);
            EXPECT_EQ(r->width % 28, 0u);
        }
        ++checked;
    }
    EXPECT_GT(checked, 300);
    EXPECT_GE(refused, 2);
}

TEST(PatchProcessor, a_full_page_stays_within_the_token_budget) {
    const PatchProcessorConfig cfg;
    for (auto [h, w] : {std::pair<uint32_t, uint32_t>{3508, 2480}, {10000, 10000}, {1024, 1024}, {20, 30}}) {
        auto r = smart_resize(h, w, cfg);
        ASSERT_TRUE(r.ok());
        const uint64_t patches = uint64_t(r->height / 14) * (r->width / 14);
        EXPECT_LE(patches, 24576u) << h << " x " << w;  // docs/models/glm-ocr.md §5: at most 6,144 image tokens
        EXPECT_GE(uint64_t(r->height) * r->width * 2, cfg.min_pixels) << h << " x " << w;
    }
}

TEST(PatchProcessor, pixel_values_equal_the_processors) {
    auto cfg = patch_config_from_json(text_fixture("patch_config.json"));
    ASSERT_TRUE(cfg.ok()) << cfg.error().message();
    EXPECT_EQ(cfg->min_pixels, 3136u);
    auto img = decode_image(image_fixture("patch_input.png"));
    ASSERT_TRUE(img.ok()) << img.error().message();
    auto p = make_patches(*img, *cfg);
    ASSERT_TRUE(p.ok()) << p.error().message();

    const std::vector<uint8_t> golden = image_fixture("patches.f32");
    ASSERT_GT(golden.size(), 8u);
    uint32_t gh = 0, gw = 0;
    std::memcpy(&gh, golden.data(), 4);
    std::memcpy(&gw, golden.data() + 4, 4);
    EXPECT_EQ(p->grid_t, 1u);
    EXPECT_EQ(p->grid_h, gh);
    EXPECT_EQ(p->grid_w, gw);
    EXPECT_EQ(p->values_per_patch, 1176u);
    EXPECT_EQ(p->merged_tokens(), gh * gw / 4);
    const size_t n = (golden.size() - 8) / 4;
    ASSERT_EQ(p->values.size(), n);
    std::vector<float> want(n);
    std::memcpy(want.data(), golden.data() + 8, n * 4);
    size_t differing = 0, first = n;
    for (size_t i = 0; i < n; ++i)
        if (p->values[i] != want[i]) {
            ++differing;
            first = std::min(first, i);
        }
    EXPECT_EQ(differing, 0u) << differing << " of " << n << " values differ; first at " << first;
}

TEST(PatchProcessor, bad_preprocessor_configs_are_refused_with_the_field) {
    struct Case {
        const char* json;
        const char* says;
    };
    for (const Case& c : {Case{"[1, 2]", "not a JSON object"}, Case{R"({"patch_size": 0})", "'patch_size'"},
                          Case{R"({"patch_size": 100000})", "out of range"},
                          Case{R"({"size": {"shortest_edge": 100, "longest_edge": 10}})", "above its maximum"},
                          Case{R"({"image_std": [0.2, 0, 0.3]})", "'image_std'"},
                          Case{R"({"image_mean": [0.5, 0.5]})", "'image_mean'"},
                          Case{R"({"size": 12})", "'size'"}, Case{R"({"rescale_factor": "x"})", "'rescale_factor'"}}) {
        auto r = patch_config_from_json(c.json);
        ASSERT_FALSE(r.ok()) << c.json;
        EXPECT_NE(r.error().message().find(c.says), std::string::npos) << c.json << " -> " << r.error().message();
    }
    auto qwen = patch_config_from_json(R"({"min_pixels": 3136, "max_pixels": 12845056, "image_mean": 0.5})");
    ASSERT_TRUE(qwen.ok()) << qwen.error().message();
    EXPECT_EQ(qwen->max_pixels, 12845056u);
    EXPECT_EQ(qwen->mean[2], 0.5f);
}

}  // namespace
