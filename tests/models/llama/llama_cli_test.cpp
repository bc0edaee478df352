// SPDX-License-Identifier: Apache-2.0
// tests/models/llama/llama_cli_test.cpp: Llama through the built `tandem`: `tandem plugins`
// lists the plugin and its synthesizer, `tandem synth --arch llama` writes both layouts, `tandem
// info` names the RoPE pairing each gets, and `tandem run` generates the same tokens from the
// GGUF and the HF copy of one model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const std::string kLlamaEnv = "TANDEM_LOG=off";

std::string llama_synth_cli(const std::vector<std::string>& extra, const std::string& name) {
    const std::string path = test::make_temp_dir("llamacli") + "/" + name;
    std::vector<std::string> args = {"synth", "--arch", "llama", "-o", path};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, kLlamaEnv);
    EXPECT_EQ(r.status, 0) << r.err;
    return path;
}

TEST(LlamaCli, plugins_lists_the_plugin_and_its_synthesizer) {
    const CliRun r = tandem({"plugins", "--output-format", "json"}, kLlamaEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    bool found = false;
    for (const auto& p : j["plugins"]) {
        if (p["name"] != "llama") continue;
        found = true;
        EXPECT_EQ(p["synthesizer"]["archs"], nlohmann::json({"llama"})) << p.dump();
    }
    EXPECT_TRUE(found) << r.out;
}

TEST(LlamaCli, both_layouts_of_one_model_run_to_the_same_tokens) {
    const std::string gguf = llama_synth_cli({"--type", "f16"}, "m.gguf");
    const std::string hf = llama_synth_cli({"--type", "f16", "--format", "hf"}, "hf");
    const CliRun a = tandem({"info", gguf}, kLlamaEnv);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_TRUE(a.has("rope = adjacent, rope_freqs")) << a.out;
    const CliRun b = tandem({"info", hf}, kLlamaEnv);
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_TRUE(b.has("rope = neox, llama3 scaling")) << b.out;
    std::vector<nlohmann::json> tokens;
    for (const std::string& model : {gguf, hf}) {
        const CliRun r = tandem({"run", "-m", model, "-p", "Hello there", "-n", "16", "--temp", "0", "--ignore-eos",
                                 "--output-format", "json"},
                                kLlamaEnv);
        ASSERT_EQ(r.status, 0) << r.err;
        tokens.push_back(nlohmann::json::parse(r.out)["tokens"]);
    }
    EXPECT_EQ(tokens[0], tokens[1]);
    EXPECT_EQ(tokens[0].size(), 16u);
}

}  // namespace
}  // namespace tdm
