// SPDX-License-Identifier: Apache-2.0
// tests/engine/continuation_test.cpp: resuming a sequence from what its KV
// already holds (chat turns, a restored prompt cache) gives the same tokens and
// logits as running the whole prompt fresh, for attention-only Qwen3 and the
// Qwen3.5 hybrid (recurrent-state checkpoints), plainly and with the MTP head
// (which keeps its own KV and the target's hidden rows across turns); which rows of a
// pass leave a recurrent-state checkpoint. Also: cancellation before and during generation.
#include <gtest/gtest.h>

#include <atomic>

#include "engine/continuation.h"
#include "engine/generate.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

struct Target {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

Target load(const std::string& path, uint32_t n_checkpoints) {
    Target t;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_seq_max = 2;
    kc.n_checkpoints = n_checkpoints;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "test", t.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

std::string qwen35_model_continuation() {
    static const std::string path = [] {
        auto shape = synth::qwen35_preset("tiny");
        synth::Qwen35SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 21;
        o.mtp = true;
        const std::string p = test::make_temp_dir("continuation") + "/q35.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen35_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

std::string qwen3_model_continuation() {
    static const std::string path = [] {
        auto shape = synth::qwen3_preset("tiny");
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::F16;
        const std::string p = test::make_temp_dir("continuation") + "/q3.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

GenerateParams greedy(int n, uint32_t n_batch = 4) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    gp.n_batch = n_batch;
    return gp;
}

std::vector<int32_t> concat(std::vector<int32_t> a, std::span<const int32_t> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

struct Logged {
    GenerateResult r;
    std::vector<float> logits;
};

Logged run_logged(Runner& runner, int seq, std::span<const int32_t> prompt, GenerateParams gp) {
    Logged l;
    auto r = generate(runner, nullptr, seq, prompt, gp, {},
                      [&](const float* row, uint32_t n) { l.logits.insert(l.logits.end(), row, row + n); });
    EXPECT_TRUE(r.ok()) << r.error().message();
    if (r.ok()) l.r = std::move(r).value();
    return l;
}

class Continuation : public test::DeviceTest {};

// Three turns on one sequence, each prompt the previous history plus new
// tokens, against each whole prompt run fresh on a second sequence: the same
// tokens and bit-identical logits, and the turns really resume.
void three_turns_equal_fresh_runs(const std::string& path) {
    Target t = load(path, 6);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int seq = *t.kv->add_sequence(), fresh = *t.kv->add_sequence();
    std::vector<int32_t> history = {1, 17, 300, 42, 42, 9, 400, 3, 255};
    std::vector<int32_t> kv_tokens;
    const std::vector<std::vector<int32_t>> user = {{}, {128, 64, 77}, {5, 6, 7, 8, 9, 10, 11}};
    for (int turn = 0; turn < 3; ++turn) {
        const std::vector<int32_t> prompt = concat(history, user[size_t(turn)]);
        GenerateParams gp = greedy(7);
        gp.n_cached = resumable_prefix(*t.kv, seq, kv_tokens, prompt);
        if (turn > 0) {
            EXPECT_EQ(gp.n_cached, kv_tokens.size()) << "turn " << turn;
        }
        ASSERT_TRUE(t.kv->truncate(seq, gp.n_cached).ok());
        const Logged resumed = run_logged(runner, seq, prompt, gp);
        ASSERT_TRUE(t.kv->truncate(fresh, 0).ok());
        const Logged whole = run_logged(runner, fresh, prompt, greedy(7, 5));
        ASSERT_EQ(resumed.r.tokens, whole.r.tokens) << "turn " << turn;
        ASSERT_EQ(resumed.logits, whole.logits) << "turn " << turn;
        EXPECT_EQ(resumed.r.n_kv, prompt.size() + resumed.r.tokens.size() - 1);
        history = concat(prompt, resumed.r.tokens);
        kv_tokens.assign(history.begin(), history.begin() + resumed.r.n_kv);
    }
}

TEST_F(Continuation, qwen3_turns_resume_and_equal_fresh_prefills) { three_turns_equal_fresh_runs(qwen3_model_continuation()); }

TEST_F(Continuation, qwen35_hybrid_turns_resume_at_their_checkpoint_and_equal_fresh_prefills) {
    three_turns_equal_fresh_runs(qwen35_model_continuation());
}

TEST_F(Continuation, attention_kv_resumes_from_the_shared_prefix_of_a_diverging_prompt) {
    Target t = load(qwen3_model_continuation(), 2);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int seq = *t.kv->add_sequence(), fresh = *t.kv->add_sequence();
    const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const Logged first = run_logged(runner, seq, a, greedy(3));
    std::vector<int32_t> kv_tokens = concat(a, first.r.tokens);
    kv_tokens.resize(first.r.n_kv);
    const std::vector<int32_t> b = {1, 2, 3, 4, 5, 6, 99, 98, 97};
    GenerateParams gp = greedy(6);
    gp.n_cached = resumable_prefix(*t.kv, seq, kv_tokens, b);
    EXPECT_EQ(gp.n_cached, 6u);
    ASSERT_TRUE(t.kv->truncate(seq, gp.n_cached).ok());
    const Logged resumed = run_logged(runner, seq, b, gp);
    const Logged whole = run_logged(runner, fresh, b, greedy(6));
    EXPECT_EQ(resumed.r.tokens, whole.r.tokens);
    EXPECT_EQ(resumed.logits, whole.logits);
}

TEST_F(Continuation, hybrid_state_cannot_be_cut_between_checkpoints_so_it_starts_over) {
    Target t = load(qwen35_model_continuation(), 2);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int seq = *t.kv->add_sequence();
    const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const Logged first = run_logged(runner, seq, a, greedy(2));
    std::vector<int32_t> kv_tokens = concat(a, first.r.tokens);
    kv_tokens.resize(first.r.n_kv);
    const std::vector<int32_t> b = {1, 2, 3, 4, 5, 6, 99};
    EXPECT_EQ(resumable_prefix(*t.kv, seq, kv_tokens, b), 0u);
    // the whole of what it holds (and longer) can still be resumed
    EXPECT_EQ(resumable_prefix(*t.kv, seq, kv_tokens, concat(kv_tokens, std::vector<int32_t>{5})), kv_tokens.size());
}

// A speculative pool has a checkpoint for every row of a verify, but a sequence returns only
// to the state after a row whose logits were read or after its batch: a prompt chunk's rows
// before its last write none (each would copy every recurrent state), a verify's rows each one.
TEST_F(Continuation, hybrid_state_is_checkpointed_after_rows_with_logits_and_at_a_batch_end) {
    Target t = load(qwen35_model_continuation(), 8);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int seq = *t.kv->add_sequence();
    const std::vector<int32_t> chunk = {1, 2, 3, 4, 5}, chunk_pos = {0, 1, 2, 3, 4};
    const int32_t last = 4;
    ASSERT_TRUE(runner.forward({chunk, chunk_pos, seq, std::span<const int32_t>(&last, 1)}).ok());
    for (uint32_t n = 1; n < 5; ++n) EXPECT_FALSE(t.kv->can_truncate(seq, n)) << "inside the chunk: " << n;
    EXPECT_TRUE(t.kv->can_truncate(seq, 5));
    const std::vector<int32_t> verify = {6, 7, 8}, verify_pos = {5, 6, 7}, rows = {0, 1, 2};
    ASSERT_TRUE(runner.forward({verify, verify_pos, seq, rows}).ok());
    for (uint32_t n = 5; n <= 8; ++n) EXPECT_TRUE(t.kv->can_truncate(seq, n)) << "a verify's row: " << n;
    EXPECT_FALSE(t.kv->can_truncate(seq, 3));
}

TEST_F(Continuation, qwen35_mtp_speculation_resumes_the_head_across_turns_and_equals_plain_decoding) {
    const uint32_t k = 3;
    Target t = load(qwen35_model_continuation(), k + 2);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int seq = *t.kv->add_sequence(), fresh = *t.kv->add_sequence();
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    ASSERT_NE(e, nullptr);
    DraftHeadOptions o;
    o.kv.n_ctx = 256;
    auto mtp = DraftHeadDrafter::create(*e, "mtp", t.model->shared_source(), *t.model, *t.kv, test::test_device(),
                                        test::test_pipelines(), o);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Drafter* chain[] = {mtp->get()};
    SpecParams sp;
    sp.draft_max = int(k);
    std::vector<int32_t> history = {3, 1, 4, 1, 5, 9, 2, 6};
    std::vector<int32_t> kv_tokens;
    uint64_t drafted = 0;
    for (int turn = 0; turn < 3; ++turn) {
        const std::vector<int32_t> prompt = concat(history, std::vector<int32_t>{int32_t(50 + turn), 7, 7});
        GenerateParams gp = greedy(9);
        gp.n_cached = resumable_prefix(*t.kv, seq, kv_tokens, prompt, chain);
        if (turn > 0) {
            EXPECT_EQ(gp.n_cached, kv_tokens.size()) << "turn " << turn;
        }
        ASSERT_TRUE(t.kv->truncate(seq, gp.n_cached).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, gp, chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->stats.drafters[0].failure, "") << "turn " << turn;
        ASSERT_TRUE(t.kv->truncate(fresh, 0).ok());
        auto plain = generate(runner, nullptr, fresh, prompt, greedy(9), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_EQ(spec->gen.tokens, plain->tokens) << "turn " << turn;
        drafted += spec->stats.drafted;
        history = concat(prompt, spec->gen.tokens);
        kv_tokens.assign(history.begin(), history.begin() + spec->gen.n_kv);
    }
    EXPECT_GT(drafted, 0u);
}

TEST_F(Continuation, a_set_cancel_flag_stops_before_prefill_and_a_later_run_is_unaffected) {
    Target t = load(qwen3_model_continuation(), 2);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int seq = *t.kv->add_sequence();
    const std::vector<int32_t> p = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    std::atomic<bool> cancel{true};
    GenerateParams gp = greedy(5);
    gp.cancel = &cancel;
    auto r = generate(runner, nullptr, seq, p, gp, {});
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(to_string(r->stop_reason), "cancelled");
    EXPECT_TRUE(r->tokens.empty());
    EXPECT_EQ(r->n_kv, 0u);
    // cancelled between prefill chunks: what was run stays, and resuming finishes the job
    cancel = false;
    gp.max_tokens = 50;
    gp.on_progress = [&](uint32_t done, uint32_t, double) {
        if (done >= 4) cancel = true;
    };
    gp.n_batch = 4;
    auto mid = generate(runner, nullptr, seq, p, gp, {});
    ASSERT_TRUE(mid.ok());
    EXPECT_EQ(to_string(mid->stop_reason), "cancelled");
    EXPECT_EQ(mid->n_kv, 4u);  // the first chunk is in the KV
    cancel = false;
    gp.on_progress = {};
    gp.n_cached = mid->n_kv;
    auto rest = generate(runner, nullptr, seq, p, gp, {});
    ASSERT_TRUE(rest.ok());
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    GenerateParams plain = greedy(50);
    auto whole = generate(runner, nullptr, seq, p, plain, {});
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(rest->tokens, whole->tokens);
}

}  // namespace
}  // namespace tdm
