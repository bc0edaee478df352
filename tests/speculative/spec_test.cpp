// SPDX-License-Identifier: Apache-2.0
// tests/speculative/spec_test.cpp: speculative decoding on synthetic Qwen3 targets.
// DESIGN invariant 1: with greedy sampling the speculative token sequence equals
// plain decoding's, for every drafter; the verify pass's logits equal
// single-token decode's bit for bit. Also: rollback edge cases (EOS inside a
// draft, the token budget inside a round, a full context, an empty proposal),
// the vocabulary check, and invariant 2 (sampling) statistically.
//
// To add a case: build a Fixture (target, optionally a draft model), make the
// drafters, and compare generate() with generate_speculative().
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "engine/generate.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_model.h"
#include "speculative/forced_drafter.h"
#include "support/sampling_stats.h"
#include "support/device_fixture.h"
#include "support/plugin_registry.h"
#include "support/prefill.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

Loaded load_spec(const std::string& path, uint32_t n_ctx = 256, bool int8_matmul = false) {
    Loaded l;
    ModelLoadOptions mo;
    mo.int8_matmul = int8_matmul;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device(), mo);
    EXPECT_TRUE(m.ok()) << m.error().message();
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = n_ctx;
    auto kv = KvPool::create(test::test_device(), l.model->attention_layers(), kc, "test");
    EXPECT_TRUE(kv.ok());
    l.kv = std::move(kv).value();
    return l;
}

// A target and a draft model derived from it (same vocabulary, perturbed weights).
struct Pair {
    std::string target, draft;
};

Pair make_pair(DType type, float perturbation, uint64_t seed) {
    const std::string dir = test::make_temp_dir("spec");
    auto shape = synth::qwen3_preset("tiny");
    EXPECT_TRUE(shape.ok());
    synth::Qwen3SynthOptions t;
    t.weight_type = type;
    t.seed = seed;
    Pair p{dir + "/target.gguf", dir + "/draft.gguf"};
    EXPECT_TRUE(synth::synth_qwen3_gguf(p.target, *shape, t).ok());
    EXPECT_TRUE(synth::synth_qwen3_gguf(p.draft, *shape, synth::qwen3_draft_options(t, perturbation)).ok());
    return p;
}

std::vector<int32_t> random_prompt_spec(uint64_t seed, size_t len, int32_t hi) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(len);
    for (auto& t : p) t = int32_t(rng() % uint64_t(hi));
    return p;
}

GenerateParams greedy_spec(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

class Spec : public test::DeviceTest {};

// ---------------------------------------------------------------- exactness

class DraftModelExactness : public test::DeviceTest, public ::testing::WithParamInterface<DType> {};

TEST_P(DraftModelExactness, greedy_speculative_output_equals_plain_greedy_output_on_50_prompts) {
    const Pair p = make_pair(GetParam(), 0.03f, 11);
    Loaded t = load_spec(p.target);
    Loaded d = load_spec(p.draft);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    DraftModelDrafter drafter(std::move(d.model), std::move(d.kv), device(), pipelines());
    Drafter* chain[] = {&drafter};
    SpecParams sp;
    sp.draft_max = 4;
    uint64_t accepted = 0, drafted = 0;
    for (int i = 0; i < 50; ++i) {
        const auto prompt = random_prompt_spec(1000 + uint64_t(i), 6 + size_t(i % 7), 400);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(64), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(64), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        ASSERT_EQ(spec->gen.tokens, plain->tokens) << dtype_name(GetParam()) << " prompt " << i;
        accepted += spec->stats.accepted;
        drafted += spec->stats.drafted;
    }
    // the pair agrees often but not always: both paths of the round are exercised
    EXPECT_GT(accepted, 0u);
    EXPECT_LT(accepted, drafted);
}

// The default of every front end: the goodput controller chooses k each round (drafting
// off, probing, drafting again); the output is plain greedy output all the same, with a
// draft model and with forced drafters that agree never, half the time and nearly always.
TEST_F(Spec, with_the_goodput_controller_greedy_output_equals_plain_greedy_output_on_50_prompts) {
    const Pair p = make_pair(DType::Q8_0, 0.03f, 11);
    Loaded t = load_spec(p.target);
    Loaded d = load_spec(p.draft);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    DraftModelDrafter drafter(std::move(d.model), std::move(d.kv), device(), pipelines());
    SpecParams sp;
    sp.draft_max = 8;
    sp.auto_k = true;
    uint64_t drafted = 0;
    for (int i = 0; i < 50; ++i) {
        const auto prompt = random_prompt_spec(3000 + uint64_t(i), 6 + size_t(i % 7), 400);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(64), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ForcedDrafter forced(plain->tokens, prompt.size(), (i % 3) * 0.45, t.model->info().n_vocab, uint64_t(i));
        Drafter* chain[] = {i % 2 ? static_cast<Drafter*>(&drafter) : &forced};
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(64), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        ASSERT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        EXPECT_TRUE(spec->stats.controller.on);
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(drafted, 0u);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, DraftModelExactness, ::testing::Values(DType::F16, DType::Q8_0, DType::Q4_0),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

// The int8 activation path (--int8-matmul on) is batch-invariant like the f32 one: with a
// Q8_0 target and draft model both on it, speculative output is plain output; the logits
// differ from the f32-activation path's by the error of 8-bit activations.
TEST_F(Spec, int8_matmuls_keep_speculative_output_exact) {
    const Pair p = make_pair(DType::Q8_0, 0.03f, 12);
    Loaded t = load_spec(p.target, 256, /*int8_matmul=*/true);
    Loaded d = load_spec(p.draft, 256, true);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    DraftModelDrafter drafter(std::move(d.model), std::move(d.kv), device(), pipelines());
    Drafter* chain[] = {&drafter};
    SpecParams sp;
    sp.draft_max = 4;
    uint64_t accepted = 0;
    for (int i = 0; i < 20; ++i) {
        const auto prompt = random_prompt_spec(3000 + uint64_t(i), 5 + size_t(i % 9), 400);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(48), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(48), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        ASSERT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        accepted += spec->stats.accepted;
    }
    EXPECT_GT(accepted, 0u);

    // the logits of one prompt, int8 against f32 activations
    Loaded f = load_spec(p.target);
    Runner f32_runner(*f.model, *f.kv, device(), pipelines());
    const int f_seq = *f.kv->add_sequence();
    const std::vector<int32_t> tokens = {3, 77, 150, 9, 260}, positions = {0, 1, 2, 3, 4}, rows = {4};
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto a = runner.forward({tokens, positions, seq, rows});
    ASSERT_TRUE(a.ok()) << a.error().message();
    const std::vector<float> int8_logits(a->logits, a->logits + t.model->info().n_vocab);
    auto b = f32_runner.forward({tokens, positions, f_seq, rows});
    ASSERT_TRUE(b.ok()) << b.error().message();
    double num = 0, den = 0;
    for (size_t i = 0; i < int8_logits.size(); ++i) {
        num += double(int8_logits[i] - b->logits[i]) * double(int8_logits[i] - b->logits[i]);
        den += double(b->logits[i]) * double(b->logits[i]);
    }
    const double rel = std::sqrt(num / den);
    EXPECT_GT(rel, 0.0) << "the int8 path did not run";
    EXPECT_LT(rel, 4e-2) << "relative RMS logit error " << rel;
}

// The split attention layout (the GPUs' default, forced here on lavapipe): greedy
// speculative output is plain output while the context grows across the first split
// boundary (position 256) inside the verify passes. Two prompts: a check of the mechanism.
TEST_F(Spec, split_attention_keeps_speculative_output_exact) {
    const test::ScopedEnv layout("TANDEM_ATTENTION_LAYOUT", "split");
    const Pair p = make_pair(DType::Q8_0, 0.0f, 21);
    Loaded t = load_spec(p.target, 512);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    for (int i = 0; i < 2; ++i) {
        const auto prompt = random_prompt_spec(4000 + uint64_t(i), 238 + size_t(i) * 5, 400);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(28), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ForcedDrafter forced(plain->tokens, prompt.size(), 0.7, t.model->info().n_vocab, 9 + uint64_t(i));
        Drafter* chain[] = {&forced};
        SpecParams sp;
        sp.draft_max = 3;
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(28), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        ASSERT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        EXPECT_GT(spec->stats.accepted, 0u);
    }
}

// The GPUs' mat-vec matmul layout ("mv", forced here on lavapipe): greedy speculative
// output is plain output, so decode and verify passes (batch widths 1 and 4), including the
// grouped q/k/v matmuls, gate/up with the GLU epilogue (graph/fusion_glu.h) and the fused
// residual adds, compute the same bits. Three short prompts: a check of the mechanism.
TEST_F(Spec, mv_matmul_layout_keeps_speculative_output_exact) {
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    const Pair p = make_pair(DType::Q8_0, 0.0f, 23);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    for (int i = 0; i < 3; ++i) {
        const auto prompt = random_prompt_spec(5000 + uint64_t(i), 12, 400);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(24), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ForcedDrafter forced(plain->tokens, prompt.size(), 0.7, t.model->info().n_vocab, 11 + uint64_t(i));
        Drafter* chain[] = {&forced};
        SpecParams sp;
        sp.draft_max = 3;
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(24), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        ASSERT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        EXPECT_GT(spec->stats.accepted, 0u);
    }
}

TEST_F(Spec, forced_drafter_is_exact_and_its_acceptance_follows_A) {
    const Pair p = make_pair(DType::F32, 0.0f, 3);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    for (double a : {0.0, 0.5, 1.0}) {
        uint64_t first_drafted = 0, first_accepted = 0;
        for (int i = 0; i < 8; ++i) {
            const auto prompt = random_prompt_spec(77 + uint64_t(i), 8, 400);
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(48), {});
            ASSERT_TRUE(plain.ok());
            ForcedDrafter forced(plain->tokens, prompt.size(), a, t.model->info().n_vocab, 5 + uint64_t(i));
            Drafter* chain[] = {&forced};
            SpecParams sp;
            sp.draft_max = 3;
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(48), chain, sp, {});
            ASSERT_TRUE(spec.ok()) << spec.error().message();
            ASSERT_EQ(spec->gen.tokens, plain->tokens) << "A=" << a;
            first_drafted += spec->stats.drafted_at.empty() ? 0 : spec->stats.drafted_at[0];
            first_accepted += spec->stats.accepted_at.empty() ? 0 : spec->stats.accepted_at[0];
        }
        ASSERT_GT(first_drafted, 30u);
        const double rate = double(first_accepted) / double(first_drafted);
        EXPECT_NEAR(rate, a, 0.15) << "first-position acceptance for A=" << a;
    }
}

TEST_F(Spec, verify_pass_logits_equal_single_token_decode_bit_for_bit) {
    const Pair p = make_pair(DType::Q8_0, 0.0f, 9);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const uint32_t n_vocab = t.model->info().n_vocab;
    const auto prompt = random_prompt_spec(5, 10, 400);
    const std::vector<int32_t> block = {17, 250, 3, 99, 140, 7};  // [last, d1..d5]
    // batched: one verify pass over the block
    ASSERT_TRUE(test::prefill(runner, seq, prompt, 256, false, {}).ok());
    std::vector<int32_t> pos, rows;
    for (size_t i = 0; i < block.size(); ++i) {
        pos.push_back(int32_t(prompt.size() + i));
        rows.push_back(int32_t(i));
    }
    auto v = runner.forward({block, pos, seq, rows});
    ASSERT_TRUE(v.ok());
    const std::vector<float> batched(v->logits, v->logits + block.size() * n_vocab);
    // one token at a time
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    ASSERT_TRUE(test::prefill(runner, seq, prompt, 256, false, {}).ok());
    for (size_t i = 0; i < block.size(); ++i) {
        const int32_t tok = block[i], ps = pos[i], row = 0;
        auto o = runner.forward({std::span<const int32_t>(&tok, 1), std::span<const int32_t>(&ps, 1), seq,
                                 std::span<const int32_t>(&row, 1)});
        ASSERT_TRUE(o.ok());
        EXPECT_EQ(std::memcmp(o->logits, batched.data() + i * n_vocab, n_vocab * sizeof(float)), 0)
            << "row " << i << " of the verify pass differs from decode";
    }
}

// ---------------------------------------------------------------- edge cases

// Proposes a fixed list of tokens (or nothing) whatever the history.
class ListDrafter : public Drafter {
public:
    explicit ListDrafter(std::vector<int32_t> t) : tokens_(std::move(t)) {}
    const std::string& name() const override { return name_; }
    Status begin(std::span<const int32_t>) override { return {}; }
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override {
        std::vector<int32_t> out(tokens_.begin(), tokens_.begin() + std::min<size_t>(tokens_.size(), req.max));
        return out;
    }
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }

private:
    std::string name_ = "list";
    std::vector<int32_t> tokens_;
};

TEST_F(Spec, stop_token_inside_an_accepted_draft_ends_generation_where_plain_decoding_does) {
    const Pair p = make_pair(DType::F32, 0.0f, 21);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_spec(8, 8, 400);
    auto ref = generate(runner, nullptr, seq, prompt, greedy_spec(40), {});
    ASSERT_TRUE(ref.ok());
    GenerateParams gp = greedy_spec(40);
    gp.stop_tokens = {ref->tokens[13]};  // a token in the middle of a round
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto plain = generate(runner, nullptr, seq, prompt, gp, {});
    ASSERT_TRUE(plain.ok());
    ForcedDrafter forced(ref->tokens, prompt.size(), 1.0, t.model->info().n_vocab, 1);
    Drafter* chain[] = {&forced};
    SpecParams sp;
    sp.draft_max = 5;
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto spec = generate_speculative(runner, nullptr, seq, prompt, gp, chain, sp, {});
    ASSERT_TRUE(spec.ok());
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_EQ(to_string(spec->gen.stop_reason), "stop_token");
}

TEST_F(Spec, token_budget_inside_a_round_and_a_full_context_are_respected) {
    const Pair p = make_pair(DType::F32, 0.0f, 22);
    Loaded t = load_spec(p.target, 48);  // context of 48 tokens
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_spec(9, 10, 400);
    for (int n : {1, 2, 7, 13}) {  // not multiples of k + 1
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(n), {});
        ASSERT_TRUE(plain.ok());
        ForcedDrafter forced(plain->tokens, prompt.size(), 1.0, t.model->info().n_vocab, 2);
        Drafter* chain[] = {&forced};
        SpecParams sp;
        sp.draft_max = 5;
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(n), chain, sp, {});
        ASSERT_TRUE(spec.ok());
        EXPECT_EQ(spec->gen.tokens.size(), size_t(n));
        EXPECT_EQ(spec->gen.tokens, plain->tokens);
    }
    // unlimited: runs into the context; k shrinks as the end approaches
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(-1), {});
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(to_string(plain->stop_reason), "context");
    ForcedDrafter forced(plain->tokens, prompt.size(), 1.0, t.model->info().n_vocab, 3);
    Drafter* chain[] = {&forced};
    SpecParams sp;
    sp.draft_max = 16;  // larger than what remains at the end
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(-1), chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_EQ(to_string(spec->gen.stop_reason), "context");
}

TEST_F(Spec, a_drafter_that_proposes_nothing_gives_plain_steps) {
    const Pair p = make_pair(DType::F32, 0.0f, 23);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_spec(10, 8, 400);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(20), {});
    ASSERT_TRUE(plain.ok());
    ListDrafter empty({});
    Drafter* chain[] = {&empty};
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(20), chain, SpecParams{}, {});
    ASSERT_TRUE(spec.ok());
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_EQ(spec->stats.rounds, 0u);
    EXPECT_EQ(spec->stats.plain_steps, 19u);  // the first token comes from the prefill
}

TEST_F(Spec, chain_uses_the_first_drafter_that_proposes_and_stays_exact) {
    const Pair p = make_pair(DType::F32, 0.0f, 24);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_spec(12, 8, 400);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(30), {});
    ASSERT_TRUE(plain.ok());
    ListDrafter empty({});
    ForcedDrafter forced(plain->tokens, prompt.size(), 0.7, t.model->info().n_vocab, 4);
    Drafter* chain[] = {&empty, &forced};
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    SpecParams sp;
    sp.draft_max = 4;
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(30), chain, sp, {});
    ASSERT_TRUE(spec.ok());
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_GT(spec->stats.drafters[0].calls_gen, 0u);
    EXPECT_EQ(spec->stats.drafters[0].gen_drafts, 0u);
    EXPECT_GT(spec->stats.drafters[1].gen_drafts, 0u);
}

TEST_F(Spec, drafter_proposing_ids_outside_the_vocabulary_is_turned_off_and_the_output_stays_exact) {
    const Pair p = make_pair(DType::F32, 0.0f, 25);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_spec(1, 4, 400);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(8), {});
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    ListDrafter bad({5, 999999});
    Drafter* chain[] = {&bad};
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(8), chain, SpecParams{}, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    const std::string& why = spec->stats.drafters[0].failure;
    EXPECT_NE(why.find("outside the vocabulary"), std::string::npos) << why;
    EXPECT_EQ(spec->stats.drafted, 0u) << "a proposal with a bad id is never verified";
    EXPECT_EQ(spec->stats.drafters[0].calls_gen, 1u) << "the drafter is not asked again";
}

TEST_F(Spec, skip_streak_and_auto_mode_keep_output_exact_when_nothing_is_accepted) {
    const Pair p = make_pair(DType::F32, 0.0f, 26);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_spec(13, 8, 400);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_spec(60), {});
    ASSERT_TRUE(plain.ok());
    for (int mode = 0; mode < 2; ++mode) {
        ForcedDrafter forced(plain->tokens, prompt.size(), 0.0, t.model->info().n_vocab, 6);
        Drafter* chain[] = {&forced};
        SpecParams sp;
        sp.draft_max = 4;
        if (mode == 0) sp.skip_streak = 2;
        else sp.auto_k = true;
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_spec(60), chain, sp, {});
        ASSERT_TRUE(spec.ok());
        EXPECT_EQ(spec->gen.tokens, plain->tokens);
        EXPECT_GT(spec->stats.plain_steps, 0u) << (mode ? "auto" : "skip streak");
        // How soon auto mode stops drafting depends on the measured step times;
        // tests/speculative/goodput_test.cpp checks that decision on given timings.
    }
}

// ---------------------------------------------------------------- vocabulary

TEST_F(Spec, incompatible_draft_vocabulary_is_refused_listing_the_first_mismatches) {
    const std::string dir = test::make_temp_dir("vocab");
    auto tiny = synth::qwen3_preset("tiny");
    auto small = synth::qwen3_preset("small");
    ASSERT_TRUE(tiny.ok() && small.ok());
    synth::Qwen3SynthOptions o;
    ASSERT_TRUE(synth::synth_qwen3_gguf(dir + "/a.gguf", *tiny, o).ok());
    ASSERT_TRUE(synth::synth_qwen3_gguf(dir + "/b.gguf", *small, o).ok());
    auto a = Model::load(dir + "/a.gguf", test::build_tree_plugins(), device());
    auto b = Model::load(dir + "/b.gguf", test::build_tree_plugins(), device());
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(check_vocab_compatible(*(*a)->tokenizer(), *(*a)->tokenizer()).ok());
    auto st = check_vocab_compatible(*(*a)->tokenizer(), *(*b)->tokenizer());
    ASSERT_FALSE(st.ok());
    const std::string& m = st.error().message();
    EXPECT_NE(m.find("incompatible"), std::string::npos) << m;
    EXPECT_NE(m.find("differ by more than 128"), std::string::npos) << m;
}

// ---------------------------------------------------------------- sampling (invariant 2)

TEST_F(Spec, speculative_sampling_preserves_the_target_distribution) {
    // The joint distribution of the first two sampled tokens, plain vs
    // speculative (a drafter that always proposes one token), over many seeds;
    // a chi-square statistic on the pooled table must stay below a loose bound.
    const Pair p = make_pair(DType::F32, 0.0f, 31);
    Loaded t = load_spec(p.target);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_spec(14, 6, 400);
    GenerateParams gp;
    gp.max_tokens = 2;
    gp.ignore_eog = true;
    gp.sampling.temperature = 1.5f;  // flat enough for several outcomes
    gp.sampling.top_k = 4;
    gp.sampling.top_p = 1.0f;
    gp.sampling.min_p = 0.0f;
    auto greedy_ref = generate(runner, nullptr, seq, prompt, greedy_spec(2), {});
    ASSERT_TRUE(greedy_ref.ok());
    ListDrafter fixed({greedy_ref->tokens[1]});
    Drafter* chain[] = {&fixed};
    std::map<std::pair<int, int>, int> hp, hs;
    const int n = 1200;
    uint64_t drafted = 0;
    for (int i = 0; i < n; ++i) {
        gp.sampling.seed = 100000 + uint64_t(i);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto a = generate(runner, nullptr, seq, prompt, gp, {});
        ASSERT_TRUE(a.ok());
        hp[{a->tokens[0], a->tokens[1]}]++;
        gp.sampling.seed = 900000 + uint64_t(i);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        // a third token leaves the budget room for the draft of the second (with 2 nothing is drafted)
        gp.max_tokens = 3;
        auto b = generate_speculative(runner, nullptr, seq, prompt, gp, chain, SpecParams{}, {});
        gp.max_tokens = 2;
        ASSERT_TRUE(b.ok());
        hs[{b->gen.tokens[0], b->gen.tokens[1]}]++;
        drafted += b->stats.drafted;
    }
    EXPECT_GE(drafted, uint64_t(n));  // the second token was drafted in every run
    // two-sample chi-square over cells with enough mass
    const auto [chi2, dof] = test::two_sample_chi_square(hp, hs);
    ASSERT_GT(dof, 2);
    // mean dof, sd sqrt(2 dof): 6 sd is a deliberately loose bound (fixed seeds: deterministic)
    EXPECT_LT(chi2, dof + 6.0 * std::sqrt(2.0 * dof)) << "chi2 " << chi2 << " with " << dof << " cells";
}

}  // namespace
}  // namespace tdm
