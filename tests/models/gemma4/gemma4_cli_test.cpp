// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_cli_test.cpp: Gemma 4 through the `tandem` binary: `run -m target
// -md assistant` recognises the assistant file and drafts with it (output identical to plain
// decoding, speculative statistics in the JSON), in both layouts, whether the tests wrote it or
// `tandem synth --arch gemma4-assistant` did (which refuses options that do not apply); an
// assistant passed as the model (-m) says to pass it with -md; `tandem plugins` lists the gemma4
// plugin with its architecture and draft head.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "cli/cli_run.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"

namespace tdm {
namespace {

namespace g4 = test::g4;

struct Files {
    std::string target, assistant;
};

Files write_pair_gemma4_cli(const char* preset, bool hf) {
    const std::string dir = test::make_temp_dir("gemma4-cli");
    const g4::Preset tp = g4::preset(preset);
    const g4::AssistantPreset ap = g4::assistant_preset(preset);
    const g4::Weights tw = g4::make_weights(tp, 41);
    const g4::AssistantWeights aw = g4::make_assistant_weights(ap, 42);
    if (hf) return {g4::write_hf(tp, tw, dir + "/target"), g4::write_assistant_hf(ap, aw, dir + "/assistant")};
    return {g4::write_gguf(tp, tw, dir + "/t.gguf"), g4::write_assistant_gguf(ap, aw, dir + "/a.gguf")};
}

nlohmann::json run_json(const std::vector<std::string>& extra, const Files& f) {
    std::vector<std::string> args = {"run", "-m", f.target, "--prompt-tokens", "2,300,17,5,900,44,81,3,3,600,12",
                                     "-n", "32", "--temp", "0", "--ignore-eos", "--output-format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, "TANDEM_LOG=off");
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
}

TEST(Gemma4Cli, run_with_an_assistant_file_drafts_with_it_and_prints_plain_decodings_tokens) {
    for (bool hf : {false, true}) {
        const Files f = write_pair_gemma4_cli(hf ? "tiny-31b" : "tiny-e2b", hf);
        const nlohmann::json plain = run_json({}, f);
        const nlohmann::json spec = run_json({"-md", f.assistant, "--draft-max", "3"}, f);
        ASSERT_TRUE(plain.contains("tokens") && spec.contains("tokens"));
        EXPECT_EQ(spec["tokens"], plain["tokens"]) << (hf ? "hf" : "gguf");
        ASSERT_TRUE(spec.contains("speculative")) << spec.dump();
        EXPECT_NE(spec["speculative"].dump().find("assistant"), std::string::npos) << spec["speculative"].dump();
    }
}

// The assistant is stateless (no KV of its own): a prompt cache holds nothing of it. Saving
// one crashed on the head's missing KV; the second run resumes the cached prompt and drafts.
TEST(Gemma4Cli, a_prompt_cache_with_the_assistant_drafting_saves_and_resumes) {
    const Files f = write_pair_gemma4_cli("tiny-e2b", false);
    const std::string cache = test::make_temp_dir("gemma4-cache") + "/prompt.bin";
    const nlohmann::json plain = run_json({}, f);
    for (int i = 0; i < 2; ++i) {
        const nlohmann::json spec = run_json({"-md", f.assistant, "--draft-max", "3", "--prompt-cache", cache}, f);
        ASSERT_TRUE(plain.contains("tokens") && spec.contains("tokens")) << "run " << i;
        EXPECT_EQ(spec["tokens"], plain["tokens"]) << "run " << i;
        EXPECT_TRUE(std::filesystem::exists(cache)) << "run " << i;
    }
}

TEST(Gemma4Cli, synth_writes_an_assistant_that_run_drafts_with_and_refuses_options_that_do_not_apply) {
    const std::string dir = test::make_temp_dir("gemma4-cli-synth");
    for (bool hf : {false, true}) {
        const std::string preset = hf ? "tiny-31b" : "tiny-e2b";
        const Files f = {dir + (hf ? "/target" : "/t.gguf"), dir + (hf ? "/assistant" : "/a.gguf")};
        std::vector<std::string> args = {"synth", "--preset", preset};
        if (hf) args.insert(args.end(), {"--format", "hf"});
        std::vector<std::string> t = args, a = args;
        t.insert(t.end(), {"--arch", "gemma4", "-o", f.target});
        a.insert(a.end(), {"--arch", "gemma4-assistant", "-o", f.assistant});
        CliRun r = tandem(t, "TANDEM_LOG=off");
        ASSERT_EQ(r.status, 0) << r.err;
        r = tandem(a, "TANDEM_LOG=off");
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_TRUE(r.has("wrote " + f.assistant + ": gemma4-assistant " + preset + ", 4 layers (S S S F)")) << r.err;
        const nlohmann::json plain = run_json({}, f);
        const nlohmann::json spec = run_json({"-md", f.assistant, "--draft-max", "3"}, f);
        ASSERT_TRUE(plain.contains("tokens") && spec.contains("tokens"));
        EXPECT_EQ(spec["tokens"], plain["tokens"]) << preset;
        ASSERT_TRUE(spec.contains("speculative")) << spec.dump();
        EXPECT_NE(spec["speculative"].dump().find("assistant"), std::string::npos) << spec["speculative"].dump();
        EXPECT_GT(spec["speculative"].value("drafted_tokens", 0), 0) << spec["speculative"].dump();
    }
    const std::string never = dir + "/never.gguf";
    const CliRun r = tandem({"synth", "--arch", "gemma4-assistant", "--layers", "2", "-o", never}, "TANDEM_LOG=off");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("--layers does not apply to gemma4-assistant")) << r.err;
    EXPECT_FALSE(std::filesystem::exists(never));
}

TEST(Gemma4Cli, an_assistant_given_as_the_model_says_to_pass_it_with_md) {
    const Files f = write_pair_gemma4_cli("tiny-31b", false);
    const CliRun r = tandem({"run", "-m", f.assistant, "--prompt-tokens", "2,3", "-n", "2"}, "TANDEM_LOG=off");
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("is a drafter, not a model")) << r.err;
    EXPECT_TRUE(r.has("-md")) << r.err;
}

TEST(Gemma4Cli, plugins_lists_gemma4_with_its_architecture_and_assistant_head) {
    const CliRun r = tandem({"plugins"}, "TANDEM_LOG=off");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("provides architecture gemma4")) << r.out;
    EXPECT_TRUE(r.has("provides draft head gemma4-assistant")) << r.out;
    EXPECT_TRUE(r.has("tandem-gemma4-synth.so")) << r.out;
}

}  // namespace
}  // namespace tdm
