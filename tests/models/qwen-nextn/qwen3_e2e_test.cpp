// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/qwen3_e2e_test.cpp: Qwen3 end to end through the qwen-nextn
// plugin, on synthetic models the test builds (real tensor names and metadata),
// checked against the plain-C++ reference forward (tests/support/qwen3_reference.h).
//
// To add a case: add a Qwen3Case (shape tweaks, weight type). Every case checks
// (1) the logits of every prompt position against the reference (f16 KV, as the
// runtime stores it) and (2) 32 greedy steps: each runtime token must be the
// reference's argmax for the same prefix, except at a near-tie of the reference
// logits (reported, and counted: there must be almost none).
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/generate.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/plugin_registry.h"
#include "support/prefill.h"
#include "support/fixtures.h"
#include "support/qwen3_reference.h"
#include "support/teacher_check.h"

namespace tdm {
namespace {

struct Qwen3Case {
    const char* name;
    DType type;
    int n_head, n_head_kv;
    bool tied;
};

synth::Qwen3Shape case_shape(const Qwen3Case& c) {
    synth::Qwen3Shape s;
    s.n_vocab = 768;
    s.n_embd = 256;
    s.n_layer = 2;
    s.n_head = c.n_head;
    s.n_head_kv = c.n_head_kv;
    s.head_dim = 32;
    s.n_ff = 512;
    s.n_ctx_train = 4096;
    s.tied_embeddings = c.tied;
    return s;
}

class Qwen3EndToEnd : public test::DeviceTest, public ::testing::WithParamInterface<Qwen3Case> {};

TEST_P(Qwen3EndToEnd, vulkan_logits_and_greedy_tokens_match_the_reference) {
    const Qwen3Case c = GetParam();
    const std::string dir = test::make_temp_dir("qwen3");
    const std::string path = dir + "/model.gguf";
    synth::Qwen3SynthOptions opt;
    opt.weight_type = c.type;
    opt.seed = 7;
    opt.tied = c.tied;
    ASSERT_TRUE(synth::synth_qwen3_gguf(path, case_shape(c), opt).ok());

    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 128;
    auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(**model, **kv, device(), pipelines());
    const int seq = *(*kv)->add_sequence();

    auto ref = ref::Qwen3Reference::open(path, {true});
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const uint32_t n_vocab = (*model)->info().n_vocab;

    // (1) prompt logits at every position (prefill in two chunks)
    const std::vector<int32_t> prompt = {1, 17, 300, 42, 42, 9, 700, 3, 255, 128, 64};
    std::vector<float> got;
    auto st = test::prefill(runner, seq, prompt, 6, true, [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    ASSERT_TRUE(st.ok()) << st.error().message();
    const auto want = ref->forward(prompt);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(ref::nmse(got, want), 1e-8) << c.name;

    // (2) greedy continuation, teacher-checked against the reference
    ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
    GenerateParams gp;
    gp.max_tokens = 32;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    auto gen = generate(runner, (*model)->tokenizer(), seq, prompt, gp, {});
    ASSERT_TRUE(gen.ok()) << gen.error().message();
    ASSERT_EQ(gen->tokens.size(), 32u);
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
    const auto logits = ref->forward(all);
    test::expect_greedy_follows_teacher(prompt, gen->tokens, logits, n_vocab, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    WeightTypesAndShapes, Qwen3EndToEnd,
    ::testing::Values(Qwen3Case{"f32_gqa2", DType::F32, 4, 2, false}, Qwen3Case{"f16_mha", DType::F16, 4, 4, false},
                      Qwen3Case{"bf16_gqa4_tied", DType::BF16, 8, 2, true},
                      Qwen3Case{"q8_0_gqa2", DType::Q8_0, 4, 2, false},
                      Qwen3Case{"q4_0_gqa2_tied", DType::Q4_0, 4, 2, true},
                      Qwen3Case{"q5_0_gqa2", DType::Q5_0, 4, 2, false},
                      Qwen3Case{"q5_1_mqa_tied", DType::Q5_1, 4, 1, true},
                      Qwen3Case{"q4_K_gqa2", DType::Q4_K, 4, 2, false}, Qwen3Case{"q5_K_mqa", DType::Q5_K, 4, 1, false},
                      Qwen3Case{"q6_K_gqa2_tied", DType::Q6_K, 4, 2, true}),
    [](const auto& p) { return std::string(p.param.name); });

TEST_F(Qwen3EndToEnd, gguf_and_safetensors_directory_of_the_same_model_generate_identical_tokens) {
    const std::string dir = test::make_temp_dir("qwen3hf");
    synth::Qwen3Shape shape = case_shape({"", DType::F16, 4, 2, false});
    synth::Qwen3SynthOptions opt;
    opt.weight_type = DType::F16;
    ASSERT_TRUE(synth::synth_qwen3_gguf(dir + "/m.gguf", shape, opt).ok());
    ASSERT_TRUE(synth::synth_qwen3_hf(dir + "/hf", shape, opt).ok());
    std::vector<std::vector<int32_t>> outs;
    for (const std::string& p : {dir + "/m.gguf", dir + "/hf"}) {
        auto model = Model::load(p, test::build_tree_plugins(), device());
        ASSERT_TRUE(model.ok()) << model.error().message();
        ASSERT_NE((*model)->tokenizer(), nullptr) << (*model)->tokenizer_error();
        KvPoolConfig kc;
        kc.n_ctx = 128;
        auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test");
        ASSERT_TRUE(kv.ok());
        Runner runner(**model, **kv, device(), pipelines());
        const auto prompt = (*model)->tokenizer()->encode("The quick brown fox", false);
        GenerateParams gp;
        gp.max_tokens = 24;
        gp.sampling.temperature = 0;
        gp.ignore_eog = true;
        auto gen = generate(runner, (*model)->tokenizer(), *(*kv)->add_sequence(), prompt, gp, {});
        ASSERT_TRUE(gen.ok()) << gen.error().message();
        outs.push_back(gen->tokens);
    }
    EXPECT_EQ(outs[0], outs[1]);
}

}  // namespace
}  // namespace tdm
