// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_cli_test.cpp: DFlash through the built `tandem`: `tandem synth
// --arch dflash --target FILE [--format gguf]` writes a head shaped for the target (HF layout,
// or llama.cpp's GGUF), and `tandem run --spec-type dflash -md DIR` drafts with it, printing
// plain greedy decoding's tokens; a GGUF head's architecture, or the DFlashDraftModel an HF
// head's config names, selects it (`-md FILE` alone).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const std::string kDflashEnv = "TANDEM_LOG=off";

nlohmann::json dflash_run_json(const std::string& target, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "-m", target, "--prompt-tokens", "2,300,17,5,90,44,81,3,3,60,12",
                                     "-n", "12", "--temp", "0", "--ignore-eos", "--output-format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, kDflashEnv);
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
}

TEST(DflashCli, synth_writes_a_head_for_a_target_that_run_drafts_with) {
    const std::string dir = test::make_temp_dir("dflash-cli");
    const std::string target = dir + "/t.gguf", head = dir + "/head";
    CliRun r = tandem({"synth", "--arch", "qwen3", "--layers", "5", "--type", "f16", "-o", target}, kDflashEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    r = tandem({"synth", "--arch", "dflash", "--target", target, "--block-size", "6", "-o", head}, kDflashEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("dflash head for " + target + " (2 layers, n_embd 64, target layers 1,2, block 6")) << r.err;
    r = tandem({"synth", "--arch", "dflash", "-o", dir + "/x"}, kDflashEnv);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("--target")) << r.err;

    const nlohmann::json plain = dflash_run_json(target, {});
    ASSERT_TRUE(plain.contains("tokens"));
    const nlohmann::json spec = dflash_run_json(target, {"--spec-type", "dflash", "-md", head, "--draft-max", "5"});
    ASSERT_TRUE(spec.contains("tokens")) << spec.dump();
    EXPECT_EQ(spec["tokens"], plain["tokens"]);
    ASSERT_TRUE(spec.contains("speculative")) << spec.dump();
    EXPECT_NE(spec["speculative"].dump().find("dflash"), std::string::npos) << spec["speculative"].dump();
    // llama.cpp's spelling of the type selects the same head
    const nlohmann::json spelled = dflash_run_json(target, {"--spec-type", "draft-dflash", "-md", head, "--draft-max", "5"});
    EXPECT_EQ(spelled["tokens"], plain["tokens"]) << spelled.dump();
    // the HF directory alone: its config's "architectures" names DFlashDraftModel
    const nlohmann::json by_name = dflash_run_json(target, {"-md", head, "--draft-max", "5"});
    EXPECT_EQ(by_name["tokens"], plain["tokens"]) << by_name.dump();
    EXPECT_NE(by_name["speculative"].dump().find("dflash"), std::string::npos) << by_name.dump();

    r = tandem({"synth", "--arch", "dflash", "--target", target, "--format", "gguf", "--type", "f16", "-o",
                dir + "/head.gguf"},
               kDflashEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json from_gguf = dflash_run_json(target, {"-md", dir + "/head.gguf", "--draft-max", "5"});
    EXPECT_EQ(from_gguf["tokens"], plain["tokens"]) << from_gguf.dump();
    EXPECT_NE(from_gguf["speculative"].dump().find("dflash"), std::string::npos) << from_gguf.dump();
}

}  // namespace
}  // namespace tdm
