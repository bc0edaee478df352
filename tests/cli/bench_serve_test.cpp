// SPDX-License-Identifier: Apache-2.0
// tests/cli/bench_serve_test.cpp: `tandem bench serve` on tiny synthetic models: the JSON of
// its levels (every request finished, every token counted), the paired plain/speculative
// mode, the MTP head drafting for concurrent requests, and the refusals of options that do
// not go together. Timings are printed, never checked.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_models.h"
#include "cli/cli_run.h"

namespace tdm {
namespace {

using nlohmann::json;

const std::string& dir() {
    static const std::string d = test::make_temp_dir("bench-serve-cli");
    return d;
}

json bench(std::vector<std::string> extra) {
    std::vector<std::string> args = {"bench", "serve", "--prompt-len", "8", "--gen-tokens", "6", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliRun r = tandem(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out, nullptr, false);
}

TEST(BenchServe, each_level_finishes_every_request_and_counts_its_tokens) {
    const json j = bench({"-m", cli_test_model(dir(), "qwen3"), "--concurrency", "1,3", "--requests", "4"});
    ASSERT_TRUE(j.is_object()) << j;
    ASSERT_EQ(j["levels"].size(), 2u);
    for (const json& l : j["levels"]) {
        EXPECT_EQ(l["failed"], 0);
        EXPECT_EQ(l["requests"], 4);
        EXPECT_EQ(l["output_tokens"], 24);
        EXPECT_GT(l["output_tokens_per_s"].get<double>(), 0);
        EXPECT_EQ(l["drafted"], 0) << "no drafter was asked for";
    }
    EXPECT_GT(j["levels"][1]["rows_per_pass"].get<double>(), 1.0) << "three clients share passes";
}

TEST(BenchServe, vs_plain_runs_pairs_and_reports_their_median_speedup) {
    const json j = bench({"-m", cli_test_model(dir(), "qwen3"), "--concurrency", "2", "--requests", "2", "--vs-plain",
                          "--pairs", "2", "--spec-type", "ngram-simple", "--spec-auto"});
    ASSERT_TRUE(j.is_object()) << j;
    ASSERT_EQ(j["levels"].size(), 1u);
    const json& l = j["levels"][0];
    EXPECT_EQ(l["pairs"], 2);
    for (const char* side : {"plain", "speculative"}) {
        EXPECT_EQ(l[side]["failed"], 0) << side;
        EXPECT_EQ(l[side]["output_tokens"], 12) << side;
    }
    EXPECT_EQ(l["plain"]["drafted"], 0);
    const double lo = l["speedup_min"], mid = l["speedup_median"], hi = l["speedup_max"];
    EXPECT_LE(lo, mid);
    EXPECT_LE(mid, hi);
    EXPECT_GT(lo, 0);
}

// Each request drafts with a drafter of its own on the model's MTP head. Fixed k: the
// random head never agrees, so the goodput controller would (rightly) stop drafting after
// the warm-up's history, and the mechanism would go untested.
TEST(BenchServe, the_mtp_head_drafts_for_concurrent_requests) {
    const json j = bench({"-m", cli_test_model(dir(), "qwen35"), "--concurrency", "3", "--requests", "3",
                          "--spec-type", "mtp", "--draft-max", "2", "--spec-fixed"});
    ASSERT_TRUE(j.is_object()) << j;
    const json& l = j["levels"][0];
    EXPECT_EQ(l["failed"], 0);
    EXPECT_EQ(l["output_tokens"], 18);
    EXPECT_GT(l["drafted"].get<uint64_t>(), 0u);
}

TEST(BenchServe, options_that_do_not_go_together_are_refused) {
    const std::string& m = cli_test_model(dir(), "qwen3");
    CliRun r = tandem({"bench", "serve", "-m", m, "--vs-plain"});
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("--vs-plain compares speculative decoding with plain: give --spec-type")) << r.err;
    r = tandem({"bench", "serve", "-m", m, "--pairs", "2", "--spec-type", "ngram-simple"});
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("--pairs counts the plain/speculative pairs of --vs-plain")) << r.err;
    r = tandem({"bench", "serve", "-m", m, "--concurrency", "0"});
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("is not a number of streams from 1 to 256")) << r.err;
}

}  // namespace
}  // namespace tdm
