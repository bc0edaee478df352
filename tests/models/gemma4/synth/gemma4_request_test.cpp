// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/synth/gemma4_request_test.cpp: the gemma4 synthesizer's requests
// (plugins/gemma4/synth/gemma4_request.h), called directly, for targets and assistants: options as
// text give the same file as the synth functions with the equivalent options; bad and refused
// options fail naming the option, before anything is written.
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "gemma4/synth/gemma4_assistant.h"
#include "gemma4/synth/gemma4_request.h"
#include "gemma4/synth/gemma4_synth.h"
#include "support/fixtures.h"

#include <filesystem>

using namespace tdm;
using namespace tdm::synth;
using tdm::test::fails_with;

namespace {

std::string out_path(const std::string& name) {
    static const std::string dir = test::make_temp_dir("gemma4-request");
    return dir + "/" + name;
}

}  // namespace

TEST(Gemma4Request, options_as_text_give_the_file_of_the_equivalent_synth_options) {
    const std::string a = out_path("req.gguf"), b = out_path("lib.gguf");
    auto summary = synthesize_gemma4_request("gemma4", a, {{"preset", "tiny-26b"}, {"type", "q4_0"}, {"seed", "9"}});
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    EXPECT_EQ(*summary, "wrote " + a + ": gemma4 tiny-26b, 6 layers (S S S S S F), n_embd 64, vocab 1024, q4_0");
    Gemma4SynthOptions o;
    o.weight_type = DType::Q4_0;
    o.seed = 9;
    ASSERT_TRUE(synth_gemma4_gguf(b, *gemma4_preset("tiny-26b"), o).ok());
    EXPECT_EQ(test::read_file(a), test::read_file(b));
}

TEST(Gemma4Request, defaults_are_tiny_e2b_q8_0_gguf_and_bf16_hf) {
    const std::string a = out_path("default.gguf"), b = out_path("default-lib.gguf");
    auto summary = synthesize_gemma4_request("gemma4", a, {});
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    EXPECT_NE(summary->find("gemma4 tiny-e2b, 5 layers (S S F S F)"), std::string::npos) << *summary;
    Gemma4SynthOptions o;
    o.weight_type = DType::Q8_0;
    ASSERT_TRUE(synth_gemma4_gguf(b, *gemma4_preset("tiny-e2b"), o).ok());
    EXPECT_EQ(test::read_file(a), test::read_file(b));

    const std::string dir = out_path("default-hf");
    auto hf = synthesize_gemma4_request("gemma4", dir, {{"format", "hf"}});
    ASSERT_TRUE(hf.ok()) << hf.error().message();
    EXPECT_NE(hf->find(", bf16"), std::string::npos) << *hf;
    EXPECT_NE(test::read_file(dir + "/config.json").find("\"torch_dtype\": \"bfloat16\""), std::string::npos);
}

TEST(Gemma4Request, bad_options_are_refused_naming_them) {
    const std::string path = out_path("never.gguf");
    using Opts = std::vector<std::pair<std::string, std::string>>;
    const std::pair<Opts, const char*> cases[] = {
        {{{"colour", "red"}}, "has no option --colour"},
        {{{"tied", "true"}}, "--tied does not apply to gemma4"},
        {{{"layers", "2"}}, "--layers does not apply to gemma4"},
        {{{"repeating", "true"}}, "--repeating does not apply to gemma4"},
        {{{"mtp", "true"}}, "--mtp does not apply to gemma4"},
        {{{"seed", "1"}, {"seed", "2"}}, "--seed is given twice"},
        {{{"seed", "x1"}}, "--seed: 'x1' is not an integer"},
        {{{"type", "q3_K"}}, "unknown type 'q3_K'"},
        {{{"format", "onnx"}}, "unknown format 'onnx'"},
        {{{"preset", "huge"}}, "unknown gemma4 preset 'huge'"},
        {{{"format", "hf"}, {"type", "q8_0"}}, "F32, F16 or BF16"},
    };
    for (const auto& [opts, needle] : cases) EXPECT_TRUE(fails_with(synthesize_gemma4_request("gemma4", path, opts), needle));
    EXPECT_TRUE(fails_with(synthesize_gemma4_request("qwen3", path, {}), "unknown architecture 'qwen3'"));
    EXPECT_TRUE(fails_with(synthesize_gemma4_request("gemma4", "", {}), "no output path"));
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Gemma4Request, the_assistant_defaults_to_tiny_e2b_bf16_and_is_the_file_of_the_synth_functions) {
    const std::string a = out_path("assistant.gguf"), b = out_path("assistant-lib.gguf");
    auto summary = synthesize_gemma4_request("gemma4-assistant", a, {});
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    EXPECT_EQ(*summary, "wrote " + a + ": gemma4-assistant tiny-e2b, 4 layers (S S S F), n_embd 32 for a target of "
                                       "n_embd 64, vocab 1024, centroid-masked head (32 clusters, top 4), bf16");
    Gemma4SynthOptions o;
    o.weight_type = DType::BF16;
    ASSERT_TRUE(synth_gemma4_assistant_gguf(b, *gemma4_assistant_preset("tiny-e2b"), o).ok());
    EXPECT_EQ(test::read_file(a), test::read_file(b));

    const std::string dir = out_path("assistant-hf");
    auto hf = synthesize_gemma4_request("gemma4-assistant", dir,
                                        {{"preset", "tiny-26b"}, {"format", "hf"}, {"type", "f16"}, {"seed", "3"}});
    ASSERT_TRUE(hf.ok()) << hf.error().message();
    EXPECT_NE(hf->find("gemma4-assistant tiny-26b, 4 layers (S S S F), n_embd 32 for a target of n_embd 64, vocab "
                       "1024, full tied head, f16"),
              std::string::npos)
        << *hf;
    const std::string lib = out_path("assistant-hf-lib");
    o.weight_type = DType::F16;
    o.seed = 3;
    ASSERT_TRUE(synth_gemma4_assistant_hf(lib, *gemma4_assistant_preset("tiny-26b"), o).ok());
    for (const char* f : {"config.json", "model.safetensors"})
        EXPECT_EQ(test::read_file(dir + "/" + f), test::read_file(lib + "/" + f)) << f;
}

TEST(Gemma4Request, options_that_do_not_apply_to_the_assistant_are_refused_naming_them) {
    const std::string path = out_path("never-assistant.gguf");
    using Opts = std::vector<std::pair<std::string, std::string>>;
    const std::pair<Opts, const char*> cases[] = {
        {{{"mtp", "true"}}, "--mtp does not apply to gemma4-assistant: the assistant is itself the drafter"},
        {{{"layers", "2"}}, "--layers does not apply to gemma4-assistant"},
        {{{"tied", "false"}}, "--tied does not apply to gemma4-assistant"},
        {{{"repeating", "true"}}, "--repeating does not apply to gemma4-assistant"},
        {{{"draft-of-seed", "3"}}, "--draft-of-seed does not apply to gemma4-assistant"},
        {{{"residual-decay", "0.5"}}, "--residual-decay does not apply to gemma4-assistant"},
        {{{"colour", "red"}}, "has no option --colour"},
        {{{"preset", "huge"}}, "unknown gemma4-assistant preset 'huge'"},
        {{{"type", "q3_K"}}, "unknown type 'q3_K'"},
        {{{"format", "hf"}, {"type", "q4_0"}}, "F32, F16 or BF16"},
    };
    for (const auto& [opts, needle] : cases)
        EXPECT_TRUE(fails_with(synthesize_gemma4_request("gemma4-assistant", path, opts), needle)) << needle;
    EXPECT_FALSE(std::filesystem::exists(path));
}
