// SPDX-License-Identifier: Apache-2.0
// tests/cli/cli_options_e2e_test.cpp: the `tandem` executable refusing bad option values
// and honouring the config file, end to end: usage errors exit 2, bad settings exit 1, and
// the message names the option, the value and what is allowed.
//
// To add a case: tandem({...}) and check the exit status and a substring of stderr.
#include "cli/cli_models.h"
#include "cli_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const std::string& dir_cli_options_e2e() {
    static const std::string d = test::make_temp_dir("cli-options");
    return d;
}

std::string write_text_cli_options_e2e(const std::string& name, const std::string& text) {
    const std::string p = dir_cli_options_e2e() + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

TEST(CliOptions, out_of_range_and_unknown_values_are_usage_errors_naming_the_option) {
    struct Case {
        std::vector<std::string> args;
        const char* message;
    };
    const Case cases[] = {
        {{"run", "-m", "x", "-c", "4294967296"}, "-c: 4294967296 is out of range (allowed: 0 to 2147483647)"},
        {{"run", "-m", "x", "-n", "4294967296"}, "-n: 4294967296 is out of range"},
        {{"run", "-m", "x", "-n", "-5"}, "-n: -5 is out of range (allowed: -1 to"},
        {{"run", "-m", "x", "--top-k", "4294967296"}, "--top-k: 4294967296 is out of range"},
        {{"run", "-m", "x", "--output-format", "xml"}, "--output-format: 'xml' is not one of: text, json"},
        {{"run", "-m", "x", "--spec-type", ""}, "--spec-type: no drafter named"},
        {{"run", "-m", "x", "-p", "a", "-f", "b"}, "-p and -f both give the prompt"},
        {{"run", "-m", "x", "-p", "a", "--prompt-tokens", "1"}, "-p and --prompt-tokens both give the prompt"},
        {{"run", "-m", "x", "-c", "64", "--kv-memory", "1MiB"}, "-c and --kv-memory both size the context"},
    };
    for (const Case& c : cases) {
        CliRun r = tandem(c.args);
        EXPECT_EQ(r.status, 2) << c.message << "\n" << r.err;
        EXPECT_TRUE(r.has(c.message)) << r.err;
    }
}

TEST(CliOptions, a_context_of_one_token_is_refused_with_the_minimum) {
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "-c", "1", "--prompt-tokens", "1"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("-c (model.n_ctx): 1 is below the minimum 16 (one KV block")) << r.err;
}

TEST(CliOptions, a_missing_plugin_path_is_refused_and_an_unknown_disabled_plugin_is_named) {
    CliRun r = tandem({"plugins", "--plugin-path", dir_cli_options_e2e() + "/no-such-dir"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("--plugin-path: directory '" + dir_cli_options_e2e() + "/no-such-dir' does not exist")) << r.err;
    r = tandem({"plugins", "--plugin-disable", "qwen-nextn-typo"}, "TANDEM_LOG=warn");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("no plugin named 'qwen-nextn-typo' was found")) << r.err;
    EXPECT_TRUE(r.has("qwen-nextn")) << r.err;
    r = tandem({"plugins", "--plugin-disable", "ngram"}, "TANDEM_LOG=warn");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(r.has("no plugin named")) << r.err;
}

TEST(CliOptions, draft_vocab_above_the_vocabulary_is_refused) {
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "2", "--spec-type", "ngram-simple",
                       "--draft-vocab", "100000"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("--draft-vocab ([speculative] draft_vocab): 100000 is larger than the model's vocabulary of 512"))
        << r.err;
    r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "2", "--draft-vocab", "most"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("'most' is not auto, all or a token count")) << r.err;
    EXPECT_TRUE(r.has("--draft-vocab")) << r.err;
    for (const char* ok : {"auto", "all", "0", "300"}) {
        r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2", "-n", "2", "--spec-type",
                    "ngram-simple", "--draft-vocab", ok});
        EXPECT_EQ(r.status, 0) << ok << ": " << r.err;
    }
}

TEST(CliOptions, model_path_from_the_config_file_runs_without_minus_m) {
    const std::string cfg = write_text_cli_options_e2e("model.toml", "[model]\npath = \"" + tiny_qwen3_model() + "\"\n");
    CliRun r = tandem({"--config", cfg, "run", "--prompt-tokens", "1,2,3", "-n", "3", "--temp", "0", "--ignore-eos",
                       "--output-format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].size(), 3u);
    r = tandem({"--config", cfg, "tokenize", "--ids", "hello"});
    EXPECT_EQ(r.status, 0) << r.err;
    // no model anywhere: the message says both ways of giving one
    r = tandem({"--config", write_text_cli_options_e2e("empty.toml", ""), "run", "--prompt-tokens", "1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("no model given: use -m FILE")) << r.err;
    EXPECT_TRUE(r.has("[model] path")) << r.err;
}

TEST(CliOptions, an_hf_directory_says_whether_config_json_is_missing_not_json_or_lacks_model_type) {
    const std::string hf = dir_cli_options_e2e() + "/hf";
    ASSERT_EQ(tandem({"synth", "--type", "f32", "--format", "hf", "-o", hf}).status, 0);
    const std::string config = hf + "/config.json";
    std::filesystem::remove(config);
    CliRun r = tandem({"run", "-m", hf, "--prompt-tokens", "1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("config.json: not found")) << r.err;
    EXPECT_FALSE(r.has("no model_type")) << r.err;
    std::ofstream(config) << "{\"model_type\": \"qwen3\",,}";
    r = tandem({"run", "-m", hf, "--prompt-tokens", "1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("invalid JSON")) << r.err;
    EXPECT_TRUE(r.has("line 1, column 24")) << r.err;
    std::ofstream(config, std::ios::trunc) << "{\"hidden_size\": 64}";
    r = tandem({"run", "-m", hf, "--prompt-tokens", "1"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("config.json has no \"model_type\"")) << r.err;
}

}  // namespace
}  // namespace tdm
