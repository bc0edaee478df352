// SPDX-License-Identifier: Apache-2.0
// tests/engine/warmup_test.cpp: the warm-up at load (engine/warmup.h) leaves nothing behind but
// compiled graphs: the target's KV pool has every block free and its one sequence slot
// available, the MTP head's KV (one sequence) is free for another drafter, and a run after it
// gives the tokens and, under fixed k, the rounds of a run without it (Qwen3.5: recurrent
// states and the MTP head; Qwen3 plain). With a server's pool of several slots and a head, every
// slot and head sequence is free and clean after it. N-gram drafters are not run, and the verify
// widths fit the smallest context. Also which verify widths it runs for a draft_max.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/batch_engine.h"
#include "engine/generate.h"
#include "engine/warmup.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

constexpr int kWarmupDraftMax = 3;

struct WarmupTarget {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

// One sequence slot, as `tandem run` makes it, or a server's n_seq (`serve --parallel`): the
// warm-up must give its scratch sequence back.
WarmupTarget load_warmup(const std::string& path, uint32_t n_ctx = 128, uint32_t n_seq = 1) {
    WarmupTarget t;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = n_ctx;
    kc.n_seq_max = n_seq;
    kc.n_checkpoints = kWarmupDraftMax + 2;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "test", t.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

std::string qwen35_model_warmup() {
    static const std::string path = [] {
        auto shape = synth::qwen35_preset("tiny");
        synth::Qwen35SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 23;
        o.mtp = true;
        const std::string p = test::make_temp_dir("warmup") + "/q35.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen35_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

std::string qwen3_model_warmup() {
    static const std::string path = [] {
        auto shape = synth::qwen3_preset("tiny");
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::F16;
        const std::string p = test::make_temp_dir("warmup") + "/q3.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

GenerateParams greedy_warmup(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    gp.n_batch = 16;
    return gp;
}

SamplerParams warmup_greedy_sampling() {
    SamplerParams s;
    s.temperature = 0;
    return s;
}

std::unique_ptr<DraftHeadDrafter> warmup_mtp_head(const WarmupTarget& t, uint32_t n_seq = 1) {
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    EXPECT_NE(e, nullptr);
    if (!e) return nullptr;
    DraftHeadOptions o;
    o.kv.n_ctx = 128;
    o.kv.n_seq_max = n_seq;  // drafters at once: one for `run`, parallel + 1 for `serve`
    auto h = DraftHeadDrafter::create(*e, "mtp", t.model->shared_source(), *t.model, *t.kv, test::test_device(),
                                      test::test_pipelines(), o);
    EXPECT_TRUE(h.ok()) << h.error().message();
    return h.ok() ? std::move(h).value() : nullptr;
}

// A speculative run of fixed k on the pool's one sequence, which it then gives back.
SpecResult warmup_spec_run(Runner& runner, Drafter* head, std::span<const int32_t> prompt) {
    const int seq = *runner.kv().add_sequence();
    Drafter* chain[] = {head};
    SpecParams sp;
    sp.draft_max = kWarmupDraftMax;
    auto r = generate_speculative(runner, nullptr, seq, prompt, greedy_warmup(12), chain, sp, {});
    EXPECT_TRUE(r.ok()) << r.error().message();
    runner.kv().free_sequence(seq);
    return r.ok() ? std::move(r).value() : SpecResult{};
}

class Warmup : public test::DeviceTest {};

TEST_F(Warmup, verify_widths_cover_each_matmul_variant_up_to_draft_max_plus_one) {
    EXPECT_EQ(warmup_verify_widths(0), std::vector<uint32_t>{});
    EXPECT_EQ(warmup_verify_widths(1), (std::vector<uint32_t>{2}));
    EXPECT_EQ(warmup_verify_widths(2), (std::vector<uint32_t>{2, 3}));
    EXPECT_EQ(warmup_verify_widths(3), (std::vector<uint32_t>{2, 4}));
    EXPECT_EQ(warmup_verify_widths(6), (std::vector<uint32_t>{2, 4, 7}));
    EXPECT_EQ(warmup_verify_widths(16), (std::vector<uint32_t>{2, 4, 8}));
}

TEST_F(Warmup, qwen35_with_mtp_leaves_no_kv_and_no_head_state_and_the_run_is_unchanged) {
    const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    // without the warm-up: a process of its own (model, pool, head)
    SpecResult cold;
    {
        WarmupTarget t = load_warmup(qwen35_model_warmup());
        ASSERT_TRUE(t.kv);
        Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
        auto head = warmup_mtp_head(t);
        ASSERT_TRUE(head);
        cold = warmup_spec_run(runner, head.get(), prompt);
    }
    WarmupTarget t = load_warmup(qwen35_model_warmup());
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    auto head = warmup_mtp_head(t);
    ASSERT_TRUE(head);
    const uint32_t free_before = t.kv->free_blocks();
    Drafter* chain[] = {head.get()};
    SpecParams sp;
    sp.draft_max = kWarmupDraftMax;
    sp.auto_k = true;  // the front ends' default: the head's first round drafts 1
    auto report = warm_up(runner, chain, sp, warmup_greedy_sampling(), 16);
    ASSERT_TRUE(report.ok()) << report.error().message();
    EXPECT_EQ(report->drafters, 1u);
    EXPECT_TRUE(report->verify_widths.empty()) << "a head alone: its first round is the generation's";
    EXPECT_EQ(report->prompt_tokens, 1u);
    EXPECT_GT(runner.cached_graphs(), 0u);
    // the target: every block free, and its one sequence slot available again
    EXPECT_EQ(t.kv->free_blocks(), free_before);
    EXPECT_EQ(t.kv->free_blocks(), t.kv->n_blocks());
    auto seq = t.kv->add_sequence();
    ASSERT_TRUE(seq.ok()) << seq.error().message();
    EXPECT_EQ(t.kv->state_length(*seq), 0u);
    t.kv->free_sequence(*seq);
    // the head: its KV's one sequence is free for another drafter of it
    std::unique_ptr<DraftHeadDrafter> other = head->another();
    EXPECT_TRUE(other->begin(prompt).ok()) << "the warm-up's drafter kept its sequence of the head's KV";
    other.reset();
    // and the run after it is the run without it, round for round
    const SpecResult warm = warmup_spec_run(runner, head.get(), prompt);
    EXPECT_EQ(warm.gen.tokens, cold.gen.tokens);
    EXPECT_EQ(warm.stats.rounds, cold.stats.rounds);
    EXPECT_EQ(warm.stats.drafted, cold.stats.drafted);
    EXPECT_EQ(warm.stats.accepted, cold.stats.accepted);
    EXPECT_GT(warm.stats.drafted, 0u);
    // exact: the plain tokens
    const int s = *t.kv->add_sequence();
    auto plain = generate(runner, nullptr, s, prompt, greedy_warmup(12), {});
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    EXPECT_EQ(warm.gen.tokens, plain->tokens);
}

TEST_F(Warmup, plain_qwen3_runs_the_decode_step_only_and_gives_the_sequence_back) {
    WarmupTarget t = load_warmup(qwen3_model_warmup());
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const std::vector<int32_t> prompt = {1, 17, 300, 42, 42, 9};
    const int seq0 = *t.kv->add_sequence();
    auto before = generate(runner, nullptr, seq0, prompt, greedy_warmup(8), {});
    ASSERT_TRUE(before.ok()) << before.error().message();
    t.kv->free_sequence(seq0);
    const size_t graphs = runner.cached_graphs();

    auto report = warm_up(runner, {}, SpecParams{}, warmup_greedy_sampling(), 16);
    ASSERT_TRUE(report.ok()) << report.error().message();
    EXPECT_EQ(report->drafters, 0u);
    EXPECT_TRUE(report->verify_widths.empty());
    EXPECT_EQ(report->prompt_tokens, 1u);
    // its one-row prefill is the decode step's graph, which was there already: nothing new
    EXPECT_EQ(runner.cached_graphs(), graphs);
    EXPECT_EQ(t.kv->free_blocks(), t.kv->n_blocks());
    const int seq = *t.kv->add_sequence();
    auto after = generate(runner, nullptr, seq, prompt, greedy_warmup(8), {});
    ASSERT_TRUE(after.ok()) << after.error().message();
    EXPECT_EQ(after->tokens, before->tokens);
}

// `tandem serve --parallel 4` with its default MTP head: the warm-up runs on a scratch
// sequence before the engine takes the pool's sequences as slots (cmd_serve.cpp), so every
// slot must then be there and clean: each of the 4 sequences, every KV block free, each
// slot's recurrent state at length 0 and zero, and all parallel + 1 sequences of the head's
// KV free for the requests' drafters. Four requests at once then give plain decoding's tokens.
TEST_F(Warmup, every_server_slot_and_head_sequence_is_free_and_clean_after_it) {
    constexpr uint32_t kParallel = 4;
    WarmupTarget t = load_warmup(qwen35_model_warmup(), 128, kParallel);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    auto head = warmup_mtp_head(t, kParallel + 1);
    ASSERT_TRUE(head);
    Drafter* chain[] = {head.get()};
    SpecParams sp;
    sp.draft_max = kWarmupDraftMax;
    sp.auto_k = true;
    auto report = warm_up(runner, chain, sp, warmup_greedy_sampling(), 16);
    ASSERT_TRUE(report.ok()) << report.error().message();
    EXPECT_EQ(report->drafters, 1u);

    BatchEngineOptions eo;
    eo.n_batch = 16;
    eo.hidden_point = head->hidden_point();
    auto engine = BatchEngine::create(runner, nullptr, eo);
    ASSERT_TRUE(engine.ok()) << engine.error().message();
    EXPECT_EQ((*engine)->slots(), kParallel) << "the warm-up kept a sequence of the pool";
    EXPECT_EQ((*engine)->kv_blocks_free(), (*engine)->kv_blocks_total());
    for (int seq = 0; seq < int(kParallel); ++seq) {
        EXPECT_EQ(t.kv->state_length(seq), 0u) << "slot " << seq;
        EXPECT_EQ(t.kv->reserved_tokens(seq), 0u) << "slot " << seq;
        for (uint32_t i = 0; i < t.kv->n_states(); ++i) {
            auto st = t.kv->read_state(seq, i);
            ASSERT_TRUE(st.ok()) << st.error().message();
            EXPECT_TRUE(std::all_of(st->begin(), st->end(), [](float v) { return v == 0.0f; }))
                << "slot " << seq << ", recurrent state " << i << " holds the warm-up's";
        }
    }
    // the head's KV: every sequence free, and no more than that
    const std::vector<int32_t> probe = {5, 7, 11};
    {
        std::vector<std::unique_ptr<DraftHeadDrafter>> held;
        for (uint32_t i = 0; i < kParallel + 1; ++i) {
            held.push_back(head->another());
            EXPECT_TRUE(held.back()->begin(probe).ok()) << "head sequence " << i << " is still taken";
        }
        EXPECT_FALSE(head->another()->begin(probe).ok()) << "the head's KV holds more sequences than asked";
    }

    // four requests at once, each with its own drafter of the head and its drafts in the same
    // passes: plain decoding's tokens
    const std::vector<std::vector<int32_t>> prompts = {{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3, 5}, {8, 9, 7}, {2, 7, 1, 8, 2}};
    std::vector<std::vector<int32_t>> want(prompts.size());
    {
        WarmupTarget ref = load_warmup(qwen35_model_warmup());
        ASSERT_TRUE(ref.kv);
        Runner plain(*ref.model, *ref.kv, test::test_device(), test::test_pipelines());
        const int seq = *ref.kv->add_sequence();
        for (size_t i = 0; i < prompts.size(); ++i) {
            ASSERT_TRUE(ref.kv->truncate(seq, 0).ok());
            auto r = generate(plain, nullptr, seq, prompts[i], greedy_warmup(10), {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            want[i] = r->tokens;
        }
    }
    std::vector<SessionResult> got(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
        SessionRequest r;
        r.prompt = prompts[i];
        r.params = greedy_warmup(10);
        r.spec.draft_max = kWarmupDraftMax;  // fixed k: every round drafts, whatever the controller would
        DrafterSlot ds;
        ds.owned = head->another();
        r.drafters.push_back(std::move(ds));
        r.on_done = [&got, i](const SessionResult& res) { got[i] = res; };
        (*engine)->add(std::move(r));
    }
    while ((*engine)->step()) {
    }
    uint64_t drafted = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_TRUE(got[i].error.empty()) << got[i].error;
        EXPECT_EQ(got[i].tokens, want[i]) << "request " << i;
        drafted += got[i].spec.drafted;
    }
    EXPECT_GT(drafted, 0u) << "no request drafted with the head";
}

// An n-gram drafter's stand-in: host-side, never asked by the warm-up.
class WarmupCountingNgramDrafter : public Drafter {
public:
    const std::string& name() const override { return name_; }
    DrafterKind kind() const override { return DrafterKind::ngram; }
    Status begin(std::span<const int32_t>) override {
        ++calls;
        return {};
    }
    Result<std::vector<int32_t>> draft(const DraftRequest&) override {
        ++calls;
        return std::vector<int32_t>{};
    }
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override {
        ++calls;
        return {};
    }
    int calls = 0;

private:
    std::string name_ = "counting";
};

TEST_F(Warmup, ngram_drafters_are_not_run_and_the_verify_widths_fit_the_smallest_context) {
    WarmupTarget t = load_warmup(qwen3_model_warmup(), 16);
    ASSERT_TRUE(t.kv);
    ASSERT_EQ(t.kv->capacity_tokens(), 16u);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    WarmupCountingNgramDrafter ngram;
    Drafter* chain[] = {&ngram};
    SpecParams sp;
    sp.draft_max = 16;
    auto report = warm_up(runner, chain, sp, warmup_greedy_sampling(), 16);
    ASSERT_TRUE(report.ok()) << report.error().message();
    EXPECT_EQ(ngram.calls, 0);
    EXPECT_EQ(report->drafters, 0u);
    // one prompt token in the KV after the plain pass: room for 8 rows before the last position
    EXPECT_EQ(report->prompt_tokens, 1u);
    EXPECT_EQ(report->verify_widths, (std::vector<uint32_t>{2, 4, 8}));
    EXPECT_EQ(t.kv->free_blocks(), t.kv->n_blocks());
}

}  // namespace
}  // namespace tdm
