// SPDX-License-Identifier: Apache-2.0
// tests/cli/bench_image_test.cpp: `tandem bench image` on the image fixtures (PNG, JPEG and a
// two-page PDF): one entry per page with its sizes, patch grid and image tokens by the GLM-OCR
// processor's rule; a bad file is an error naming it; other benchmarks take no files.
// Timings are printed, never checked.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using nlohmann::json;

std::string fixture(const std::string& name) { return test::fixture_path("images/" + name); }

TEST(BenchImage, every_page_of_every_file_gets_its_grid_and_token_count) {
    CliRun r = tandem({"bench", "image", fixture("rgb8.png"), fixture("two_pages.pdf"), fixture("progressive.jpg"),
                       "--iterations", "2", "--pdf-dpi", "144", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    ASSERT_EQ(j["pages"].size(), 4u) << r.out;
    const json& png = j["pages"][0];
    EXPECT_EQ(png["width"], 37);
    EXPECT_EQ(png["height"], 23);
    // 37 x 23 is below the minimum budget (12544 pixels over two frames): scaled up to 112 x 84
    EXPECT_EQ(png["resized_width"], 112);
    EXPECT_EQ(png["resized_height"], 84);
    EXPECT_EQ(png["patches"], 48);
    EXPECT_EQ(png["image_tokens"], 12);
    EXPECT_EQ(j["pages"][1]["page"], 1);
    EXPECT_EQ(j["pages"][2]["page"], 2);
    EXPECT_EQ(j["pages"][1]["width"], 120);  // 60 pt at 144 dpi
    EXPECT_EQ(j["pages"][2]["height"], 100);
    for (const json& p : j["pages"]) {
        EXPECT_EQ(p["image_tokens"].get<int>() * 4, p["patches"].get<int>());
        EXPECT_EQ(p["resized_width"].get<int>() % 28, 0);
        EXPECT_GE(p["total_ms"].get<double>(), 0.0);
    }
}

TEST(BenchImage, a_bad_file_is_an_error_that_names_it) {
    CliRun r = tandem({"bench", "image", fixture("rgb8.rgb")});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("rgb8.rgb") && r.has("not a PNG or JPEG")) << r.err;
    CliRun pdf = tandem({"bench", "image", fixture("encrypted.pdf")});
    EXPECT_EQ(pdf.status, 1);
    EXPECT_TRUE(pdf.has("encrypted")) << pdf.err;
    CliRun none = tandem({"bench", "image"});
    EXPECT_EQ(none.status, 1);
    EXPECT_TRUE(none.has("give one or more PNG, JPEG or PDF files")) << none.err;
    CliRun extra = tandem({"bench", "decode", "x.png"});
    EXPECT_EQ(extra.status, 1);
    EXPECT_TRUE(extra.has("only `bench image` takes files")) << extra.err;
}

}  // namespace
}  // namespace tdm
