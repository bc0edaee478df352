// SPDX-License-Identifier: Apache-2.0
// tests/cli/prompt_cache_cli_test.cpp: `tandem run --prompt-cache FILE` end to
// end: the first run saves, a second run of the same prompt (or a longer one)
// reuses the saved prefix and prints the tokens of a run without a cache; a
// refused file warns and the run still generates; --prompt-cache-ro never writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_models.h"
#include "cli_run.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

std::string ids(int n, int salt) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(1 + (i * 37 + salt * 11) % 200);
    return s;
}

struct RunOut {
    CliRun raw;
    nlohmann::json j;
};

RunOut run(const std::string& prompt, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"run", "-m", tiny_qwen3_model(), "--prompt-tokens", prompt, "-n", "8", "--temp", "0",
                                     "--ignore-eos", "--output-format", "json", "-b", "16"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunOut r;
    r.raw = tandem(args, "TANDEM_LOG=off");
    EXPECT_EQ(r.raw.status, 0) << r.raw.err;
    r.j = nlohmann::json::parse(r.raw.out, nullptr, false);
    EXPECT_FALSE(r.j.is_discarded()) << r.raw.out;
    return r;
}

TEST(CliPromptCache, second_run_reuses_the_prompt_and_prints_the_same_tokens) {
    const std::string file = test::make_temp_dir("pcache-cli") + "/cache.bin";
    const std::string p = ids(40, 1);
    const RunOut none = run(p);
    const RunOut first = run(p, {"--prompt-cache", file});
    EXPECT_EQ(first.j["tokens"], none.j["tokens"]);
    EXPECT_EQ(first.j["prompt_cache"]["reused_tokens"], 0);
    EXPECT_EQ(first.j["prompt_cache"]["saved"], true);
    EXPECT_EQ(first.j["prompt_cache"]["saved_tokens"], 39);
    ASSERT_TRUE(std::filesystem::is_regular_file(file));

    const RunOut second = run(p, {"--prompt-cache", file});
    EXPECT_EQ(second.j["tokens"], none.j["tokens"]);
    EXPECT_EQ(second.j["prompt_cache"]["restored_tokens"], 39);
    EXPECT_EQ(second.j["prompt_cache"]["reused_tokens"], 39);
    EXPECT_EQ(second.j["prompt_cache"]["saved"], false);  // nothing new to save

    // a longer prompt resumes from the file and saves its own state
    const std::string longer = p + "," + ids(20, 2);
    const RunOut grown = run(longer, {"--prompt-cache", file});
    EXPECT_EQ(grown.j["tokens"], run(longer).j["tokens"]);
    EXPECT_EQ(grown.j["prompt_cache"]["reused_tokens"], 39);
    EXPECT_EQ(grown.j["prompt_cache"]["saved_tokens"], 59);

    // text output: the summary on stderr
    CliRun text = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", longer, "-n", "4", "--temp", "0", "--ignore-eos",
                          "--prompt-cache", file},
                         "TANDEM_LOG=off");
    EXPECT_EQ(text.status, 0) << text.err;
    EXPECT_TRUE(text.has("reused 59 of its 59 tokens")) << text.err;
}

TEST(CliPromptCache, a_refused_file_warns_and_the_run_still_generates) {
    const std::string dir = test::make_temp_dir("pcache-cli");
    const std::string file = dir + "/junk.bin";
    std::ofstream(file, std::ios::binary) << "this is not a state file, only some text";
    const std::string p = ids(20, 3);
    const RunOut none = run(p);
    const RunOut r = run(p, {"--prompt-cache", file, "--prompt-cache-ro"});
    EXPECT_EQ(r.j["tokens"], none.j["tokens"]);
    EXPECT_TRUE(r.raw.has("warning: prompt cache " + file + ": not a tandem state file (bad magic")) << r.raw.err;
    EXPECT_FALSE(r.j["prompt_cache"]["refused"].is_null());
    EXPECT_EQ(r.j["prompt_cache"]["saved"], false);  // read-only
    EXPECT_EQ(test::read_file(file), "this is not a state file, only some text");

    // read-write: the refused file is replaced by a good one
    const RunOut w = run(p, {"--prompt-cache", file});
    EXPECT_EQ(w.j["tokens"], none.j["tokens"]);
    EXPECT_EQ(w.j["prompt_cache"]["saved"], true);
    EXPECT_EQ(run(p, {"--prompt-cache", file}).j["prompt_cache"]["reused_tokens"], 19);

    // a cache for another KV type: refused, still generates the same tokens
    const RunOut f32 = run(p, {"--prompt-cache", file, "--prompt-cache-ro", "--kv-type", "f32"});
    EXPECT_TRUE(f32.raw.has("KV type f16, this run uses f32")) << f32.raw.err;
    EXPECT_EQ(f32.j["prompt_cache"]["reused_tokens"], 0);

    // a directory is neither read nor replaced
    const std::string sub = dir + "/a-directory";
    std::filesystem::create_directory(sub);
    const RunOut d = run(p, {"--prompt-cache", sub});
    EXPECT_EQ(d.j["tokens"], none.j["tokens"]);
    EXPECT_TRUE(d.raw.has("a directory, not a state file")) << d.raw.err;
    EXPECT_TRUE(std::filesystem::is_directory(sub));
}

TEST(CliPromptCache, read_only_never_creates_the_file) {
    const std::string file = test::make_temp_dir("pcache-cli") + "/never.bin";
    const RunOut r = run(ids(12, 4), {"--prompt-cache", file, "--prompt-cache-ro"});
    EXPECT_EQ(r.j["prompt_cache"]["saved"], false);
    EXPECT_FALSE(std::filesystem::exists(file));
    CliRun bad = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2,3", "-n", "1", "--prompt-cache-ro"},
                        "TANDEM_LOG=off");
    EXPECT_NE(bad.status, 0);
    EXPECT_TRUE(bad.has("--prompt-cache-ro needs --prompt-cache FILE")) << bad.err;
}

}  // namespace
}  // namespace tdm
