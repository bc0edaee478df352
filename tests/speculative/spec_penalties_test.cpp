// SPDX-License-Identifier: Apache-2.0
// tests/speculative/spec_penalties_test.cpp: greedy decoding with OpenAI's presence and
// frequency penalties and logit_bias (and the repetition penalty) stays exact through a
// drafter: the verify step takes the host's penalised argmax, whose history includes the
// accepted drafts, so speculative output equals plain output token for token. Six prompts
// on the tiny synthetic Qwen3: the mechanism is exact or not, and a drafter that agrees
// about half the time exercises both accepted and rejected drafts on every prompt.
// To add a case: another SamplerParams in penalised_settings().
#include <gtest/gtest.h>

#include "engine/generate.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/forced_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

class SpecPenalties : public test::DeviceTest {};

std::vector<SamplerParams> penalised_settings() {
    SamplerParams a;
    a.temperature = 0;
    a.frequency_penalty = 0.8f;
    a.presence_penalty = 0.5f;
    a.logit_bias = {{5, 3.0f}, {17, -100.0f}, {200, 1.5f}};
    SamplerParams b = a;
    b.presence_penalty = -1.0f;  // favours what was said: loops the drafter can predict
    b.frequency_penalty = 0.0f;
    b.repeat_penalty = 1.3f;
    return {a, b};
}

TEST_F(SpecPenalties, greedy_with_penalties_and_bias_through_a_drafter_equals_plain_greedy) {
    const std::string dir = test::make_temp_dir("spec-penalties");
    auto shape = synth::qwen3_preset("tiny");
    ASSERT_TRUE(shape.ok());
    synth::Qwen3SynthOptions opts;
    opts.weight_type = DType::F32;
    opts.seed = 3;
    const std::string path = dir + "/target.gguf";
    ASSERT_TRUE(synth::synth_qwen3_gguf(path, *shape, opts).ok());
    auto model = Model::load(path, test::build_tree_plugins(), test::test_device(), {});
    ASSERT_TRUE(model.ok()) << model.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    auto kv = KvPool::create(test::test_device(), (*model)->attention_layers(), kc, "test");
    ASSERT_TRUE(kv.ok());
    Runner runner(**model, **kv, device(), pipelines());
    const int seq = *(*kv)->add_sequence();
    const uint32_t n_vocab = (*model)->info().n_vocab;

    int changed = 0;  // prompts whose output the penalties changed: they are in effect
    uint64_t accepted = 0, drafted = 0;
    for (const SamplerParams& sampling : penalised_settings()) {
        for (int i = 0; i < 6; ++i) {
            std::mt19937_64 rng(500 + uint64_t(i));
            std::vector<int32_t> prompt(8);
            for (int32_t& t : prompt) t = int32_t(rng() % 400);
            GenerateParams gp;
            gp.max_tokens = 40;
            gp.ignore_eog = true;
            gp.sampling.temperature = 0;
            ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
            auto unpenalised = generate(runner, nullptr, seq, prompt, gp, {});
            ASSERT_TRUE(unpenalised.ok()) << unpenalised.error().message();
            gp.sampling = sampling;
            ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
            auto plain = generate(runner, nullptr, seq, prompt, gp, {});
            ASSERT_TRUE(plain.ok()) << plain.error().message();
            if (plain->tokens != unpenalised->tokens) ++changed;
            ForcedDrafter forced(plain->tokens, prompt.size(), 0.5, n_vocab, 9 + uint64_t(i));
            Drafter* chain[] = {&forced};
            SpecParams sp;
            sp.draft_max = 3;
            ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
            auto spec = generate_speculative(runner, nullptr, seq, prompt, gp, chain, sp, {});
            ASSERT_TRUE(spec.ok()) << spec.error().message();
            ASSERT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
            accepted += spec->stats.accepted;
            drafted += spec->stats.drafted;
        }
    }
    EXPECT_GE(changed, 6);
    EXPECT_GT(accepted, 0u);
    EXPECT_LT(accepted, drafted);
}

}  // namespace
}  // namespace tdm
