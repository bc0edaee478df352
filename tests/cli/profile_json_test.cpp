// SPDX-License-Identifier: Apache-2.0
// tests/cli/profile_json_test.cpp: `--profile-json FILE` writes one JSON line per run of a graph,
// node by node, whose times add up to the run's; a file that cannot be created is a clear error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "cli/cli_models.h"

namespace tdm {
namespace {

TEST(ProfileJson, each_run_is_one_line_of_named_nodes_whose_times_add_up) {
    const std::string dir = test::make_temp_dir("profile-json");
    const std::string& model = cli_test_model(dir, "tiny");
    const std::string file = dir + "/profile.jsonl";
    const CliRun r = tandem({"run", "-m", model, "-p", "Hello", "-n", "4", "--temp", "0", "--profile-json", file});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("GPU time per op"), std::string::npos) << "the table is for --profile";

    std::istringstream lines(test::read_file(file));
    std::string line;
    int runs = 0;
    bool saw_weight_matmul = false;
    while (std::getline(lines, line)) {
        const auto j = nlohmann::json::parse(line);  // throws (fails the test) on a bad line
        EXPECT_EQ(j["run"].get<int>(), runs);
        ++runs;
        double sum_us = 0;
        ASSERT_FALSE(j["nodes"].empty()) << line;
        for (const auto& n : j["nodes"]) {
            ASSERT_TRUE(n.contains("op")) << n.dump();
            EXPECT_FALSE(n["kernels"].empty());
            EXPECT_EQ(n["kernels"].size(), n["workgroups"].size());
            EXPECT_GE(n["us"].get<double>(), 0.0);
            sum_us += n["us"].get<double>();
            if (n["op"] == "matmul" && n.value("weight_type", "") == "f16") {
                saw_weight_matmul = true;
                EXPECT_GT(n["bytes_read"].get<uint64_t>(), 0u);
            }
        }
        EXPECT_NEAR(sum_us, j["gpu_us"].get<double>(), 1e-6 * std::max(1.0, sum_us));
    }
    // a prefill pass and one step per generated token after the first
    EXPECT_GE(runs, 4);
    EXPECT_TRUE(saw_weight_matmul) << "the f16 projections are matmuls of named weights";
}

TEST(ProfileJson, a_file_that_cannot_be_created_is_an_error_naming_it) {
    const CliRun r = tandem({"devices", "--profile-json", "/nonexistent-dir/p.jsonl"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("--profile-json: cannot create '/nonexistent-dir/p.jsonl'")) << r.err;
}

}  // namespace
}  // namespace tdm
