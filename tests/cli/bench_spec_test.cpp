// SPDX-License-Identifier: Apache-2.0
// tests/cli/bench_spec_test.cpp: `tandem bench spec` with an EAGLE-3 head under forced
// acceptance on the tiny synthetic Qwen3: the head still drafts (its cost is measured), the
// output matches plain decoding, and the JSON carries the drafting cost over a plain step
// per drafted token and per round. Timings are checked for consistency, never for speed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_models.h"
#include "cli/cli_run.h"

namespace tdm {
namespace {

using nlohmann::json;

TEST(BenchSpec, a_forced_head_reports_its_draft_cost_per_token_and_per_round) {
    const std::string dir = test::make_temp_dir("bench-spec-cli");
    const std::string& target = cli_test_model(dir, "qwen3");
    const std::string head = dir + "/eagle3.gguf";
    CliRun r = tandem({"synth", "--arch", "eagle3", "--target", target, "--type", "f16", "-o", head});
    ASSERT_EQ(r.status, 0) << r.err;
    // one prompt of a few tokens: the figures' presence and arithmetic are the point
    r = tandem({"bench", "spec", "-m", target, "-md", head, "--force-acceptance", "1", "--spec-fixed", "--draft-max",
                "2", "--prompts", "1", "--prompt-len", "8", "--gen-tokens", "7", "-c", "128", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_TRUE(j["matched"].get<bool>());
    EXPECT_EQ(j["acceptance_rate"].get<double>(), 1.0);
    const json& s = j["spec"];
    const uint64_t rounds = s["rounds"], drafted = s["drafted_tokens"];
    ASSERT_GT(rounds, 0u);
    EXPECT_EQ(drafted, 2 * rounds) << "a fixed k of 2 at acceptance 1";
    const double per_token = j["draft_token_over_decode"], per_round = j["draft_round_over_decode"];
    EXPECT_GT(per_token, 0) << "the head ran under the forced drafter";
    EXPECT_NEAR(per_round, per_token * double(drafted) / double(rounds), 1e-9 * per_round);
    const double plain_tpot = j["plain_tpot_ms"], draft_ms = s["draft_ms"];
    EXPECT_NEAR(per_token * plain_tpot, draft_ms / double(drafted), 1e-9 * draft_ms);
}

}  // namespace
}  // namespace tdm
