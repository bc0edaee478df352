// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_assistant_config_test.cpp: an HF assistant whose config.json gives head
// dims in the newer per_layer_config form (per_layer_config.N.head_dim, no global_head_dim)
// drafts exactly like the same assistant in the global_head_dim form; one whose layers of one
// type disagree on the head dim is refused, naming the layer and both dims.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"

namespace tdm {
namespace {

namespace g4 = test::g4;

struct Pair {
    std::string target, assistant;
};

// tiny-e2b's target and assistant as HF directories; the assistant's config rewritten to the
// per_layer_config form, with `sliding_dim_of_layer_1` as layer 1's head dim (0: the real one)
Pair write_pair(int64_t sliding_dim_of_layer_1 = 0) {
    const std::string dir = test::make_temp_dir("gemma4-asst-config");
    const g4::Preset tp = g4::preset("tiny-e2b");
    const g4::AssistantPreset ap = g4::assistant_preset("tiny-e2b");
    Pair p{g4::write_hf(tp, g4::make_weights(tp, 41), dir + "/target"),
           g4::write_assistant_hf(ap, g4::make_assistant_weights(ap, 42), dir + "/assistant")};
    std::ifstream in(p.assistant + "/config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    in.close();
    nlohmann::json& text = cfg["text_config"];
    const int64_t swa = text["head_dim"], full = text["global_head_dim"];
    text.erase("global_head_dim");
    nlohmann::json plc = nlohmann::json::object();
    for (size_t il = 0; il < text["layer_types"].size(); ++il) {
        const bool sliding = text["layer_types"][il] == "sliding_attention";
        int64_t d = sliding ? swa : full;
        if (il == 1 && sliding_dim_of_layer_1) d = sliding_dim_of_layer_1;
        plc[std::to_string(il)] = {{"head_dim", d}};
    }
    text["per_layer_config"] = plc;
    std::ofstream(p.assistant + "/config.json") << cfg.dump(2);
    return p;
}

CliRun run(const Pair& p, bool with_assistant) {
    std::vector<std::string> args = {"run", "-m", p.target, "--prompt-tokens", "2,300,17,5,900,44,81,3", "-n", "24",
                                     "--temp", "0", "--ignore-eos", "--output-format", "json"};
    if (with_assistant) args.insert(args.end(), {"-md", p.assistant, "--draft-max", "3"});
    return tandem(args, "TANDEM_LOG=off");
}

TEST(Gemma4AssistantConfig, the_per_layer_config_form_drafts_exactly) {
    const Pair p = write_pair();
    const CliRun plain = run(p, false), spec = run(p, true);
    ASSERT_EQ(plain.status, 0) << plain.err;
    ASSERT_EQ(spec.status, 0) << spec.err;
    const auto a = nlohmann::json::parse(plain.out), b = nlohmann::json::parse(spec.out);
    EXPECT_EQ(b["tokens"], a["tokens"]);
    EXPECT_NE(b["speculative"].dump().find("assistant"), std::string::npos) << b.dump();
}

TEST(Gemma4AssistantConfig, layers_of_one_type_with_different_head_dims_are_refused) {
    const Pair p = write_pair(16);  // tiny-e2b's assistant: S S S F; layer 1 says 16, layer 0 said 32
    const CliRun r = run(p, true);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("gemma4-assistant: sliding layer 1 has head dim 16, an earlier one 32")) << r.err;
}

}  // namespace
}  // namespace tdm
