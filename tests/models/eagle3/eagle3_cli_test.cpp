// SPDX-License-Identifier: Apache-2.0
// tests/models/eagle3/eagle3_cli_test.cpp: EAGLE-3 through the built `tandem`: `tandem synth
// --arch eagle3 --target FILE` writes a head shaped for the target in both layouts (the HF one
// with its own --draft-vocab), and `tandem run` drafts with it (a GGUF head found by its
// architecture with -md alone, an HF head by its config's "architectures" with -md alone or by
// --spec-type draft-eagle3 -md DIR, llama.cpp's spelling of eagle3), printing plain greedy
// decoding's tokens; the HF head passed as the model is refused as a drafter. Its step reads
// each draft's target id from the d2t table the host built at load (`--profile-json`), and
// builds that table itself, per step, on a host without tdm.weight_transforms.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const std::string kEagle3Env = "TANDEM_LOG=off";

nlohmann::json eagle3_run_json(const std::string& target, const std::vector<std::string>& extra,
                               const std::string& env = "") {
    std::vector<std::string> args = {"run", "-m", target, "--prompt-tokens", "2,300,17,5,90,44,81,3,3,60,12",
                                     "-n", "12", "--temp", "0", "--ignore-eos", "--output-format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, kEagle3Env + env);
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
}

TEST(Eagle3Cli, synth_writes_heads_for_a_target_that_run_drafts_with) {
    const std::string dir = test::make_temp_dir("eagle3-cli");
    const std::string target = dir + "/t.gguf", gguf = dir + "/head.gguf", hf = dir + "/head-hf";
    CliRun r = tandem({"synth", "--arch", "llama", "--layers", "4", "--type", "f16", "-o", target}, kEagle3Env);
    ASSERT_EQ(r.status, 0) << r.err;
    r = tandem({"synth", "--arch", "eagle3", "--target", target, "-o", gguf}, kEagle3Env);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("eagle3 head for " + target + " (n_embd 64, target layers 0,2,3)")) << r.err;
    // the HF head with a draft vocabulary of its own size (a published head's is about 32K)
    r = tandem({"synth", "--arch", "eagle3", "--target", target, "--format", "hf", "--draft-vocab", "96", "-o", hf},
               kEagle3Env);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("draft vocabulary 96 of 512")) << r.err;
    r = tandem({"synth", "--arch", "eagle3", "--target", target, "--draft-vocab", "98", "-o", dir + "/x.gguf"},
               kEagle3Env);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("--draft-vocab 98: the draft vocabulary is a multiple of 4")) << r.err;
    r = tandem({"synth", "--arch", "eagle3", "-o", dir + "/x.gguf"}, kEagle3Env);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("--target")) << r.err;

    const nlohmann::json plain = eagle3_run_json(target, {});
    ASSERT_TRUE(plain.contains("tokens"));
    // the GGUF by its architecture; the HF directory (model_type "llama") by the name in its
    // "architectures", or by its type in llama.cpp's spelling
    for (const std::vector<std::string>& how :
         {std::vector<std::string>{"-md", gguf}, std::vector<std::string>{"-md", hf},
          std::vector<std::string>{"--spec-type", "draft-eagle3", "-md", hf}}) {
        const nlohmann::json spec = eagle3_run_json(target, [&] {
            std::vector<std::string> a = how;
            a.insert(a.end(), {"--draft-max", "3"});
            return a;
        }());
        ASSERT_TRUE(spec.contains("tokens")) << spec.dump();
        EXPECT_EQ(spec["tokens"], plain["tokens"]) << how.back();
        ASSERT_TRUE(spec.contains("speculative")) << spec.dump();
        EXPECT_NE(spec["speculative"].dump().find("eagle3"), std::string::npos) << spec["speculative"].dump();
    }
    r = tandem({"run", "-m", hf, "-p", "hi", "-n", "2"}, kEagle3Env);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("'LlamaForCausalLMEagle3' is a drafter, not a model: pass it with -md")) << r.err;
}

// One EAGLE-3 round graph of a `--profile-json` file: its dispatches and the names of its nodes.
struct RoundProfile {
    size_t dispatches = 0;
    std::multiset<std::string> names;
};

// The largest round graph (a run with a node "fc": the head's first step) of the profile at
// `path`: a round of --draft-max steps, where the last rounds of a run may draft fewer.
RoundProfile largest_round(const std::string& path) {
    RoundProfile best;
    std::istringstream lines(test::read_file(path));
    for (std::string line; std::getline(lines, line);) {
        const auto run = nlohmann::json::parse(line, nullptr, false);
        if (run.is_discarded() || !run.contains("nodes")) continue;
        RoundProfile r;
        for (const auto& n : run["nodes"]) {
            r.dispatches += n["kernels"].size();
            r.names.insert(n.value("name", ""));
        }
        if (r.names.count("fc") && r.dispatches > best.dispatches) best = std::move(r);
    }
    return best;
}

// The step reads each draft's target id from the d2t table the host built at load
// (tdm.weight_transforms): one get_rows and the cast to i32. A host without the extension
// (TANDEM_HIDE_EXTENSIONS) makes the step build the table itself, per step: x - x of the
// logits for zeros, for the HF head's offsets the iota 0..Vd-1 by doubling (Vd = 96: 7 scalar
// adds and 7 concatenations of 2 copies each), the add of d2t, a select_rows and the cast:
// 25 dispatches (GGUF: 4) where 2 do. Both give plain greedy decoding's tokens.
TEST(Eagle3Cli, the_step_reads_target_ids_from_a_table_the_host_built_at_load) {
    const std::string dir = test::make_temp_dir("eagle3-d2t");
    const std::string target = dir + "/t.gguf", gguf = dir + "/head.gguf", hf = dir + "/head-hf";
    CliRun r = tandem({"synth", "--arch", "llama", "--layers", "4", "--type", "f16", "-o", target}, kEagle3Env);
    ASSERT_EQ(r.status, 0) << r.err;
    r = tandem({"synth", "--arch", "eagle3", "--target", target, "--draft-vocab", "96", "-o", gguf}, kEagle3Env);
    ASSERT_EQ(r.status, 0) << r.err;
    r = tandem({"synth", "--arch", "eagle3", "--target", target, "--format", "hf", "--draft-vocab", "96", "-o", hf},
               kEagle3Env);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json plain = eagle3_run_json(target, {});
    ASSERT_TRUE(plain.contains("tokens"));
    const std::string profile = dir + "/profile.jsonl";
    struct Case {
        const std::string& head;
        size_t step_saving;  // dispatches per step the table built at load saves
    };
    for (const Case& c : {Case{hf, 23}, Case{gguf, 2}}) {
        const std::vector<std::string> args = {"-md", c.head, "--draft-max", "3", "--spec-fixed", "--profile-json",
                                               profile};
        EXPECT_EQ(eagle3_run_json(target, args)["tokens"], plain["tokens"]) << c.head;
        const RoundProfile loaded = largest_round(profile);
        EXPECT_EQ(eagle3_run_json(target, args, " TANDEM_HIDE_EXTENSIONS=tdm.weight_transforms")["tokens"],
                  plain["tokens"])
            << c.head;
        const RoundProfile built = largest_round(profile);
        ASSERT_GT(loaded.dispatches, 0u) << "no round graph in " << profile;
        EXPECT_EQ(loaded.names.count("target_id_rows"), 3u) << c.head << ": one table read per step";
        EXPECT_EQ(built.names.count("target_id_rows"), 0u) << c.head;
        for (const char* per_step : {"d2t_zero", "target_ids", "iota", "iota_hi"})
            EXPECT_EQ(loaded.names.count(per_step), 0u) << c.head << ": " << per_step << " ran in a round";
        EXPECT_EQ(built.names.count("target_ids"), 3u) << c.head;
        EXPECT_EQ(built.names.count("iota_hi"), c.head == hf ? 21u : 0u) << c.head;
        EXPECT_EQ(built.dispatches - loaded.dispatches, 3 * c.step_saving) << c.head;
    }
}

}  // namespace
}  // namespace tdm
