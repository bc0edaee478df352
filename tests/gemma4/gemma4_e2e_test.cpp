// SPDX-License-Identifier: Apache-2.0
// tests/gemma4/gemma4_e2e_test.cpp: Gemma 4 end to end through the gemma4 plugin on the tiny
// models of gemma4_tiny.h (real tensor names and keys, both layouts), checked against the
// plain-C++ reference forward (tests/support/gemma4_reference.h):
//   - the logits of every prompt position, prefilled in chunks, for each family (E2B-style PLE
//     + KV-shared + double-wide MLP, 31B-style K=V full layers, 26B-style MoE), GGUF and HF
//     (both config forms), F32/F16/BF16 weights; prompts are longer than the sliding window;
//   - greedy generation, each token the reference's argmax for the same prefix;
//   - speculative exactness: a draft model that always agrees (every verify accepted, verifies
//     crossing the window edge) and a perturbed one (rejections and KV rollback) give exactly
//     plain greedy output, as does an n-gram drafter.
//
// To add a case: add a Case (preset, layout, type, config form).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/generate.h"
#include "gemma4_tiny.h"
#include "plugin/plugin_loader.h"
#include "speculative/draft_model.h"
#include "speculative/plugin_drafter.h"
#include "speculative/scheduler.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/gemma4_reference.h"

namespace tdm {
namespace {

using Tokens = std::vector<int32_t>;
namespace g4 = test::g4;

Registry& plugins() {
    static std::unique_ptr<Registry> reg = [] {
        PluginSearch s;
        s.use_env = false;
        auto r = load_plugins(s);
        EXPECT_TRUE(r.ok()) << r.error().message();
        return std::move(r).value();
    }();
    return *reg;
}

GenerateParams greedy(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

struct Case {
    const char* name;
    const char* preset;
    bool hf;
    DType type;
    bool per_layer_config;
};

// Writes the case's model; returns its path.
std::string write_case(const Case& c, const g4::Weights& w, const std::string& dir) {
    g4::WriteOptions o;
    o.type = c.type;
    o.per_layer_config = c.per_layer_config;
    const g4::Preset p = g4::preset(c.preset);
    return c.hf ? g4::write_hf(p, w, dir + "/hf", o) : g4::write_gguf(p, w, dir + "/m.gguf", o);
}

// A loaded model with its KV pool and runner.
struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;
};

Loaded load(const std::string& path, vk::Device& dev, vk::PipelineManager& pipes, uint32_t n_ctx = 128) {
    Loaded l;
    auto m = Model::load(path, plugins(), dev);
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = n_ctx;
    auto kv = KvPool::create(dev, l.model->attention_layers(), kc, "gemma4-test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (!kv.ok()) return l;
    l.kv = std::move(kv).value();
    l.runner = std::make_unique<Runner>(*l.model, *l.kv, dev, pipes);
    return l;
}

Tokens random_tokens(uint64_t seed, size_t n, int32_t lo, int32_t hi) {
    std::mt19937_64 rng(seed);
    Tokens t(n);
    for (auto& x : t) x = lo + int32_t(rng() % uint64_t(hi - lo));
    return t;
}

class Gemma4EndToEnd : public test::DeviceTest, public ::testing::WithParamInterface<Case> {};

TEST_P(Gemma4EndToEnd, vulkan_logits_and_greedy_tokens_match_the_reference) {
    const Case c = GetParam();
    const g4::Weights w = g4::make_weights(g4::preset(c.preset), 11, c.type);
    const std::string path = write_case(c, w, test::make_temp_dir("gemma4-e2e"));
    Loaded l = load(path, device(), pipelines());
    ASSERT_TRUE(l.runner);
    auto ref = ref::Gemma4Reference::open(path, {true});  // f16 K/V, as the runtime stores them
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const uint32_t n_vocab = l.model->info().n_vocab;
    ASSERT_EQ(int64_t(n_vocab), ref->hparams().n_vocab);

    // (1) every prompt position's logits; 21 tokens, the window is 8, chunks of 6
    const Tokens prompt = random_tokens(3, 21, 3, int32_t(n_vocab));
    const int seq = *l.kv->add_sequence();
    std::vector<float> got;
    auto st = prefill(*l.runner, seq, prompt, 6, true,
                      [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    ASSERT_TRUE(st.ok()) << st.error().message();
    const ref::Floats want = ref->forward(prompt);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(ref::nmse(got, want), 1e-8) << c.name;

    // (2) greedy continuation, teacher-checked against the reference
    ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
    auto gen = generate(*l.runner, nullptr, seq, prompt, greedy(24), {});
    ASSERT_TRUE(gen.ok()) << gen.error().message();
    ASSERT_EQ(gen->tokens.size(), 24u);
    Tokens all = prompt;
    all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
    const ref::Floats logits = ref->forward(all);
    int near_ties = 0;
    for (size_t i = 0; i < gen->tokens.size(); ++i) {
        const float* row = logits.data() + (prompt.size() - 1 + i) * n_vocab;
        int best = 0;
        for (uint32_t v = 1; v < n_vocab; ++v)
            if (row[v] > row[best]) best = int(v);
        const int got_tok = gen->tokens[i];
        if (got_tok == best) continue;
        EXPECT_LT(std::fabs(row[best] - row[got_tok]), 1e-3f * (1.0f + std::fabs(row[best])))
            << c.name << ": step " << i << " runtime chose " << got_tok << ", reference " << best;
        ++near_ties;
    }
    EXPECT_LE(near_ties, 1) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    FamiliesAndLayouts, Gemma4EndToEnd,
    ::testing::Values(Case{"e2b_gguf_f32", "tiny-e2b", false, DType::F32, false},
                      Case{"e2b_hf_bf16", "tiny-e2b", true, DType::BF16, false},
                      Case{"e2b_hf_f16_per_layer_config", "tiny-e2b", true, DType::F16, true},
                      Case{"31b_gguf_f16", "tiny-31b", false, DType::F16, false},
                      Case{"31b_hf_bf16_per_layer_config", "tiny-31b", true, DType::BF16, true},
                      Case{"26b_gguf_f32", "tiny-26b", false, DType::F32, false},
                      Case{"26b_hf_bf16", "tiny-26b", true, DType::BF16, false}),
    [](const auto& p) { return std::string(p.param.name); });

// Weights with relative noise `eps` on every tensor: a draft that agrees often, not always.
g4::Weights perturbed(g4::Weights w, float eps, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto& [name, t] : w) {
        double ss = 0;
        for (float v : t.data) ss += double(v) * v;
        const float s = eps * float(std::sqrt(ss / double(t.data.size())));
        for (float& v : t.data) v += s * n(rng);
    }
    return w;
}

class Gemma4Speculative : public test::DeviceTest, public ::testing::WithParamInterface<const char*> {};

// Plain greedy, then speculative with the draft (a Gemma 4 model of the same vocabulary) and
// with an n-gram drafter, each on a fresh sequence: the tokens must be identical.
TEST_P(Gemma4Speculative, greedy_speculative_output_equals_plain_greedy_output) {
    const char* preset = GetParam();
    const g4::Preset p = g4::preset(preset);
    const g4::Weights w = g4::make_weights(p, 21, DType::F32);
    const std::string dir = test::make_temp_dir("gemma4-spec");
    const std::string target_path = g4::write_gguf(p, w, dir + "/target.gguf");
    const std::string same_path = g4::write_gguf(p, w, dir + "/same.gguf");
    const std::string noisy_path = g4::write_gguf(p, perturbed(w, 0.05f, 5), dir + "/noisy.gguf");
    Loaded t = load(target_path, device(), pipelines(), 256);
    ASSERT_TRUE(t.runner);

    const DrafterEntry* ngram = plugins().find_drafter("ngram-simple");
    ASSERT_NE(ngram, nullptr);
    uint64_t accepted_same = 0, accepted_noisy = 0, drafted_noisy = 0;
    for (int k = 0; k < 4; ++k) {
        // prompts of 5..40 tokens; 48 generated, so verifies cross the window (8) many times
        const Tokens prompt = random_tokens(100 + uint64_t(k), size_t(5 + 12 * k), 3, 1024);
        int seq = *t.kv->add_sequence();
        auto plain = generate(*t.runner, nullptr, seq, prompt, greedy(48), {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        for (const std::string& draft_path : {same_path, noisy_path}) {
            Loaded d = load(draft_path, device(), pipelines(), 256);
            ASSERT_TRUE(d.model);
            DraftModelDrafter drafter(std::move(d.model), std::move(d.kv), device(), pipelines());
            Drafter* chain[] = {&drafter};
            SpecParams sp;
            sp.draft_max = 1 + k;  // 1..4 drafts per round
            seq = *t.kv->add_sequence();
            auto spec = generate_speculative(*t.runner, nullptr, seq, prompt, greedy(48), chain, sp, {});
            t.kv->free_sequence(seq);
            ASSERT_TRUE(spec.ok()) << spec.error().message();
            EXPECT_EQ(spec->gen.tokens, plain->tokens) << preset << " prompt " << k << " draft " << draft_path;
            (draft_path == same_path ? accepted_same : accepted_noisy) += spec->stats.accepted;
            if (draft_path == noisy_path) drafted_noisy += spec->stats.drafted;
        }
        auto ng = PluginDrafter::create(*ngram, {{"ngram_size_n", "2"}, {"draft_max", "4"}, {"n_vocab", "1024"}});
        ASSERT_TRUE(ng.ok()) << ng.error().message();
        Drafter* chain[] = {ng->get()};
        seq = *t.kv->add_sequence();
        auto spec = generate_speculative(*t.runner, nullptr, seq, prompt, greedy(48), chain, SpecParams{}, {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << preset << " prompt " << k << " ngram-simple";
    }
    // the identical draft is always right; the noisy one is sometimes wrong (rollbacks happen)
    EXPECT_GT(accepted_same, 100u);
    EXPECT_GT(accepted_noisy, 0u);
    EXPECT_LT(accepted_noisy, drafted_noisy);
}

INSTANTIATE_TEST_SUITE_P(Families, Gemma4Speculative, ::testing::Values("tiny-e2b", "tiny-31b", "tiny-26b"),
                         [](const auto& p) {
                             std::string s = p.param;
                             for (char& ch : s)
                                 if (ch == '-') ch = '_';
                             return s;
                         });

}  // namespace
}  // namespace tdm
