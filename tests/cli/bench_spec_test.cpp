// SPDX-License-Identifier: Apache-2.0
// tests/cli/bench_spec_test.cpp: `tandem bench spec` with an EAGLE-3 head under forced
// acceptance on the tiny synthetic Qwen3: the head still drafts (its cost is measured), the
// output matches plain decoding, and the JSON carries the drafting cost over a plain step
// per drafted token and per round; and a draft model with recurrent state under forced
// acceptance keeps drafting. Timings are checked for consistency, never for speed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>

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
    EXPECT_FALSE(j.contains("speedup_vs_own_plain_steps")) << "no plain steps to compare with";
}

// Where the controller takes plain steps, a speculative run is also compared with its own:
// its decoded tokens at what its plain steps cost, over what all its passes took. On a
// machine whose speed drifts that compares the two at the same moment.
TEST(BenchSpec, a_run_with_plain_steps_is_compared_with_its_own_plain_steps) {
    const std::string dir = test::make_temp_dir("bench-spec-own-plain");
    const std::string& target = cli_test_model(dir, "qwen3");
    const CliRun r = tandem({"bench", "spec", "-m", target, "--force-acceptance", "0", "--prompts", "1",
                             "--prompt-len", "8", "--gen-tokens", "24", "-c", "128", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    const json& s = j["spec"];
    const uint64_t plain_steps = s["plain_steps"];
    ASSERT_GE(plain_steps, 8u) << "a drafter that never agrees is switched off";
    ASSERT_TRUE(j.contains("speedup_vs_own_plain_steps")) << j.dump();
    EXPECT_EQ(j["own_plain_prompts"].get<int>(), 1);
    const json& p = j["per_prompt"][0];
    const double own_step = (double(s["plain_ms"]) + double(s["plain_accept_ms"])) / double(plain_steps);
    EXPECT_GT(double(s["plain_accept_ms"]), 0.0);
    EXPECT_LT(double(s["plain_accept_ms"]), double(s["accept_ms"])) << "rounds settle their tokens too";
    EXPECT_NEAR(p["own_plain_step_ms"].get<double>(), own_step, 1e-9 * own_step);
    const double spent = double(s["plain_ms"]) + double(s["verify_ms"]) + double(s["draft_ms"]) + double(s["accept_ms"]);
    EXPECT_GT(double(s["accept_ms"]), 0.0);
    const double want = own_step * 23.0 / spent;  // 24 tokens, the first from the prompt's pass
    EXPECT_NEAR(p["speedup_vs_own_plain_steps"].get<double>(), want, 1e-9 * want);
    EXPECT_NEAR(j["speedup_vs_own_plain_steps"].get<double>(), want, 1e-9 * want);
}

// A draft model with recurrent state (Qwen3.5's Gated DeltaNet layers) drafts a token a pass
// and rolls back to any of them when the target rejects a draft: each pass's state must keep a
// checkpoint of its own (KvPool::keep_states_from). When plain steps began taking the lowest
// checkpoints again, the first rejection could not roll back and the drafter was switched off.
TEST(BenchSpec, a_recurrent_draft_model_rolls_back_to_any_drafted_length_and_keeps_drafting) {
    const std::string dir = test::make_temp_dir("bench-spec-recurrent-draft");
    const std::string target = dir + "/target.gguf", draft = dir + "/draft.gguf";
    for (const auto& [file, seed] : {std::pair{target, "1"}, std::pair{draft, "2"}}) {
        const CliRun s = tandem({"synth", "--arch", "qwen35", "--preset", "tiny", "--type", "q8_0", "--mtp", "false",
                                 "--seed", seed, "-o", file});
        ASSERT_EQ(s.status, 0) << s.err;
    }
    const CliRun r = tandem({"bench", "spec", "-m", target, "-md", draft, "--force-acceptance", "0.5", "--spec-fixed",
                             "--draft-max", "4", "--prompts", "2", "--gen-tokens", "24", "-c", "128", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_TRUE(j["matched"].get<bool>());
    const json& s = j["spec"];
    ASSERT_EQ(s["drafters"].size(), 1u);
    EXPECT_EQ(s["drafters"][0]["failure"].get<std::string>(), "") << r.err;
    const uint64_t rounds = s["rounds"], plain = s["plain_steps"], accepted = s["accepted_tokens"],
                   drafted = s["drafted_tokens"];
    EXPECT_LE(plain, 2u) << "a plain step per prompt at most (its last token): the drafter was not switched off";
    EXPECT_GE(rounds, 2u * 24 / 5) << "a round per pass, at most 5 tokens each";
    EXPECT_GT(accepted, 0u);
    EXPECT_LT(accepted, drafted) << "drafts were rejected, so rounds rolled back inside the drafted passes";
}

// --bracket runs each prompt's plain decode again after its speculative run: the pair is
// compared with the mean of the two, whose per-token times the prompt reports.
TEST(BenchSpec, bracket_compares_with_the_mean_of_a_plain_run_before_and_after) {
    const std::string dir = test::make_temp_dir("bench-spec-bracket");
    const std::string& target = cli_test_model(dir, "qwen3");
    CliRun r = tandem({"bench", "spec", "-m", target, "--force-acceptance", "0.5", "--bracket", "--prompts", "2",
                       "--prompt-len", "8", "--gen-tokens", "6", "-c", "128", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_TRUE(j["matched"].get<bool>());
    EXPECT_TRUE(j["bracket"].get<bool>());
    ASSERT_EQ(j["per_prompt"].size(), 2u);
    double plain_sum = 0;
    for (const json& p : j["per_prompt"]) {
        ASSERT_TRUE(p.contains("plain_tpot_ms_before") && p.contains("plain_tpot_ms_after")) << p.dump();
        const double before = p["plain_tpot_ms_before"], after = p["plain_tpot_ms_after"], mean = p["plain_tpot_ms"];
        EXPECT_GT(before, 0);
        EXPECT_GT(after, 0);
        EXPECT_NEAR(mean, 0.5 * (before + after), 1e-9 * mean);
        const double spec = p["spec_tpot_ms"], speedup = p["speedup_decode"];
        EXPECT_NEAR(speedup, mean / spec, 1e-9 * speedup) << "the same tokens both ways: the ratio of per-token times";
        plain_sum += mean;
    }
    EXPECT_NEAR(j["plain_tpot_ms"].get<double>(), plain_sum / 2, 1e-9 * plain_sum) << "equal token counts";

    // unbracketed, a prompt reports one plain run
    r = tandem({"bench", "spec", "-m", target, "--force-acceptance", "0.5", "--prompts", "1", "--prompt-len", "8",
                "--gen-tokens", "4", "-c", "128", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json u = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(u.is_object()) << r.out;
    EXPECT_FALSE(u["bracket"].get<bool>());
    EXPECT_FALSE(u["per_prompt"][0].contains("plain_tpot_ms_before"));

    // the summary for people says what the plain figure is
    r = tandem({"bench", "spec", "-m", target, "--force-acceptance", "0.5", "--bracket", "--prompts", "1",
                "--prompt-len", "8", "--gen-tokens", "4", "-c", "128"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("matched=true (plain: the mean of a run before and one after"), std::string::npos) << r.out;

    // the other benchmarks have no speculative run to bracket
    r = tandem({"bench", "decode", "-m", target, "--bracket"});
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--bracket"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tdm
