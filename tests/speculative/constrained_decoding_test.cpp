// SPDX-License-Identifier: Apache-2.0
// tests/speculative/constrained_decoding_test.cpp: generation under a token constraint
// (sampling/token_constraint.h; speculative/constrained_round.h; the engine's record step):
//   - plain greedy picks, at every step, the best token the constraint allows in the very
//     logits row it came from (a reference that masks the host rows itself), and stops once
//     the constraint is complete;
//   - speculative greedy with a constraint equals plain greedy with it, for the n-gram
//     drafter on a repeating target and for Qwen3.5's MTP head, batched with an
//     unconstrained session that stays exact too;
//   - a draft is cut at its first forbidden token, which is never verified, and the cuts are
//     counted;
//   - sampling with a constraint never emits a token it forbids, with and without drafts.
// The constraint is the test's own: a rule over (position, token), which makes every verify
// row's mask differ from the one before it. The checks are of exactness, so a few prompts
// each suffice (the suite's time is short).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "engine/batch_engine.h"
#include "engine/generate.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/constrained_round.h"
#include "speculative/draft_head.h"
#include "speculative/forced_drafter.h"
#include "speculative/plugin_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

using Tokens = std::vector<int32_t>;
// Whether `token` may be the output's token number `pos` (0-based).
using Rule = std::function<bool(uint32_t pos, int32_t token)>;

// A regular language over token ids: token p of the output must satisfy the rule, and the
// output is complete after `length` tokens.
class RuleConstraint final : public TokenConstraint {
public:
    RuleConstraint(Rule rule, uint32_t length, uint32_t n_vocab)
        : rule_(std::move(rule)), length_(length), n_vocab_(n_vocab) {}
    void mask(float* logits, int n_vocab) override {
        for (int t = 0; t < n_vocab; ++t)
            if (!allows(t)) logits[t] = -std::numeric_limits<float>::infinity();
    }
    bool allows(int32_t token) override {
        return token >= 0 && uint32_t(token) < n_vocab_ && pos_ < length_ && rule_(pos_, token);
    }
    Status advance(int32_t token) override {
        if (!allows(token)) return Error::format("token {} is not allowed at position {}", token, pos_);
        ++pos_;
        return {};
    }
    bool complete() const override { return pos_ >= length_; }
    std::unique_ptr<TokenConstraint> clone() const override { return std::make_unique<RuleConstraint>(*this); }

private:
    Rule rule_;
    uint32_t length_, n_vocab_;
    uint32_t pos_ = 0;
};

// From position 12 on, the fifth id of every group of 8 (the repeating model's cycles) is
// forbidden: an n-gram drafter proposing the prompt's cycle is cut there, and a row before
// and after it in one round are masked differently.
const Rule kNoFifth = [](uint32_t pos, int32_t t) { return pos < 12 || t % 8 != 4; };
// Two thirds of the vocabulary forbidden, which third depending on the position.
const Rule kThird = [](uint32_t pos, int32_t t) { return (uint32_t(t) + pos) % 3 == 0; };
// Every other token id, by position.
const Rule kHalf = [](uint32_t pos, int32_t t) { return (uint32_t(t) + pos) % 2 == 0; };

std::shared_ptr<const TokenConstraint> constraint(const Rule& rule, uint32_t n_vocab, uint32_t length = 1u << 20) {
    return std::make_shared<RuleConstraint>(rule, length, n_vocab);
}

// Every token follows the rule at its position.
void expect_follows(const Rule& rule, const Tokens& tokens, const std::string& label) {
    for (size_t i = 0; i < tokens.size(); ++i)
        EXPECT_TRUE(rule(uint32_t(i), tokens[i])) << label << ": token " << tokens[i] << " at " << i;
}

GenerateParams params(int n, std::shared_ptr<const TokenConstraint> c = nullptr, float temperature = 0,
                      uint64_t seed = 0) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = temperature;
    gp.sampling.seed = seed;
    gp.ignore_eog = true;
    gp.n_batch = 16;
    gp.constraint = std::move(c);
    return gp;
}

Tokens random_prompt(uint64_t seed, size_t len, int32_t hi) {
    std::mt19937_64 rng(seed);
    Tokens p(len);
    for (auto& t : p) t = int32_t(rng() % uint64_t(hi));
    return p;
}

// A target with its pool and runner; `n_seq` sequences.
struct Target {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;
    uint32_t n_vocab() const { return model->info().n_vocab; }
};

Target load(const std::string& path, uint32_t n_seq) {
    Target t;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_seq_max = n_seq;
    kc.n_checkpoints = 8;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "test", t.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    t.kv = std::move(kv).value();
    t.runner = std::make_unique<Runner>(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    return t;
}

const std::string& qwen3_model() {
    static const std::string path = [] {
        auto shape = synth::qwen3_preset("tiny");
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 41;
        const std::string p = test::make_temp_dir("constrained") + "/q3.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

// Greedy output cycles through groups of 8 ids: what an n-gram drafter finds in its history.
synth::Qwen3SynthOptions repeating_options() {
    synth::Qwen3SynthOptions o;
    o.weight_type = DType::Q8_0;
    o.seed = 42;
    o.repeating = true;
    o.repeat_period = 8;
    return o;
}

const std::string& repeating_model() {
    static const std::string path = [] {
        auto shape = synth::qwen3_preset("tiny");
        const std::string p = test::make_temp_dir("constrained") + "/q3-repeat.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, repeating_options()).ok());
        return p;
    }();
    return path;
}

const std::string& qwen35_mtp_model() {
    static const std::string path = [] {
        auto shape = synth::qwen35_preset("tiny");
        synth::Qwen35SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 43;
        o.mtp = true;
        const std::string p = test::make_temp_dir("constrained") + "/q35.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen35_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

// Plain decoding of one request alone, on a sequence of its own.
Tokens plain_tokens(Target& t, const Tokens& prompt, const GenerateParams& gp, StopReason* stop = nullptr) {
    const int seq = *t.kv->add_sequence();
    auto r = generate(*t.runner, nullptr, seq, prompt, gp, {});
    t.kv->free_sequence(seq);
    EXPECT_TRUE(r.ok()) << r.error().message();
    if (!r.ok()) return {};
    if (stop) *stop = r->stop_reason;
    return r->tokens;
}

// A session of the batching engine and what it ended with.
struct Job {
    SessionResult got;
    bool done = false;
};

SessionRequest request(Job& job, const Tokens& prompt, GenerateParams gp, std::unique_ptr<Drafter> drafter,
                       int draft_max) {
    SessionRequest r;
    r.prompt = prompt;
    r.params = std::move(gp);
    r.spec.draft_max = draft_max;
    if (drafter) r.drafters.push_back(DrafterSlot{std::move(drafter), nullptr});
    r.on_done = [&job](const SessionResult& res) {
        job.got = res;
        job.done = true;
    };
    return r;
}

void run_all(BatchEngine& e, const std::vector<Job>& jobs) {
    for (int guard = 0; guard < 100000 && e.step(); ++guard) {
    }
    for (const Job& j : jobs) ASSERT_TRUE(j.done);
}

std::unique_ptr<Drafter> ngram_drafter(uint32_t n_vocab) {
    const DrafterEntry* e = test::build_tree_plugins().find_drafter("ngram-simple");
    EXPECT_NE(e, nullptr);
    if (!e) return nullptr;
    auto d = PluginDrafter::create(*e, {{"ngram_size_n", "2"}, {"ngram_size_m", "16"}, {"ngram_min_hits", "1"},
                                        {"draft_max", "8"}, {"n_vocab", std::to_string(n_vocab)}});
    EXPECT_TRUE(d.ok()) << d.error().message();
    return d.ok() ? std::move(d).value() : nullptr;
}

// Proposes the reference continuation `full` with its third draft one id off: two drafts the
// target accepts, then one that kThird forbids (it allows t at a position only where it
// forbids t + 1).
class ScriptedDrafter final : public Drafter {
public:
    ScriptedDrafter(Tokens full, uint32_t n_vocab) : full_(std::move(full)), n_vocab_(n_vocab) {}
    const std::string& name() const override { return name_; }
    Status begin(std::span<const int32_t>) override { return {}; }
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override {
        Tokens out;
        for (uint32_t i = 0; i < req.max && req.history.size() + i < full_.size(); ++i)
            out.push_back(i == 2 ? int32_t((uint32_t(full_[req.history.size() + i]) + 1) % n_vocab_)
                                 : full_[req.history.size() + i]);
        return out;
    }
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }

private:
    std::string name_ = "scripted";
    Tokens full_;
    uint32_t n_vocab_;
};

class ConstrainedDecoding : public test::DeviceTest {};

TEST_F(ConstrainedDecoding, plain_greedy_takes_the_best_allowed_token_of_each_row_and_stops_when_complete) {
    Target t = load(qwen3_model(), 2);
    ASSERT_TRUE(t.runner);
    for (uint64_t p = 0; p < 3; ++p) {
        const Tokens prompt = random_prompt(500 + p, 5 + 3 * p, 500);
        const uint32_t length = 24;
        // the rows behind each token, as the model gave them
        std::vector<std::vector<float>> rows;
        const LogitsSink sink = [&](const float* row, uint32_t n) { rows.emplace_back(row, row + n); };
        const int seq = *t.kv->add_sequence();
        auto r = generate(*t.runner, nullptr, seq, prompt, params(40, constraint(kThird, t.n_vocab(), length)), {},
                          sink);
        t.kv->free_sequence(seq);
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_EQ(r->tokens.size(), length) << "complete after `length` tokens, before max_tokens";
        EXPECT_EQ(r->stop_reason, StopReason::constraint);
        ASSERT_EQ(rows.size(), r->tokens.size());
        // the reference: the test masks each row itself and takes its argmax
        RuleConstraint ref(kThird, length, t.n_vocab());
        for (size_t i = 0; i < rows.size(); ++i) {
            ref.mask(rows[i].data(), int(t.n_vocab()));
            EXPECT_EQ(r->tokens[i], first_argmax(rows[i].data(), t.n_vocab())) << "prompt " << p << " step " << i;
            ASSERT_TRUE(ref.advance(r->tokens[i]).ok());
        }
        const Tokens free = plain_tokens(t, prompt, params(int(length)));
        EXPECT_NE(free, r->tokens) << "the constraint changed nothing: pick a stricter rule";
    }
}

TEST_F(ConstrainedDecoding, ngram_drafts_give_plain_constrained_greedy_output_beside_an_unconstrained_session) {
    Target t = load(repeating_model(), 4);
    ASSERT_TRUE(t.runner);
    const uint32_t n_vocab = t.n_vocab();
    // a list that cycles, the model's own cycle, given twice: the drafter proposes it on
    const auto shape = *synth::qwen3_preset("tiny");
    const auto opts = repeating_options();
    std::vector<Tokens> prompts;
    for (int32_t first : {256, 131}) {
        Tokens p = random_prompt(uint64_t(first), 6, 100);
        for (int32_t x = first, i = 0; i < 16; ++i, x = synth::qwen3_repeat_successor(shape, opts, x)) p.push_back(x);
        prompts.push_back(p);
    }
    constexpr int kGen = 40;
    std::vector<Tokens> want_constrained, want_free;
    for (const Tokens& p : prompts) {
        want_constrained.push_back(plain_tokens(t, p, params(kGen, constraint(kNoFifth, n_vocab))));
        want_free.push_back(plain_tokens(t, p, params(kGen)));
        expect_follows(kNoFifth, want_constrained.back(), "plain");
    }
    BatchEngineOptions o;
    o.n_batch = 16;
    auto e = BatchEngine::create(*t.runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    // per prompt: a constrained session and an unconstrained one, each with its own drafter
    std::vector<Job> jobs(2 * prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
        (*e)->add(request(jobs[2 * i], prompts[i], params(kGen, constraint(kNoFifth, n_vocab)), ngram_drafter(n_vocab),
                          6));
        (*e)->add(request(jobs[2 * i + 1], prompts[i], params(kGen), ngram_drafter(n_vocab), 6));
    }
    run_all(**e, jobs);
    uint64_t cuts = 0, accepted = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
        const SessionResult& c = jobs[2 * i].got;
        EXPECT_EQ(c.tokens, want_constrained[i]) << "prompt " << i << ", constrained";
        EXPECT_EQ(jobs[2 * i + 1].got.tokens, want_free[i]) << "prompt " << i << ", unconstrained";
        EXPECT_EQ(jobs[2 * i + 1].got.spec.constraint_cuts, 0u);
        cuts += c.spec.constraint_cuts;
        accepted += c.spec.accepted;
        EXPECT_LE(c.spec.constraint_cuts, c.spec.constraint_cut_tokens);
    }
    EXPECT_GT(cuts, 0u) << "no draft met a forbidden token";
    EXPECT_GT(accepted, 0u) << "no draft was accepted: the test shows little";
    EXPECT_GT((*e)->stats().rows, (*e)->stats().steps * 2) << "passes ran several sessions at once";
}

TEST_F(ConstrainedDecoding, mtp_drafts_give_plain_constrained_greedy_output_beside_an_unconstrained_session) {
    Target t = load(qwen35_mtp_model(), 3);
    ASSERT_TRUE(t.runner);
    const uint32_t n_vocab = t.n_vocab();
    const DraftHeadEntry* entry = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    ASSERT_TRUE(entry);
    DraftHeadOptions ho;
    ho.kv.n_ctx = 256;
    ho.kv.n_seq_max = 3;
    auto mtp = DraftHeadDrafter::create(*entry, "mtp", t.model->shared_source(), *t.model, *t.kv, test::test_device(),
                                        test::test_pipelines(), ho);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    constexpr int kGen = 24;
    const Tokens prompts[] = {random_prompt(900, 9, 500), random_prompt(901, 14, 500)};
    std::vector<Tokens> want_constrained, want_free;
    for (const Tokens& p : prompts) {
        want_constrained.push_back(plain_tokens(t, p, params(kGen, constraint(kHalf, n_vocab))));
        want_free.push_back(plain_tokens(t, p, params(kGen)));
    }
    // The synthetic head agrees with its target too rarely to have drafts accepted: for the
    // constrained sessions its proposals (the head still drafts, hears the rounds and sees the
    // target's rows) carry the target's own tokens, each right with probability 0.7, so that
    // rounds accept drafts, reject them and cut them at forbidden ones.
    std::vector<std::unique_ptr<DraftHeadDrafter>> heads;
    BatchEngineOptions o;
    o.n_batch = 8;
    o.hidden_point = (*mtp)->hidden_point();
    auto e = BatchEngine::create(*t.runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < 2; ++i) {
        heads.push_back((*mtp)->another());
        auto forced = std::make_unique<ForcedDrafter>(want_constrained[i], prompts[i].size(), 0.7, n_vocab, 7 + i,
                                                      heads.back().get());
        (*e)->add(request(jobs[i], prompts[i], params(kGen, constraint(kHalf, n_vocab)), std::move(forced), 3));
    }
    (*e)->add(request(jobs[2], prompts[0], params(kGen), (*mtp)->another(), 3));
    run_all(**e, jobs);
    EXPECT_EQ(jobs[0].got.tokens, want_constrained[0]);
    EXPECT_EQ(jobs[1].got.tokens, want_constrained[1]);
    EXPECT_EQ(jobs[2].got.tokens, want_free[0]) << "the unconstrained session";
    uint64_t accepted = 0, rejected = 0, cuts = 0;
    for (size_t i = 0; i < 2; ++i) {
        const SpecStats& st = jobs[i].got.spec;
        accepted += st.accepted;
        rejected += st.drafted - st.accepted;
        cuts += st.constraint_cuts;
    }
    EXPECT_GT(accepted, 0u);
    EXPECT_GT(rejected, 0u);
    EXPECT_GT(cuts, 0u);
    EXPECT_GT(jobs[2].got.spec.drafted, 0u) << "the unconstrained session drafted with its head";
}

TEST_F(ConstrainedDecoding, a_draft_is_cut_at_its_first_forbidden_token_which_is_never_verified) {
    Target t = load(qwen3_model(), 2);
    ASSERT_TRUE(t.runner);
    const uint32_t n_vocab = t.n_vocab();
    const Tokens prompt = random_prompt(77, 11, 500);
    constexpr int kGen = 30;
    const Tokens want = plain_tokens(t, prompt, params(kGen, constraint(kThird, n_vocab)));
    Tokens full = prompt;
    full.insert(full.end(), want.begin(), want.end());
    ScriptedDrafter scripted(full, n_vocab);
    Drafter* chain[] = {&scripted};
    SpecParams sp;
    sp.draft_max = 4;
    const int seq = *t.kv->add_sequence();
    auto r = generate_speculative(*t.runner, nullptr, seq, prompt, params(kGen, constraint(kThird, n_vocab)), chain,
                                  sp, {});
    t.kv->free_sequence(seq);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->gen.tokens, want);
    const SpecStats& st = r->stats;
    EXPECT_GT(st.constraint_cuts, 0u);
    EXPECT_EQ(st.accepted, st.drafted) << "every draft kept was right";
    EXPECT_LE(st.drafted, 2 * st.rounds) << "no round verified the forbidden third draft";
    EXPECT_GE(st.constraint_cut_tokens, st.constraint_cuts);
    EXPECT_GT(st.constraint_cut_tokens, st.constraint_cuts) << "draft_max 4: two drafts cut from a whole proposal";
}

TEST_F(ConstrainedDecoding, sampling_never_emits_a_forbidden_token_with_or_without_drafts) {
    Target t = load(repeating_model(), 3);
    ASSERT_TRUE(t.runner);
    const uint32_t n_vocab = t.n_vocab();
    constexpr int kGen = 32;
    uint64_t odd_free = 0, drafted = 0;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        const Tokens prompt = random_prompt(seed, 12, 500);
        const GenerateParams gp = params(kGen, constraint(kHalf, n_vocab), 1.5f, seed);
        const Tokens solo = plain_tokens(t, prompt, gp);
        EXPECT_EQ(solo.size(), size_t(kGen));
        expect_follows(kHalf, solo, "sampled, plain");
        const int seq = *t.kv->add_sequence();
        std::unique_ptr<Drafter> ngram = ngram_drafter(n_vocab);
        Drafter* chain[] = {ngram.get()};
        SpecParams sp;
        sp.draft_max = 6;
        auto spec = generate_speculative(*t.runner, nullptr, seq, prompt, gp, chain, sp, {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens.size(), size_t(kGen));
        expect_follows(kHalf, spec->gen.tokens, "sampled, speculative");
        drafted += spec->stats.drafted;
        const Tokens free = plain_tokens(t, prompt, params(kGen, nullptr, 1.5f, seed));
        for (size_t i = 0; i < free.size(); ++i) odd_free += !kHalf(uint32_t(i), free[i]);
    }
    EXPECT_GT(odd_free, 0u) << "unconstrained sampling follows the rule anyway: the test shows nothing";
    EXPECT_GT(drafted, 0u);
}

}  // namespace
}  // namespace tdm
