// SPDX-License-Identifier: Apache-2.0
// tests/cli/warmup_cli_test.cpp: the warm-up at load (engine/warmup.h) through the built
// binary: `tandem run` prints the same greedy tokens, and the same speculative counts under
// fixed k, with and without it (plain, the Qwen3.5 MTP head with its recurrent states, a
// draft model, ngram-simple; with --prompt-cache, the MTP head's state saved and restored);
// `tandem chat` the same replies; the time is in the JSON (timings.warmup_ms, /stats'
// warmup_ms), 0 with --no-warmup or [model] warmup = false; a bad value of the key is refused
// naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_models.h"
#include "cli_run.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using nlohmann::json;

const std::string& dir_warmup_cli() {
    static const std::string d = test::make_temp_dir("warmup-cli");
    return d;
}

const std::string& warmup_model(const std::string& name) { return cli_test_model(dir_warmup_cli(), name); }

json warmup_run_json(const std::string& model_path, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "-m", model_path, "--prompt-tokens", "5,17,99,3,42,8,8,61,5,17,99,3",
                                     "-n", "12", "--temp", "0", "--ignore-eos", "--output-format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, "TANDEM_LOG=off");
    EXPECT_EQ(r.status, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    return j.is_object() ? j : json::object();
}

// The run with the warm-up (default) and with --no-warmup: the same tokens; under fixed k
// the same rounds too (no drafter state of the warm-up's drafts reaches the run).
void expect_same_with_and_without_warmup(const std::string& model_path, const std::vector<std::string>& extra) {
    const json warm = warmup_run_json(model_path, extra);
    std::vector<std::string> cold_args = extra;
    cold_args.push_back("--no-warmup");
    const json cold = warmup_run_json(model_path, cold_args);
    ASSERT_TRUE(warm.contains("tokens") && cold.contains("tokens"));
    EXPECT_EQ(warm["tokens"], cold["tokens"]);
    EXPECT_EQ(warm["tokens"].size(), 12u);
    EXPECT_GT(warm["timings"]["warmup_ms"].get<double>(), 0.0);
    EXPECT_EQ(cold["timings"]["warmup_ms"].get<double>(), 0.0);
    EXPECT_EQ(warm.contains("speculative"), cold.contains("speculative"));
    if (warm.contains("speculative")) {
        EXPECT_EQ(warm["speculative"]["drafted_tokens"], cold["speculative"]["drafted_tokens"]);
        EXPECT_EQ(warm["speculative"]["accepted_tokens"], cold["speculative"]["accepted_tokens"]);
        EXPECT_EQ(warm["speculative"]["rounds"], cold["speculative"]["rounds"]);
        EXPECT_GT(warm["speculative"]["drafted_tokens"].get<int>(), 0);
    }
}

TEST(WarmupCli, plain_decoding_gives_the_same_tokens_with_and_without_it) {
    expect_same_with_and_without_warmup(warmup_model("target"), {});
}

TEST(WarmupCli, the_qwen35_mtp_head_gives_the_same_tokens_and_rounds_with_and_without_it) {
    expect_same_with_and_without_warmup(warmup_model("qwen35"), {"--spec-type", "mtp", "--spec-fixed", "--draft-max", "3"});
    // the goodput controller's default: the tokens (its rounds follow measured times)
    const json warm = warmup_run_json(warmup_model("qwen35"), {"--spec-type", "mtp"});
    const json cold = warmup_run_json(warmup_model("qwen35"), {"--spec-type", "mtp", "--no-warmup"});
    EXPECT_EQ(warm["tokens"], cold["tokens"]);
}

TEST(WarmupCli, a_draft_model_gives_the_same_tokens_and_rounds_with_and_without_it) {
    expect_same_with_and_without_warmup(warmup_model("target"), {"-md", warmup_model("draft"), "--spec-fixed", "--draft-max", "4"});
}

TEST(WarmupCli, ngram_simple_gives_the_same_tokens_and_rounds_with_and_without_it) {
    expect_same_with_and_without_warmup(warmup_model("target"), {"--spec-type", "ngram-simple", "--spec-fixed", "--draft-max", "4",
                                                   "--spec-ngram-size-n", "1"});
}

TEST(WarmupCli, a_restored_prompt_cache_with_the_mtp_head_gives_the_same_tokens_and_rounds) {
    const std::vector<std::string> mtp = {"--spec-type", "mtp", "--spec-fixed", "--draft-max", "3"};
    const json none = warmup_run_json(warmup_model("qwen35"), mtp);
    std::map<bool, std::pair<json, json>> runs;  // by warm-up: the run that saves, the one that restores
    for (const bool warmup : {true, false}) {
        const std::string file = dir_warmup_cli() + (warmup ? "/warm.cache" : "/cold.cache");
        std::vector<std::string> args = mtp;
        args.insert(args.end(), {"--prompt-cache", file});
        if (!warmup) args.push_back("--no-warmup");
        runs[warmup] = {warmup_run_json(warmup_model("qwen35"), args), warmup_run_json(warmup_model("qwen35"), args)};
    }
    for (const auto& [warmup, r] : runs) {
        EXPECT_EQ(r.first["tokens"], none["tokens"]) << warmup;
        EXPECT_EQ(r.second["tokens"], none["tokens"]) << warmup;
        EXPECT_GT(r.second["prompt_cache"]["reused_tokens"].get<int>(), 0) << warmup;
    }
    // a restored head resumes where the saved one stopped, with or without the warm-up before
    for (const char* key : {"drafted_tokens", "accepted_tokens", "rounds"}) {
        EXPECT_EQ(runs[true].first["speculative"][key], runs[false].first["speculative"][key]) << key;
        EXPECT_EQ(runs[true].second["speculative"][key], runs[false].second["speculative"][key]) << key;
    }
}

TEST(WarmupCli, the_config_key_turns_it_off_and_a_bad_value_is_refused_naming_the_key) {
    const std::string off = dir_warmup_cli() + "/off.toml";
    std::ofstream(off) << "[model]\nwarmup = false\n";
    const json j = warmup_run_json(warmup_model("target"), {"--config", off});
    EXPECT_EQ(j["timings"]["warmup_ms"].get<double>(), 0.0);

    const std::string bad = dir_warmup_cli() + "/bad.toml";
    std::ofstream(bad) << "[model]\nwarmup = \"sometimes\"\n";
    const CliRun r = tandem({"run", "-m", warmup_model("target"), "--config", bad, "-p", "hi", "-n", "2"}, "TANDEM_LOG=off");
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("model.warmup")) << r.err;
    EXPECT_TRUE(r.has("expected boolean")) << r.err;
}

TEST(WarmupCli, text_output_reports_it_on_stderr_and_help_documents_the_flag) {
    CliRun r = tandem({"run", "-m", warmup_model("target"), "-p", "hi", "-n", "2", "--temp", "0"}, "TANDEM_LOG=off");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.err.find("warm-up: ") != std::string::npos && r.err.find(" ms at load") != std::string::npos)
        << r.err;
    r = tandem({"run", "-m", warmup_model("target"), "-p", "hi", "-n", "2", "--temp", "0", "--no-warmup"}, "TANDEM_LOG=off");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("warm-up: off (--no-warmup)")) << r.err;
    for (const char* command : {"run", "chat", "serve", "ocr"})
        EXPECT_TRUE(tandem({command, "--help"}).has("--no-warmup")) << command;
}

std::vector<json> warmup_chat_json(const std::vector<std::string>& extra) {
    const std::string in = dir_warmup_cli() + "/chat.txt";
    std::ofstream(in, std::ios::binary) << "hello there\nand again\n/stats\n";
    std::vector<std::string> args = {"chat", "-m", warmup_model("qwen35"), "--json", "-n", "6", "--temp", "0", "--ignore-eos"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, "TANDEM_LOG=off", in);
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<json> lines;
    std::istringstream s(r.out);
    for (std::string line; std::getline(s, line);) lines.push_back(json::parse(line, nullptr, false));
    return lines;
}

TEST(WarmupCli, chat_with_its_default_mtp_head_replies_the_same_with_and_without_it) {
    const std::vector<json> warm = warmup_chat_json({});
    const std::vector<json> cold = warmup_chat_json({"--no-warmup"});
    ASSERT_EQ(warm.size(), 3u);
    ASSERT_EQ(cold.size(), 3u);
    for (size_t t = 0; t < 2; ++t) {
        EXPECT_EQ(warm[t]["tokens"], cold[t]["tokens"]) << "turn " << t;
        EXPECT_EQ(warm[t]["n_cached"], cold[t]["n_cached"]) << "turn " << t;
    }
    EXPECT_GT(warm[2]["warmup_ms"].get<double>(), 0.0);
    EXPECT_EQ(cold[2]["warmup_ms"].get<double>(), 0.0);
}

}  // namespace
}  // namespace tdm
