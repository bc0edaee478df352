// SPDX-License-Identifier: Apache-2.0
// tests/models/ngram/ngram_cli_test.cpp: the ngram drafters from the `tandem`
// executable: `tandem plugins` lists them, every --spec-type runs and prints
// llama.cpp's statistics line under llama.cpp's name, a chain from a TOML
// [speculative] table prints one line per drafter, -lcs creates the cache file,
// `run --draft-tree` with ngram-simple's branches prints plain greedy output, and bad input (a corrupt cache file, an invalid size) exits with a message.
//
// To add a case: call tandem({...}) and check the exit status and a substring.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

struct CliRun {
    int status = -1;  // exit code; 128+N for signal N
    std::string out, err;
    bool has(const std::string& s) const { return out.find(s) != std::string::npos || err.find(s) != std::string::npos; }
};

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

const std::string& work_dir() {
    static const std::string dir = test::make_temp_dir("ngram-cli");
    return dir;
}

CliRun tandem(const std::vector<std::string>& args) {
    const std::string out = work_dir() + "/out", err = work_dir() + "/err";
    // TANDEM_PLUGIN_PATH cleared: the build tree's plugins are the ones under test
    std::string cmd = "TANDEM_PLUGIN_PATH= " + quote(TANDEM_BIN);
    for (const auto& a : args) cmd += " " + quote(a);
    cmd += " >" + out + " 2>" + err;
    CliRun r;
    const int st = std::system(cmd.c_str());
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = test::read_file(out);
    r.err = test::read_file(err);
    return r;
}

// A tiny model whose greedy output cycles with period 5 (ids 300..304 form one cycle).
const std::string& repeating_model() {
    static const std::string path = [] {
        const std::string p = work_dir() + "/repeating.gguf";
        auto shape = synth::qwen3_preset("tiny");
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.repeating = true;
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

std::vector<std::string> run_args(const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"run", "-m", repeating_model(), "--prompt-tokens", "300,301,302,303,304,300,301,302",
                                  "-n", "32", "--temp", "0", "--ignore-eos", "--spec-ngram-size-n", "3",
                                  "--spec-ngram-size-m", "8", "--draft-max", "8"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

TEST(NgramCli, plugins_lists_the_five_drafters_and_their_spec_types) {
    const CliRun r = tandem({"plugins"});
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* s : {"drafter ngram_simple", "drafter ngram_map_k", "drafter ngram_map_k4v", "drafter ngram_mod",
                          "drafter ngram_cache", "ngram-simple, ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache"})
        EXPECT_TRUE(r.has(s)) << s << "\n" << r.out;
}

TEST(NgramCli, every_spec_type_runs_and_prints_llama_cpp_statistics) {
    const std::vector<std::pair<std::string, std::string>> types = {{"ngram-simple", "ngram_simple"},
                                                                    {"ngram-map-k", "ngram_map_k"},
                                                                    {"ngram-map-k4v", "ngram_map_k4v"},
                                                                    {"ngram-mod", "ngram_mod"},
                                                                    {"ngram-cache", "ngram_cache"}};
    for (const auto& [type, name] : types) {
        const CliRun r = tandem(run_args({"--spec-type", type}));
        ASSERT_EQ(r.status, 0) << type << ": " << r.err;
        EXPECT_TRUE(r.has("statistics " + name + ": #calls(b,g,a) = 1 ")) << type << "\n" << r.err;
        EXPECT_TRUE(r.has("#gen drafts = ")) << r.err;
        EXPECT_TRUE(r.has("dur(b,g,a) = ")) << r.err;
        EXPECT_FALSE(r.has("#acc tokens = 0,")) << type << ": nothing accepted on a repeating model\n" << r.err;
    }
}

TEST(NgramCli, a_chain_from_the_toml_config_prints_one_line_per_drafter_and_writes_the_cache_file) {
    const std::string cache = work_dir() + "/lookup.bin";
    const std::string cfg = work_dir() + "/tandem.toml";
    std::ofstream(cfg) << "[speculative]\ntype = \"ngram-cache,ngram-simple\"\ndraft_max = 6\nngram_size_n = 3\n"
                          "ngram_size_m = 8\nngram_cache = \""
                       << cache << "\"\n";
    std::vector<std::string> args = {"--config", cfg, "run", "-m", repeating_model(), "--prompt-tokens",
                                     "17,99,300", "-n", "32", "--temp", "0", "--ignore-eos"};
    CliRun r = tandem(args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("statistics ngram_cache: #calls(b,g,a) = 1 ")) << r.err;
    EXPECT_TRUE(r.has("statistics ngram_simple: #calls(b,g,a) = 1 ")) << r.err;
    ASSERT_TRUE(std::filesystem::exists(cache));
    // the command line overrides the file: a list of one
    args.insert(args.end(), {"--spec-type", "ngram-mod"});
    r = tandem(args);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("statistics ngram_mod: ")) << r.err;
    EXPECT_FALSE(r.has("statistics ngram_cache: ")) << r.err;
}

// Prompts whose tokens are followed by different tokens at different places: ngram-simple
// finds several continuations of its key and grows trees (docs/SPECULATIVE.md, "Trees").
TEST(NgramCli, run_with_ngram_trees_prints_plain_greedy_output_and_the_tree_statistics) {
    const auto args = [](const char* prompt, const std::vector<std::string>& extra) {
        std::vector<std::string> a = {"run", "-m", repeating_model(), "--prompt-tokens", prompt, "-n", "24",
                                      "--temp", "0", "--ignore-eos"};
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    const std::vector<std::string> trees = {"--spec-type", "ngram-simple", "--spec-ngram-size-n", "1",
                                            "--spec-ngram-size-m", "6", "--draft-max", "11", "--draft-tree", "4,3,12"};
    // the output cycles 300..304; the token each round ends on (301 or 300 here) is followed
    // in the prompt by two different tokens, the wrong one most recently in the first prompt
    for (const char* prompt : {"301,302,303,304,300,301,307,300", "301,305,303,309,301,302,303,304,300",
                               "300,306,304,300,301,302,303,304"}) {
        const CliRun plain = tandem(args(prompt, {}));
        ASSERT_EQ(plain.status, 0) << plain.err;
        std::vector<std::string> forced = trees;
        forced.push_back("--spec-fixed");  // fixed k: trees wherever a round can verify one
        const CliRun tree = tandem(args(prompt, forced));
        ASSERT_EQ(tree.status, 0) << tree.err;
        EXPECT_EQ(tree.out, plain.out) << prompt;
        EXPECT_TRUE(tree.has("trees: ")) << prompt << "\n" << tree.err;
    }
    // the goodput controller: on a CPU device every round chooses the chain (a GPU's first
    // rounds try both)
    const CliRun chosen = tandem(args("301,302,303,304,300,301,307,300", trees));
    ASSERT_EQ(chosen.status, 0) << chosen.err;
    EXPECT_TRUE(chosen.has("chain rounds chosen instead")) << chosen.err;
}

TEST(NgramCli, a_corrupt_cache_file_and_an_invalid_size_exit_with_a_clear_error) {
    const std::string bad = work_dir() + "/corrupt.bin";
    std::ofstream(bad) << "not a cache";
    CliRun r = tandem(run_args({"--spec-type", "ngram-cache", "-lcs", bad}));
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has(bad + ": not an n-gram cache file")) << r.err;
    // a usage error now: the option's range is checked as it is parsed
    r = tandem(run_args({"--spec-type", "ngram-map-k", "--spec-ngram-min-hits", "0"}));
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.has("--spec-ngram-min-hits: 0 is out of range")) << r.err;
}

}  // namespace
}  // namespace tdm
