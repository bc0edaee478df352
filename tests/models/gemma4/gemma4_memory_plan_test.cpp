// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_memory_plan_test.cpp: the memory check before loading counts an assistant
// given with -md (a file that holds a draft head alone) as the head's weights, not as a draft
// model it cannot load: a run that does not fit lists it among what it needs.
#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"

namespace tdm {
namespace {

namespace g4 = test::g4;

TEST(Gemma4MemoryPlan, an_assistant_given_with_md_is_counted_in_the_memory_check) {
    const std::string dir = test::make_temp_dir("gemma4-memory-plan");
    const g4::Preset tp = g4::preset("tiny-e2b");
    const g4::AssistantPreset ap = g4::assistant_preset("tiny-e2b");
    const std::string target = g4::write_gguf(tp, g4::make_weights(tp, 3), dir + "/t.gguf");
    const std::string assistant =
        g4::write_assistant_gguf(ap, g4::make_assistant_weights(ap, 4), dir + "/assistant.gguf");
    const CliRun r = tandem({"run", "-m", target, "-md", assistant, "--prompt-tokens", "2,3", "-n", "2",
                             "--memory-limit", "64KiB"},
                            "TANDEM_LOG=off");
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
    EXPECT_TRUE(r.has("weights of t.gguf")) << r.err;
    EXPECT_TRUE(r.has("weights of assistant.gguf")) << r.err;
}

}  // namespace
}  // namespace tdm
