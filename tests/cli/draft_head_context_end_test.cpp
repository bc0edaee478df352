// SPDX-License-Identifier: Apache-2.0
// tests/cli/draft_head_context_end_test.cpp: draft heads whose rounds need KV room past the
// draft itself keep drafting up to the end of the context: a block head (DFlash: a block of
// b rows at p .. p + b - 1) and a head growing trees with a KV of its own (GLM's MTP head:
// an entry per expanded node from p - 1 on). `tandem run -c 32` generates to the context's
// end; the output equals plain greedy decoding's, the head is never turned off, and the
// trace has drafting rounds within a few positions of the end. One prompt per head: the
// test is about the reservations near n_ctx, the heads' exactness is their own tests'.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "cli/cli_run.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const std::string kEndEnv = "TANDEM_LOG=off";
constexpr uint32_t kContext = 32;  // two KV blocks of 16

nlohmann::json run_to_the_end(const std::string& model, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "-m", model, "--prompt-tokens", "2,300,17,5,90,44,81,3,3,60,12", "-c",
                                     std::to_string(kContext), "-n", "64", "--temp", "0", "--ignore-eos",
                                     "--output-format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, kEndEnv);
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
}

// The position of the last round of the trace that drafted something.
uint32_t last_drafting_round(const std::string& trace) {
    std::ifstream in(trace);
    uint32_t last = 0;
    for (std::string line; std::getline(in, line);) {
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("drafted")) continue;
        const auto& d = j["drafted"];
        if ((d.is_array() && !d.empty()) || (d.is_number() && d.get<int>() > 0)) last = j.value("pos", 0u);
    }
    return last;
}

// The speculative statistics of the run with the head.
nlohmann::json expect_drafting_to_the_end(const std::string& model, const std::vector<std::string>& head_args,
                                          uint32_t last_round_at_least) {
    const nlohmann::json plain = run_to_the_end(model, {});
    EXPECT_TRUE(plain.contains("tokens")) << plain.dump();
    if (!plain.contains("tokens")) return {};
    EXPECT_GT(plain["tokens"].size(), 16u);
    const std::string trace = test::make_temp_dir("context-end") + "/trace.jsonl";
    std::vector<std::string> args = head_args;
    args.insert(args.end(), {"--spec-fixed", "--spec-trace", trace});
    const nlohmann::json spec = run_to_the_end(model, args);
    EXPECT_EQ(spec.value("tokens", nlohmann::json()), plain["tokens"]);
    EXPECT_TRUE(spec.contains("speculative")) << spec.dump();
    if (!spec.contains("speculative")) return {};
    for (const auto& d : spec["speculative"]["drafters"])
        EXPECT_EQ(d.value("failure", ""), "") << d.dump();
    EXPECT_GE(last_drafting_round(trace), last_round_at_least);
    return spec["speculative"];
}

TEST(DraftHeadContextEnd, a_block_head_drafts_to_the_end_of_the_context_and_equals_plain_decoding) {
    const std::string dir = test::make_temp_dir("context-end-dflash");
    const std::string target = dir + "/t.gguf", head = dir + "/head";
    CliRun r = tandem({"synth", "--arch", "qwen3", "--layers", "5", "--type", "f16", "-o", target}, kEndEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    r = tandem({"synth", "--arch", "dflash", "--target", target, "--block-size", "6", "-o", head}, kEndEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    // one draft a round: rounds advance by at most 2, and a verify may draft while
    // pos <= n_ctx - 3, so some round at n_ctx - 4 or later drafts (its block reaching
    // past n_ctx was refused before the head's KV had room for it)
    expect_drafting_to_the_end(target, {"--spec-type", "dflash", "-md", head, "--draft-max", "1"}, kContext - 4);
}

TEST(DraftHeadContextEnd, a_head_growing_trees_drafts_shorter_trees_near_the_end_and_equals_plain_decoding) {
    const std::string dir = test::make_temp_dir("context-end-tree");
    const std::string model = dir + "/glm.gguf";  // with its MTP layer
    CliRun r = tandem({"synth", "--arch", "glm4", "-o", model}, kEndEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    // trees of up to 1 + 3 * 3 = 10 KV entries from p - 1 on: refused from p = 24 before;
    // rounds advance by at most 4 and draft while pos <= n_ctx - 3
    const nlohmann::json spec = expect_drafting_to_the_end(
        model, {"--spec-type", "mtp", "--draft-tree", "4,3,8", "--draft-max", "3"}, kContext - 6);
    ASSERT_TRUE(spec.contains("trees")) << spec.dump();
    EXPECT_GT(spec["trees"].value("rounds", 0), 0) << spec.dump();
}

}  // namespace
}  // namespace tdm
