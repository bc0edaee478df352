// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/synth/synth_request_test.cpp: the qwen-nextn synthesizer's requests
// (plugins/qwen-nextn/synth/synth_request.h), called directly: options as text give the same file
// as the synth functions with the equivalent options; every bad option is refused with a message
// naming it, before anything is written. (Through the C interface and the CLI:
// tests/cli/synth_cli_test.cpp.)
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "qwen-nextn/synth/synth_request.h"
#include "support/fixtures.h"

#include <filesystem>

using namespace tdm;
using namespace tdm::synth;
using tdm::test::fails_with;

namespace {

std::string out_path(const std::string& name) {
    static const std::string dir = test::make_temp_dir("synth-request");
    return dir + "/" + name;
}

TEST(SynthRequest, options_as_text_give_the_file_of_the_equivalent_synth_options) {
    // a qwen3 draft: every option that changes the values
    const std::string a = out_path("req-draft.gguf"), b = out_path("lib-draft.gguf");
    auto summary = synthesize_request({"qwen3", a,
                                       {{"preset", "small"},
                                        {"layers", "2"},
                                        {"type", "q4_0"},
                                        {"seed", "7"},
                                        {"draft-of-seed", "3"},
                                        {"perturbation", "0.05"},
                                        {"residual-decay", "0.5"},
                                        {"tied", "true"}}});
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    EXPECT_EQ(*summary, "wrote " + a + ": qwen3 small, 2 layers, n_embd 256, vocab 4096, q4_0");
    Qwen3Shape shape = *qwen3_preset("small");
    Qwen3SynthOptions target;
    target.weight_type = DType::Q4_0;
    target.seed = 3;
    target.residual_decay = 0.5f;
    target.tied = true;
    ASSERT_TRUE(synth_qwen3_gguf(b, *qwen3_draft_shape(shape, 2), qwen3_draft_options(target, 0.05f, 7)).ok());
    EXPECT_EQ(test::read_file(a), test::read_file(b));

    // a repeating qwen35moe without its MTP head
    const std::string c = out_path("req-moe.gguf"), d = out_path("lib-moe.gguf");
    summary = synthesize_request(
        {"qwen35moe", c, {{"repeating", "true"}, {"repeat-period", "3"}, {"mtp", "false"}, {"type", "f16"}}});
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    EXPECT_EQ(summary->find("wrote " + c + ": qwen35moe tiny-moe, "), 0u) << *summary;
    EXPECT_EQ(summary->find("with MTP head"), std::string::npos) << *summary;
    Qwen35SynthOptions o;
    o.weight_type = DType::F16;
    o.repeating = true;
    o.repeat_period = 3;
    o.mtp = false;
    ASSERT_TRUE(synth_qwen35_gguf(d, *qwen35_preset("tiny-moe"), o).ok());
    EXPECT_EQ(test::read_file(c), test::read_file(d));
}

TEST(SynthRequest, bad_options_are_refused_by_name_and_nothing_is_written) {
    const std::string p = out_path("bad.gguf");
    struct Case {
        const char* arch;
        std::vector<std::pair<std::string, std::string>> options;
        const char* expect;
    };
    const std::vector<Case> cases = {
        {"qwen3", {{"bogus", "1"}}, "synth: the qwen-nextn synthesizer has no option --bogus"},
        {"qwen3", {{"layers", "2"}, {"layers", "3"}}, "synth: --layers is given twice"},
        {"qwen3", {{"layers", "2x"}}, "synth: --layers: '2x' is not an integer"},
        {"qwen3", {{"seed", ""}}, "synth: --seed: '' is not an integer"},
        {"qwen3", {{"perturbation", "nan"}}, "synth: --perturbation: 'nan' is not a number"},
        {"qwen3", {{"tied", "yes"}}, "synth: --tied: 'yes' is not a boolean (true or false)"},
        {"qwen3", {{"type", "q4_1"}}, "synth: unknown type 'q4_1'"},
        {"qwen3", {{"repeat-period", "3"}}, "synth: --repeat-period needs --repeating"},
        {"qwen3", {{"repeating", "true"}, {"repeat-period", "0"}}, "synth: --repeat-period must be in 1..1048576"},
        {"qwen3", {{"mtp", "true"}}, "synth: --mtp is for qwen35 and qwen35moe"},
        {"qwen3", {{"layers", "1025"}}, "synth: --layers must be in 1..1024"},
        {"qwen3", {{"format", "onnx"}}, "synth: unknown format 'onnx' (gguf, hf)"},
        {"qwen3", {{"residual-decay", "1.5"}}, "residual_decay must be in (0, 1]"},
        {"qwen35", {{"draft-of-seed", "2"}}, "synth: --draft-of-seed is for qwen3"},
        {"qwen35", {{"residual-decay", "0.5"}}, "synth: --residual-decay is for qwen3"},
        {"qwen35", {{"preset", "tiny-moe"}}, "synth: preset 'tiny-moe' is qwen35moe, not qwen35"},
        {"qwen35moe", {{"preset", "0.8b"}}, "synth: preset '0.8b' is qwen35, not qwen35moe"},
        {"llama", {}, "synth: unknown architecture 'llama' (available: qwen3, qwen35, qwen35moe)"},
    };
    for (const Case& c : cases) {
        EXPECT_TRUE(fails_with(synthesize_request({c.arch, p, c.options}), c.expect)) << c.expect;
        EXPECT_FALSE(std::filesystem::exists(p)) << c.expect;
    }
    EXPECT_TRUE(fails_with(synthesize_request({"qwen3", "", {}}), "synth: no output path"));
}

}  // namespace
