// SPDX-License-Identifier: Apache-2.0
// tests/models/llama/llama_e2e_test.cpp: Llama 3.x end to end through the llama plugin, on
// synthetic models the test builds (plugins/llama/synth: GGUF with llama.cpp's permuted q/k and
// rope_freqs, HF LlamaForCausalLM directories), checked against the plain C++ reference
// (llama_reference.h):
//   - the prompt logits at every position, GGUF and HF, tied and untied, with and without
//     llama3 rope scaling, match the reference (f16 KV, as the runtime stores it);
//   - GGUF and HF copies of the same weights give the same logits;
//   - greedy speculative decoding with an n-gram drafter and with a draft model (the target's
//     first layer) gives plain greedy decoding's tokens.
// The models are tiny and the prompts few (5 per drafter): these check a mechanism, not a
// distribution, and the whole program stays within CI's time budget.
#include <gtest/gtest.h>

#include <random>

#include "engine/generate.h"
#include "llama/synth/llama_synth.h"
#include "llama_reference.h"
#include "speculative/draft_model.h"
#include "speculative/plugin_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"
#include "support/prefill.h"
#include "support/reference.h"

namespace tdm {
namespace {

struct LlamaCase {
    const char* name;
    DType type;
    bool hf;
    bool tied;
    bool scaling;
    int n_head, n_head_kv;
};

synth::LlamaShape llama_case_shape(const LlamaCase& c) {
    synth::LlamaShape s = *synth::llama_preset("tiny");
    s.n_vocab = 768;
    s.n_embd = 128;
    s.n_head = c.n_head;
    s.n_head_kv = c.n_head_kv;
    s.head_dim = 32;
    s.n_ff = 256;
    // An original context of 32 instead of 8192 moves the three llama3 cases to wavelengths
    // the first 13 positions feel (head_dim 32 at theta 5e5: pair 0 kept, pair 1 smoothed,
    // the rest divided by 8), so scaling changes these logits by far more than the tolerance.
    if (c.scaling)
        s.rope_scaling->original_context = 32;
    else
        s.rope_scaling.reset();
    return s;
}

// Writes the case's model and returns its path.
std::string write_llama(const LlamaCase& c, const std::string& dir, uint64_t seed = 7) {
    synth::LlamaSynthOptions o;
    o.weight_type = c.type;
    o.seed = seed;
    o.tied = c.tied;
    const std::string path = dir + (c.hf ? "/hf" : "/model.gguf");
    const Status st = c.hf ? synth::synth_llama_hf(path, llama_case_shape(c), o)
                           : synth::synth_llama_gguf(path, llama_case_shape(c), o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

Loaded load_llama(const std::string& path) {
    Loaded l;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    auto kv = KvPool::create(test::test_device(), l.model->attention_layers(), kc, "llama-test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) l.kv = std::move(kv).value();
    return l;
}

// Logits of every prompt position, the prompt in two chunks.
std::vector<float> runtime_logits(Loaded& l, const std::vector<int32_t>& prompt) {
    Runner runner(*l.model, *l.kv, test::test_device(), test::test_pipelines());
    const int seq = *l.kv->add_sequence();
    std::vector<float> got;
    auto st = test::prefill(runner, seq, prompt, 6, true,
                            [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    EXPECT_TRUE(st.ok()) << st.error().message();
    l.kv->free_sequence(seq);
    return got;
}

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 42, 9, 700, 3, 255, 128, 64, 511, 77};

class LlamaEndToEnd : public test::DeviceTest, public ::testing::WithParamInterface<LlamaCase> {};

TEST_P(LlamaEndToEnd, vulkan_logits_match_the_reference) {
    const LlamaCase c = GetParam();
    const std::string path = write_llama(c, test::make_temp_dir("llama"));
    Loaded l = load_llama(path);
    ASSERT_TRUE(l.model && l.kv);
    auto ref = test::LlamaReference::open(path, true);
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const std::vector<float> got = runtime_logits(l, kPrompt);
    const std::vector<float> want = ref->forward(kPrompt);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(ref::nmse(got, want), 1e-8) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    LayoutsAndShapes, LlamaEndToEnd,
    ::testing::Values(LlamaCase{"gguf_f32_scaled_gqa2", DType::F32, false, false, true, 4, 2},
                      LlamaCase{"gguf_q8_0_tied_plain_mha", DType::Q8_0, false, true, false, 4, 4},
                      LlamaCase{"hf_f16_scaled_gqa2", DType::F16, true, false, true, 4, 2},
                      LlamaCase{"hf_bf16_tied_plain_mqa", DType::BF16, true, true, false, 4, 1}),
    [](const auto& p) { return std::string(p.param.name); });

TEST_F(LlamaEndToEnd, gguf_and_hf_copies_of_the_same_weights_give_the_same_logits) {
    for (bool scaling : {true, false}) {
        SCOPED_TRACE(scaling ? "llama3 scaling" : "plain rope");
        const std::string dir = test::make_temp_dir("llama-layouts");
        const std::string gguf = write_llama({"", DType::F16, false, false, scaling, 4, 2}, dir);
        const std::string hf = write_llama({"", DType::F16, true, false, scaling, 4, 2}, dir);
        Loaded a = load_llama(gguf), b = load_llama(hf);
        ASSERT_TRUE(a.model && b.model);
        const std::vector<float> la = runtime_logits(a, kPrompt), lb = runtime_logits(b, kPrompt);
        ASSERT_EQ(la.size(), lb.size());
        // the same sums in another order (q/k dims permuted): equal up to f32 rounding
        EXPECT_LT(ref::nmse(la, lb), 1e-10);
        auto ra = test::LlamaReference::open(gguf), rb = test::LlamaReference::open(hf);
        ASSERT_TRUE(ra.ok() && rb.ok());
        EXPECT_LT(ref::nmse(ra->forward(kPrompt), rb->forward(kPrompt)), 1e-12);
    }
}

TEST_F(LlamaEndToEnd, llama3_rope_scaling_changes_the_logits) {
    // without this, a plugin that ignored rope_freqs would pass the scaled cases above only
    // if the reference ignored them too
    const std::string scaled = write_llama({"", DType::F32, false, false, true, 4, 2}, test::make_temp_dir("llama-a"));
    const std::string plain = write_llama({"", DType::F32, false, false, false, 4, 2}, test::make_temp_dir("llama-b"));
    Loaded a = load_llama(scaled), b = load_llama(plain);
    ASSERT_TRUE(a.model && b.model);
    EXPECT_GT(ref::nmse(runtime_logits(a, kPrompt), runtime_logits(b, kPrompt)), 1e-4);
}

// ---------------------------------------------------------------- speculative decoding

GenerateParams llama_greedy(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

// Plain greedy, then speculative with `chain`, each from an empty sequence; the tokens
// must match. Returns the drafted and accepted counts.
std::pair<uint64_t, uint64_t> expect_spec_exact(Loaded& t, const std::vector<int32_t>& prompt, Drafter& drafter) {
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int seq = *t.kv->add_sequence();
    auto plain = generate(runner, nullptr, seq, prompt, llama_greedy(32), {});
    EXPECT_TRUE(plain.ok()) << plain.error().message();
    EXPECT_TRUE(t.kv->truncate(seq, 0).ok());
    Drafter* chain[] = {&drafter};
    SpecParams sp;
    sp.draft_max = 4;
    auto spec = generate_speculative(runner, nullptr, seq, prompt, llama_greedy(32), chain, sp, {});
    t.kv->free_sequence(seq);
    EXPECT_TRUE(spec.ok()) << spec.error().message();
    if (!plain.ok() || !spec.ok()) return {0, 0};
    EXPECT_EQ(spec->gen.tokens, plain->tokens) << "speculative output differs from plain greedy decoding";
    return {spec->stats.drafted, spec->stats.accepted};
}

std::vector<int32_t> llama_prompt(uint64_t seed, size_t n) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(n);
    for (auto& x : p) x = int32_t(rng() % 400);
    return p;
}

TEST_F(LlamaEndToEnd, greedy_speculative_output_with_an_ngram_drafter_equals_plain_greedy) {
    // a repeating model (its greedy output cycles with period 8) so that drafts are accepted
    const std::string path = test::make_temp_dir("llama-ngram") + "/target.gguf";
    synth::LlamaSynthOptions o;
    o.weight_type = DType::Q8_0;
    o.repeating = true;
    o.repeat_period = 8;
    ASSERT_TRUE(synth::synth_llama_gguf(path, *synth::llama_preset("tiny"), o).ok());
    Loaded t = load_llama(path);
    ASSERT_TRUE(t.model);
    const DrafterEntry* e = test::build_tree_plugins().find_drafter("ngram-simple");
    ASSERT_NE(e, nullptr);
    auto d = PluginDrafter::create(*e, {{"ngram_size_n", "3"}, {"draft_max", "4"},
                                        {"n_vocab", std::to_string(t.model->info().n_vocab)}});
    ASSERT_TRUE(d.ok()) << d.error().message();
    uint64_t drafted = 0, accepted = 0;
    for (uint64_t i = 0; i < 5; ++i) {
        const auto [dr, ac] = expect_spec_exact(t, llama_prompt(40 + i, 8), **d);
        drafted += dr;
        accepted += ac;
    }
    EXPECT_GT(accepted, 0u);
}

TEST_F(LlamaEndToEnd, greedy_speculative_output_with_a_draft_model_equals_plain_greedy) {
    // the draft is the target's first layer (same seed): it agrees often, not always
    const std::string dir = test::make_temp_dir("llama-draft");
    synth::LlamaShape shape = *synth::llama_preset("tiny");
    synth::LlamaSynthOptions o;
    o.weight_type = DType::F16;
    ASSERT_TRUE(synth::synth_llama_gguf(dir + "/target.gguf", shape, o).ok());
    shape.n_layer = 1;
    ASSERT_TRUE(synth::synth_llama_hf(dir + "/draft", shape, o).ok());  // the other layout on purpose
    Loaded t = load_llama(dir + "/target.gguf");
    Loaded d = load_llama(dir + "/draft");
    ASSERT_TRUE(t.model && d.model);
    DraftModelDrafter drafter(std::move(d.model), std::move(d.kv), test::test_device(), test::test_pipelines());
    uint64_t drafted = 0, accepted = 0;
    for (uint64_t i = 0; i < 5; ++i) {
        const auto [dr, ac] = expect_spec_exact(t, llama_prompt(70 + i, 6 + i), drafter);
        drafted += dr;
        accepted += ac;
    }
    EXPECT_GT(drafted, 0u);
}

}  // namespace
}  // namespace tdm
