// SPDX-License-Identifier: Apache-2.0
// tests/cli/tune_cli_test.cpp: `tandem tune` times the matmul work splits of the shapes it
// is given, keeps the fastest in the device's table beside the pipeline cache, reports
// them (text or JSON), skips shapes already tuned unless --retune, keeps the "mv" layout's
// unroll, and refuses bad shapes and splits with a message naming them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli/cli_models.h"
#include "cli/cli_run.h"

namespace tdm {
namespace {

class TuneCli : public ::testing::Test {
protected:
    void SetUp() override { cache_ = test::make_temp_dir("tune-cache"); }
    CliRun tune(std::vector<std::string> args) {
        args.insert(args.begin(), "tune");
        return tandem(args, "TANDEM_LOG=off XDG_CACHE_HOME=" + quote(cache_));
    }
    std::string table_path() const {
        for (const auto& e : std::filesystem::directory_iterator(cache_ + "/tandem"))
            if (e.path().filename().string().rfind("splits-", 0) == 0) return e.path().string();
        return {};
    }
    std::string cache_;
};

TEST_F(TuneCli, tunes_a_shape_keeps_it_and_skips_it_next_time) {
    const std::vector<std::string> args = {"--matrix", "96x256", "--types", "q8_0", "--splits", "8x1,4x1",
                                           "--iterations", "1", "--json"};
    const CliRun first = tune(args);
    ASSERT_EQ(first.status, 0) << first.err;
    const auto j = nlohmann::json::parse(first.out);
    ASSERT_EQ(j["shapes"].size(), 1u) << first.out;
    const auto& s = j["shapes"][0];
    EXPECT_EQ(s["status"], "tuned");
    EXPECT_EQ(s["rows"], 96);
    EXPECT_EQ(s["cols"], 256);
    EXPECT_EQ(s["candidates"].size(), 2u);
    const std::string split = s["split"];
    EXPECT_TRUE(split == "8x1" || split == "4x1") << split;
    const std::string key = s["key"];
    EXPECT_NE(key.find("q8_0"), std::string::npos) << key;

    const std::string table = test::read_file(table_path());
    EXPECT_EQ(table.rfind("tandem-work-splits 1\n", 0), 0u) << table;
    EXPECT_NE(table.find(key + " " + split.substr(0, 1) + " 1\n"), std::string::npos) << table;

    const CliRun again = tune(args);
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out)["shapes"][0]["status"], "cached");

    std::vector<std::string> retune = args;
    retune.push_back("--retune");
    const CliRun measured = tune(retune);
    ASSERT_EQ(measured.status, 0) << measured.err;
    EXPECT_EQ(nlohmann::json::parse(measured.out)["shapes"][0]["status"], "tuned");

    const CliRun text = tune({"--matrix", "96x256", "--types", "q8_0"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("tuned before; --retune measures again"), std::string::npos) << text.out;
}

TEST_F(TuneCli, an_mv_split_keeps_its_unroll_and_a_split_without_one_takes_the_default) {
    // the GPUs' layout, forced on the test device
    const CliRun r = tandem({"tune", "--matrix", "96x256", "--types", "q8_0", "--splits", "2x2u4,1x4", "--iterations",
                             "1", "--json"},
                            "TANDEM_LOG=off TANDEM_MATMUL_LAYOUT=mv XDG_CACHE_HOME=" + quote(cache_));
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["shapes"].size(), 1u) << r.out;
    const auto& s = j["shapes"][0];
    const std::string key = s["key"];
    EXPECT_EQ(key.rfind("matmul_mv_q8_0_", 0), 0u) << key;
    ASSERT_EQ(s["candidates"].size(), 2u) << s;
    EXPECT_EQ(s["candidates"][0]["split"], "2x2u4");
    EXPECT_EQ(s["candidates"][1]["split"], "1x4u2");
    const std::string table = test::read_file(table_path());
    const std::string line = s["split"] == "2x2u4" ? " 2 2 4\n" : " 1 4 2\n";
    EXPECT_NE(table.find(key + line), std::string::npos) << table;
}

TEST_F(TuneCli, a_model_gives_the_shapes_of_its_matrices) {
    const std::string model = cli_test_model(test::make_temp_dir("tune-model"), "qwen3");
    const CliRun r = tune({"-m", model, "--splits", "8x1", "--iterations", "1", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_GE(j["shapes"].size(), 3u) << r.out;  // at least q/k/v-class, MLP and output projections
    for (const auto& s : j["shapes"]) {
        EXPECT_EQ(s["type"], "f16") << s;
        EXPECT_GE(s["rows"].get<int>(), 64) << s;  // never a norm vector
        EXPECT_EQ(s["split"], "8x1") << s;
    }
}

TEST_F(TuneCli, bad_shapes_types_and_splits_are_refused_by_name) {
    const CliRun shape = tune({"--matrix", "96x100"});
    EXPECT_NE(shape.status, 0);
    EXPECT_TRUE(shape.has("--matrix '96x100'")) << shape.err;
    const CliRun type = tune({"--matrix", "96x256", "--types", "q9_9"});
    EXPECT_NE(type.status, 0);
    EXPECT_TRUE(type.has("unknown weight type 'q9_9'")) << type.err;
    const CliRun split = tune({"--matrix", "96x256", "--splits", "4x100000"});
    EXPECT_NE(split.status, 0);
    EXPECT_TRUE(split.has("--splits '4x100000'")) << split.err;
}

TEST_F(TuneCli, a_table_that_is_not_ours_is_replaced_not_fatal) {
    ASSERT_EQ(tune({"--matrix", "96x256", "--types", "q8_0", "--splits", "8x1", "--iterations", "1"}).status, 0);
    const std::string path = table_path();
    ASSERT_FALSE(path.empty());
    std::ofstream(path, std::ios::trunc) << "garbage\n";
    const CliRun r = tandem({"tune", "--matrix", "96x256", "--types", "q8_0", "--splits", "8x1", "--iterations", "1"},
                            "XDG_CACHE_HOME=" + quote(cache_));
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("does not start with")) << r.err;
    EXPECT_EQ(test::read_file(path).rfind("tandem-work-splits 1\n", 0), 0u);
}

}  // namespace
}  // namespace tdm
