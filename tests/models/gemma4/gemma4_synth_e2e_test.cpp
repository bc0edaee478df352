// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_synth_e2e_test.cpp: the gemma4 plugin on models written by the gemma4
// synthesizer (plugins/gemma4/synth), a second, independent writer of the two layouts, in the
// quantized types llama.cpp's files use (Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q6_K with the per-row
// fallbacks) and BF16 HF directories: every prompt position's logits against the reference,
// and the tokenizer and chat template the synthesizer writes, through the model.
//
// To add a case: add a SynthCase.
#include <gtest/gtest.h>

#include "engine/generate.h"
#include "gemma4/synth/gemma4_synth.h"
#include "gemma4_tiny_runtime.h"
#include "support/device_fixture.h"
#include "support/prefill.h"
#include "support/fixtures.h"
#include "support/gemma4_reference.h"

namespace tdm {
namespace {


struct SynthCase {
    const char* name;
    const char* preset;
    DType type;
    bool hf;
};

class Gemma4SynthEndToEnd : public test::DeviceTest, public ::testing::WithParamInterface<SynthCase> {};

TEST_P(Gemma4SynthEndToEnd, vulkan_logits_match_the_reference) {
    const SynthCase c = GetParam();
    const std::string dir = test::make_temp_dir("gemma4-synth");
    const std::string path = dir + (c.hf ? "/hf" : "/m.gguf");
    synth::Gemma4SynthOptions o;
    o.weight_type = c.type;
    o.seed = 9;
    const auto shape = synth::gemma4_preset(c.preset);
    ASSERT_TRUE(shape.ok());
    const Status st = c.hf ? synth::synth_gemma4_hf(path, *shape, o) : synth::synth_gemma4_gguf(path, *shape, o);
    ASSERT_TRUE(st.ok()) << st.error().message();
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(**model, **kv, device(), pipelines());
    const int seq = *(*kv)->add_sequence();
    auto ref = ref::Gemma4Reference::open(path, {true});
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    // a real prompt through the synthesizer's tokenizer and the Gemma 4 chat markers
    ASSERT_TRUE((*model)->tokenizer()) << "the synthesizer writes a tokenizer";
    const std::vector<int32_t> prompt = (*model)->tokenizer()->encode("<|turn>user\nWhat is a sliding window?<turn|>\n<|turn>model\n", true);
    ASSERT_GT(prompt.size(), 10u);  // longer than the window (8)
    EXPECT_EQ(prompt[0], 2);        // <bos>
    EXPECT_EQ(prompt[1], 105);      // <|turn> is one token
    std::vector<float> got;
    auto pf = test::prefill(runner, seq, prompt, 5, true, [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    ASSERT_TRUE(pf.ok()) << pf.error().message();
    const ref::Floats want = ref->forward(prompt);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(ref::nmse(got, want), 1e-8) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    PresetsAndTypes, Gemma4SynthEndToEnd,
    ::testing::Values(SynthCase{"e2b_q8_0", "tiny-e2b", DType::Q8_0, false},
                      SynthCase{"e2b_q4_k", "tiny-e2b", DType::Q4_K, false},
                      SynthCase{"e2b_hf_bf16", "tiny-e2b", DType::BF16, true},
                      SynthCase{"31b_q5_0", "tiny-31b", DType::Q5_0, false},
                      SynthCase{"31b_q6_k", "tiny-31b", DType::Q6_K, false},
                      SynthCase{"26b_q4_0", "tiny-26b", DType::Q4_0, false},
                      SynthCase{"26b_q5_1", "tiny-26b", DType::Q5_1, false},
                      SynthCase{"26b_hf_bf16", "tiny-26b", DType::BF16, true}),
    [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace tdm
