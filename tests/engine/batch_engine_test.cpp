// SPDX-License-Identifier: Apache-2.0
// tests/engine/batch_engine_test.cpp: continuous batching (engine/batch_engine.h). A
// session's tokens are those of the same request run alone with plain decoding (greedy) or
// with its own seeded sampler, whatever shares its passes: more requests than slots,
// drafts accepted and rejected, prompts resumed from an idle slot, sessions preempted when
// the KV pool runs out, cancellations; for attention-only Qwen3 (many sequences per pass)
// and the Qwen3.5 hybrid (its recurrent state per sequence) with its MTP head shared.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>

#include "engine/batch_engine.h"
#include "formats/mapped_file.h"
#include "formats/model_source.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

std::string qwen3_model() {
    static const std::string path = [] {
        auto shape = synth::qwen3_preset("tiny");
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 5;
        const std::string p = test::make_temp_dir("batch-engine") + "/q3.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

std::string qwen35_model() {
    static const std::string path = [] {
        auto shape = synth::qwen35_preset("tiny");
        synth::Qwen35SynthOptions o;
        o.weight_type = DType::Q8_0;
        o.seed = 21;
        o.mtp = true;
        const std::string p = test::make_temp_dir("batch-engine") + "/q35.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen35_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

std::unique_ptr<KvPool> make_pool(const Model& m, uint32_t n_seq, uint32_t n_checkpoints = 8, uint64_t budget = 0) {
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_seq_max = n_seq;
    kc.n_checkpoints = n_checkpoints;
    kc.memory_budget = budget;
    auto kv = KvPool::create(test::test_device(), m.attention_layers(), kc, "test", m.recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    return kv.ok() ? std::move(kv).value() : nullptr;
}

// Qwen3.5's MTP head of `m` (from its own file), beside the target's pool `kv`.
Result<std::unique_ptr<DraftHeadDrafter>> mtp_head(const Model& m, const KvPool& kv, DraftHeadOptions ho) {
    const DraftHeadEntry* entry = test::build_tree_plugins().find_draft_head("mtp", m.arch().desc->name);
    if (!entry) return Error("no mtp draft head for " + std::string(m.arch().desc->name));
    return DraftHeadDrafter::create(*entry, "mtp", m.shared_source(), m, kv, test::test_device(),
                                    test::test_pipelines(), ho);
}

std::vector<int32_t> random_prompt(uint64_t seed, size_t len, int32_t hi) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(len);
    for (auto& t : p) t = int32_t(rng() % uint64_t(hi));
    return p;
}

// Proposes what the reference run generated next, each token right with probability
// `acceptance` (after a wrong one, the rest are noise): drafts the target accepts and
// rejects, from history alone (so it keeps working after a preemption).
class ReferenceDrafter final : public Drafter {
public:
    ReferenceDrafter(std::vector<int32_t> full, double acceptance, uint32_t n_vocab, uint64_t seed)
        : full_(std::move(full)), a_(acceptance), n_vocab_(n_vocab), rng_(seed) {}
    const std::string& name() const override { return name_; }
    Status begin(std::span<const int32_t>) override { return {}; }
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override {
        std::vector<int32_t> out;
        bool right = true;
        for (uint32_t i = 0; i < req.max && req.history.size() + i < full_.size(); ++i) {
            right = right && (double(rng_() >> 11) * 0x1.0p-53 < a_);
            const int32_t t = full_[req.history.size() + i];
            out.push_back(right ? t : int32_t((uint32_t(t) + 1 + uint32_t(rng_() % (n_vocab_ - 1))) % n_vocab_));
        }
        return out;
    }
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }

private:
    std::string name_ = "reference";
    std::vector<int32_t> full_;
    double a_;
    uint32_t n_vocab_;
    std::mt19937_64 rng_;
};

struct Job {
    std::vector<int32_t> prompt;
    GenerateParams params;
    bool drafts = false;
    bool controller = false;    // the goodput controller chooses k (else fixed k = 4)
    std::vector<int32_t> want;  // the tokens of the request run alone
    SessionResult got;
    bool done = false;
    std::string text;
};

GenerateParams params(int n, float temperature = 0, uint64_t seed = 0) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = temperature;
    gp.sampling.seed = seed;
    gp.ignore_eog = true;
    return gp;
}

// The tokens of each job run alone with plain decoding, on a pool of its own.
void reference(const Model& m, std::vector<Job>& jobs) {
    auto kv = make_pool(m, 1);
    ASSERT_TRUE(kv);
    Runner runner(m, *kv, test::test_device(), test::test_pipelines());
    const int seq = *kv->add_sequence();
    for (Job& j : jobs) {
        ASSERT_TRUE(kv->truncate(seq, 0).ok());
        auto r = generate(runner, nullptr, seq, j.prompt, j.params, {});
        ASSERT_TRUE(r.ok()) << r.error().message();
        j.want = r->tokens;
    }
}

SessionRequest request(Job& j, const Model& m, uint64_t seed, std::vector<Drafter*> shared = {}) {
    SessionRequest r;
    r.prompt = j.prompt;
    r.params = j.params;
    r.spec.draft_max = 4;
    r.spec.auto_k = j.controller;
    if (j.drafts) {
        std::vector<int32_t> full = j.prompt;
        full.insert(full.end(), j.want.begin(), j.want.end());
        DrafterSlot ds;
        ds.owned = std::make_unique<ReferenceDrafter>(full, 0.6, m.info().n_vocab, seed);
        r.drafters.push_back(std::move(ds));
    }
    for (Drafter* d : shared) {
        DrafterSlot ds;
        ds.shared = d;
        r.drafters.push_back(std::move(ds));
    }
    r.on_done = [&j](const SessionResult& res) {
        j.got = res;
        j.done = true;
    };
    return r;
}

void run_all(BatchEngine& e, std::vector<Job>& jobs) {
    for (int guard = 0; guard < 100000 && e.step(); ++guard) {
    }
    for (Job& j : jobs) ASSERT_TRUE(j.done);
}

class BatchEngineTest : public test::DeviceTest {};

TEST_F(BatchEngineTest, every_session_gets_the_tokens_it_gets_alone_with_and_without_drafts) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(9);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(100 + i, 3 + (i * 7) % 40, 500);
        jobs[i].params = params(20 + int(i % 3) * 7);
        jobs[i].drafts = i % 2 == 1;
    }
    reference(**m, jobs);
    auto kv = make_pool(**m, 4);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    BatchEngineOptions o;
    o.n_batch = 16;  // prompts take several chunks, beside other sessions' decode rows
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    EXPECT_EQ((*e)->slots(), 4u);
    for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
    EXPECT_EQ((*e)->waiting(), 9u);
    run_all(**e, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i;
        EXPECT_EQ(to_string(jobs[i].got.stop_reason), "length");
        if (jobs[i].drafts) {
            EXPECT_GT(jobs[i].got.spec.drafted, 0u) << "job " << i;
        }
    }
    const BatchEngineStats& st = (*e)->stats();
    EXPECT_GT(st.accepted, 0u);
    EXPECT_LT(st.accepted, st.drafted);  // some drafts were rejected
    EXPECT_GT(st.rows, st.steps * 2) << "passes ran several sessions at once";
    EXPECT_EQ((*e)->running(), 0u);
}

TEST_F(BatchEngineTest, with_the_goodput_controller_every_session_gets_the_tokens_it_gets_alone) {
    // The default of every front end: the controller plans each pass as a whole (drafts
    // where they pay for the whole step, probes for sessions given none).
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(8);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(700 + i, 3 + (i * 5) % 30, 500);
        jobs[i].params = params(40);
        jobs[i].drafts = i % 4 != 3;
        jobs[i].controller = true;
    }
    reference(**m, jobs);
    auto kv = make_pool(**m, 4);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, BatchEngineOptions{});
    ASSERT_TRUE(e.ok()) << e.error().message();
    for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
    run_all(**e, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i;
        if (jobs[i].drafts) {
            EXPECT_TRUE(jobs[i].got.spec.controller.on) << "job " << i;
        }
    }
    EXPECT_EQ((*e)->running(), 0u);
}

TEST_F(BatchEngineTest, seeded_sampling_gives_the_same_tokens_batched_as_alone) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    auto run = [&](std::vector<Job>& jobs, uint32_t n_seq) {
        auto kv = make_pool(**m, n_seq);
        ASSERT_TRUE(kv);
        Runner runner(**m, *kv, device(), pipelines());
        auto e = BatchEngine::create(runner, nullptr, {});
        ASSERT_TRUE(e.ok()) << e.error().message();
        for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
        run_all(**e, jobs);
    };
    std::vector<Job> alone(6), batched(6);
    for (size_t i = 0; i < alone.size(); ++i) {
        alone[i].prompt = random_prompt(300 + i, 4 + i * 3, 500);
        alone[i].params = params(24, 0.9f, 7 + i);
        alone[i].drafts = i >= 3;
    }
    reference(**m, alone);  // the drafters' references (plain sampled runs)
    for (size_t i = 0; i < alone.size(); ++i) batched[i] = alone[i];
    run(alone, 1);  // one slot: each request alone
    run(batched, 6);
    for (size_t i = 0; i < alone.size(); ++i) {
        EXPECT_EQ(batched[i].got.tokens, alone[i].got.tokens) << "job " << i;
        if (!alone[i].drafts) {
            EXPECT_EQ(alone[i].got.tokens, alone[i].want) << "plain sampling, job " << i;
        }
    }
}

TEST_F(BatchEngineTest, a_prompt_sharing_a_prefix_with_a_finished_request_resumes_from_its_slot) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    const auto system = random_prompt(7, 40, 500);
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = system;
        const auto tail = random_prompt(50 + i, 5, 500);
        jobs[i].prompt.insert(jobs[i].prompt.end(), tail.begin(), tail.end());
        jobs[i].params = params(12);
    }
    reference(**m, jobs);
    auto kv = make_pool(**m, 2);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    (*e)->add(request(jobs[0], **m, 0));
    while ((*e)->step()) {
    }
    ASSERT_TRUE(jobs[0].done);
    EXPECT_EQ(jobs[0].got.n_cached, 0u);
    (*e)->add(request(jobs[1], **m, 1));
    (*e)->add(request(jobs[2], **m, 2));
    while ((*e)->step()) {
    }
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i;
    // one of the two later requests takes the first one's slot and keeps the system prompt;
    // the other shares that slot's whole blocks (32 of the 40 tokens)
    EXPECT_EQ(std::max(jobs[1].got.n_cached, jobs[2].got.n_cached), 40u);
    EXPECT_EQ(std::min(jobs[1].got.n_cached, jobs[2].got.n_cached), 32u);
    EXPECT_EQ((*e)->stats().prefix_hits, 2u);
    EXPECT_EQ((*e)->stats().shared_prefixes, 1u);
}

TEST_F(BatchEngineTest, sessions_preempted_when_the_pool_runs_out_recompute_and_lose_nothing) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(4);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(700 + i, 20, 500);
        jobs[i].params = params(60);
        jobs[i].drafts = i % 2 == 0;
    }
    reference(**m, jobs);
    // room for 12 blocks of 16 tokens: each request needs 5 at its end, all four 20
    auto probe = make_pool(**m, 1);
    ASSERT_TRUE(probe);
    const uint64_t block_bytes = probe->device_bytes() / probe->n_blocks();
    auto kv = make_pool(**m, 4, 8, block_bytes * 12 + block_bytes / 2);
    ASSERT_TRUE(kv);
    ASSERT_LT(kv->n_blocks(), 16u);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
    run_all(**e, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i;
        EXPECT_EQ(to_string(jobs[i].got.stop_reason), "length");
    }
    EXPECT_GT((*e)->stats().preemptions, 0u);
}

TEST_F(BatchEngineTest, a_cancelled_session_ends_and_the_others_finish) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(900 + i, 10, 500);
        jobs[i].params = params(30);
    }
    reference(**m, jobs);
    auto kv = make_pool(**m, 3);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    int seen = 0;
    SessionRequest r0 = request(jobs[0], **m, 0);
    r0.on_token = [&](int32_t, std::string_view, const TokenLogprobs*) { return ++seen < 5; };  // the client hangs up
    (*e)->add(std::move(r0));
    SessionRequest r1 = request(jobs[1], **m, 1);
    r1.cancel = std::make_shared<std::atomic<bool>>(true);  // cancelled while waiting
    (*e)->add(std::move(r1));
    (*e)->add(request(jobs[2], **m, 2));
    run_all(**e, jobs);
    EXPECT_EQ(to_string(jobs[0].got.stop_reason), "cancelled");
    EXPECT_EQ(jobs[0].got.tokens.size(), 5u);
    EXPECT_TRUE(std::equal(jobs[0].got.tokens.begin(), jobs[0].got.tokens.end(), jobs[0].want.begin()));
    EXPECT_EQ(to_string(jobs[1].got.stop_reason), "cancelled");
    EXPECT_TRUE(jobs[1].got.tokens.empty());
    EXPECT_EQ(jobs[2].got.tokens, jobs[2].want);
}

// Qwen3.5's recurrent layers batch sequences like attention: each sequence's rows are a
// segment reading and checkpointing its own state. Prompt chunks beside other sessions'
// verify rows, drafts accepted and rejected (rollback by checkpoint), the MTP head shared.
TEST_F(BatchEngineTest, hybrid_model_sessions_share_passes_and_the_mtp_head_and_stay_exact) {
    auto m = Model::load(qwen35_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(6);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1100 + i, 5 + i * 4, 500);
        jobs[i].params = params(16);
        jobs[i].drafts = i % 3 == 1;
    }
    reference(**m, jobs);
    auto kv = make_pool(**m, 3);
    ASSERT_TRUE(kv);
    DraftHeadOptions ho;
    ho.kv.n_ctx = 256;
    auto mtp = mtp_head(**m, *kv, ho);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(**m, *kv, device(), pipelines());
    BatchEngineOptions o;
    o.n_batch = 8;
    auto e = BatchEngine::create(runner, nullptr, o, {mtp->get()});
    ASSERT_TRUE(e.ok()) << e.error().message();
    for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i, {mtp->get()}));
    run_all(**e, jobs);
    uint64_t drafted = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i;
        drafted += jobs[i].got.spec.drafted;
    }
    EXPECT_GT(drafted, 0u);
    const BatchEngineStats& st = (*e)->stats();
    EXPECT_LT(st.accepted, st.drafted);  // some drafts were rejected and rolled back
    EXPECT_GT(st.rows, st.steps * 2) << "passes ran several sessions at once";
}

// Each session drafts with a drafter of its own on one MTP head; the head drafts for all of
// them in one graph per pass (TDM_DRAFT_HEAD_BATCHED), and what each sequence proposes,
// round by round, is what it proposes when every sequence drafts in a graph of its own, and
// what it proposes reading the target's rows from host copies instead of the device table
// (where a sequence's rows sit past the other sequences' rows of the pass).
TEST_F(BatchEngineTest, mtp_sequences_draft_in_one_graph_and_propose_what_they_propose_alone) {
    auto m = Model::load(qwen35_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(5);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1300 + i, 4 + i * 9, 500);
        jobs[i].params = params(14);
    }
    reference(**m, jobs);
    struct Config {
        bool batch, rows_on_device;
        const char* name;
    };
    const Config configs[] = {{false, true, "alone"}, {true, true, "batched"}, {true, false, "batched, host rows"}};
    std::vector<std::vector<RoundRecord>> rounds[3];
    for (int c = 0; c < 3; ++c) {
        auto kv = make_pool(**m, 4);
        ASSERT_TRUE(kv);
        DraftHeadOptions ho;
        ho.kv.n_ctx = 256;
        ho.kv.n_seq_max = 5;
        ho.batch = configs[c].batch;
        ho.rows_on_device = configs[c].rows_on_device;
        ho.graph_limit = 3;  // fewer than the round shapes of five requests: graphs are evicted and rebuilt
        auto mtp = mtp_head(**m, *kv, ho);
        ASSERT_TRUE(mtp.ok()) << mtp.error().message();
        EXPECT_EQ((*mtp)->batcher() != nullptr, configs[c].batch) << "the plugin's MTP head drafts sequences in one graph";
        Runner runner(**m, *kv, device(), pipelines());
        BatchEngineOptions o;
        o.n_batch = 8;
        o.hidden_point = (*mtp)->hidden_point();
        auto e = BatchEngine::create(runner, nullptr, o);
        ASSERT_TRUE(e.ok()) << e.error().message();
        rounds[c].resize(jobs.size());
        for (size_t i = 0; i < jobs.size(); ++i) {
            SessionRequest r = request(jobs[i], **m, i);
            r.spec.draft_max = 3;
            DrafterSlot ds;
            ds.owned = (*mtp)->another();
            r.drafters.push_back(std::move(ds));
            r.on_round = [&rounds, c, i](const RoundRecord& rr) { rounds[c][i].push_back(rr); };
            (*e)->add(std::move(r));
        }
        for (Job& j : jobs) j.done = false;
        run_all(**e, jobs);
        for (size_t i = 0; i < jobs.size(); ++i) {
            EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i << ", " << configs[c].name;
            EXPECT_GT(jobs[i].got.spec.drafted, 0u) << "job " << i;
        }
        EXPECT_LE((*mtp)->cached_graphs(), ho.graph_limit) << configs[c].name;
        if (configs[c].batch)
            EXPECT_GT((*mtp)->batched_graphs(), 0u) << "no pass drafted several sequences in one graph";
        else
            EXPECT_EQ((*mtp)->batched_graphs(), 0u);
        if (configs[c].rows_on_device)
            EXPECT_GT((*mtp)->rows_read_on_device(), 0u) << configs[c].name;
        else
            EXPECT_EQ((*mtp)->rows_read_on_device(), 0u) << configs[c].name;
    }
    for (int c = 1; c < 3; ++c)
        for (size_t i = 0; i < jobs.size(); ++i) {
            ASSERT_EQ(rounds[0][i].size(), rounds[c][i].size()) << "job " << i << ", " << configs[c].name;
            for (size_t r = 0; r < rounds[0][i].size(); ++r) {
                EXPECT_EQ(rounds[0][i][r].drafted, rounds[c][i][r].drafted)
                    << "job " << i << " round " << r << ", " << configs[c].name;
                EXPECT_EQ(rounds[0][i][r].accepted, rounds[c][i][r].accepted)
                    << "job " << i << " round " << r << ", " << configs[c].name;
            }
        }
}

// The sequences of one batched draft share its time by the drafts asked: the first to take its
// drafts waited for the whole graph and the others found theirs ready, so before, one round
// of a pass carried all of the drafting time and the others none, and their controllers
// took drafting for free. Rounds of one pass are told apart by their verify time (the pass's).
TEST_F(BatchEngineTest, sequences_drafting_in_one_graph_share_its_time_by_their_drafts) {
    auto m = Model::load(qwen35_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(4);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1400 + i, 12, 500);
        jobs[i].params = params(12);
    }
    auto kv = make_pool(**m, 4);
    ASSERT_TRUE(kv);
    DraftHeadOptions ho;
    ho.kv.n_ctx = 256;
    ho.kv.n_seq_max = 4;
    ho.batch = true;
    auto mtp = mtp_head(**m, *kv, ho);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(**m, *kv, device(), pipelines());
    BatchEngineOptions o;
    o.n_batch = 16;
    o.hidden_point = (*mtp)->hidden_point();
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    std::map<double, std::vector<RoundRecord>> by_pass;
    for (size_t i = 0; i < jobs.size(); ++i) {
        SessionRequest r = request(jobs[i], **m, i);
        r.spec.draft_max = 2;
        r.spec.auto_k = false;  // every session drafts every round
        DrafterSlot ds;
        ds.owned = (*mtp)->another();
        r.drafters.push_back(std::move(ds));
        r.on_round = [&by_pass](const RoundRecord& rr) {
            if (!rr.drafted.empty()) by_pass[rr.verify_ms].push_back(rr);
        };
        (*e)->add(std::move(r));
    }
    run_all(**e, jobs);
    ASSERT_GT((*mtp)->batched_graphs(), 0u);
    size_t shared = 0;
    for (const auto& [pass_ms, rounds] : by_pass) {
        if (rounds.size() < 2) continue;
        ++shared;
        const double per_draft = rounds[0].draft_ms / double(rounds[0].k);
        EXPECT_GT(per_draft, 0.0);
        for (const RoundRecord& rr : rounds)
            EXPECT_NEAR(rr.draft_ms / double(rr.k), per_draft, 1e-9 * per_draft)
                << "a pass of " << rounds.size() << " drafting sequences";
    }
    EXPECT_GT(shared, 2u) << "passes in which several sequences drafted";
}

// A server's batches come in many shapes: past the limit the least recently used graph is
// dropped, and a shape built again gives the same logits.
TEST_F(BatchEngineTest, the_runner_keeps_at_most_its_limit_of_graphs_and_rebuilds_the_same_ones) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    auto kv = make_pool(**m, 1);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    runner.set_graph_cache_limit(2);
    const int seq = *kv->add_sequence();
    const auto prompt = random_prompt(5, 8, 500);
    const uint32_t n_vocab = (*m)->info().n_vocab;
    auto last_logits = [&](uint32_t n) {
        EXPECT_TRUE(kv->truncate(seq, 0).ok());
        std::vector<int32_t> pos(n), row{int32_t(n - 1)};
        for (uint32_t i = 0; i < n; ++i) pos[i] = int32_t(i);
        auto out = runner.forward({std::span(prompt).first(n), pos, seq, row});
        EXPECT_TRUE(out.ok());
        return out.ok() ? std::vector<float>(out->logits, out->logits + n_vocab) : std::vector<float>();
    };
    const std::vector<float> first = last_logits(8);
    last_logits(4);
    last_logits(2);
    EXPECT_EQ(runner.cached_graphs(), 2u);
    EXPECT_EQ(last_logits(8), first);  // rebuilt: the 8-row graph was the least recently used
    EXPECT_EQ(runner.cached_graphs(), 2u);
}

// Seeded sampling with drafts through preemptions: a recompute ends its prefill a row
// short, so the next token comes from a decode step with drafts, consuming the random
// numbers exactly as the uninterrupted run does.
TEST_F(BatchEngineTest, seeded_sampling_with_drafts_survives_preemption_unchanged) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> alone(4), squeezed(4);
    for (size_t i = 0; i < alone.size(); ++i) {
        alone[i].prompt = random_prompt(800 + i, 20, 500);
        alone[i].params = params(60, 0.8f, 40 + i);
        alone[i].drafts = true;
    }
    reference(**m, alone);
    for (size_t i = 0; i < alone.size(); ++i) squeezed[i] = alone[i];
    auto run = [&](std::vector<Job>& jobs, std::unique_ptr<KvPool> kv) {
        ASSERT_TRUE(kv);
        Runner runner(**m, *kv, device(), pipelines());
        auto e = BatchEngine::create(runner, nullptr, {});
        ASSERT_TRUE(e.ok());
        for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
        run_all(**e, jobs);
        if (kv->n_blocks() < 16) {
            EXPECT_GT((*e)->stats().preemptions, 0u);
        }
    };
    run(alone, make_pool(**m, 1));
    auto probe = make_pool(**m, 1);
    ASSERT_TRUE(probe);
    const uint64_t block_bytes = probe->device_bytes() / probe->n_blocks();
    run(squeezed, make_pool(**m, 4, 8, block_bytes * 12 + block_bytes / 2));
    for (size_t i = 0; i < alone.size(); ++i) {
        EXPECT_EQ(squeezed[i].got.tokens, alone[i].got.tokens) << "job " << i;
        EXPECT_EQ(squeezed[i].got.tokens.size(), 60u);
    }
}

// A pass that fails because of one session's rows (here a token outside the vocabulary)
// is run again session by session: only that session ends with the error.
TEST_F(BatchEngineTest, a_session_whose_rows_fail_ends_alone_and_the_others_finish) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1300 + i, 6, 500);
        jobs[i].params = params(10);
    }
    reference(**m, jobs);
    jobs[1].prompt[3] = 100000;  // beyond the vocabulary of 512
    auto kv = make_pool(**m, 3);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
    run_all(**e, jobs);
    EXPECT_EQ(jobs[0].got.tokens, jobs[0].want);
    EXPECT_EQ(jobs[2].got.tokens, jobs[2].want);
    EXPECT_EQ(to_string(jobs[1].got.stop_reason), "error");
    EXPECT_NE(jobs[1].got.error.find("100000"), std::string::npos) << jobs[1].got.error;
}

// A Qwen3.5 file (untied head, F32) whose embedding row of `token` is NaN: only a sequence
// that reads that token gets non-finite logits, found when its pass is read back.
std::string qwen35_model_with_nan_token(int32_t token) {
    static const std::string path = [token] {
        auto shape = synth::qwen35_preset("tiny");
        synth::Qwen35SynthOptions o;
        o.seed = 23;
        o.tied = false;
        const std::string p = test::make_temp_dir("batch-engine") + "/q35-nan.gguf";
        EXPECT_TRUE(shape.ok() && synth::synth_qwen35_gguf(p, *shape, o).ok());
        uint64_t at = 0, row_bytes = 0;
        {
            auto src = ModelSource::open(p);
            EXPECT_TRUE(src.ok());
            for (const SourceTensor& t : (*src)->tensors())
                if (t.name == "token_embd.weight") {
                    EXPECT_EQ(t.type, 0u) << "an F32 embedding";
                    row_bytes = uint64_t(t.ne[0]) * 4;
                    at = uint64_t(t.data - t.file->data()) + uint64_t(token) * row_bytes;
                }
        }
        EXPECT_GT(row_bytes, 0u);
        std::vector<float> nan_row(row_bytes / 4, std::numeric_limits<float>::quiet_NaN());
        std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(std::streamoff(at));
        f.write(reinterpret_cast<const char*>(nan_row.data()), std::streamsize(row_bytes));
        EXPECT_TRUE(f.good());
        return p;
    }();
    return path;
}

// A hybrid pass that fails when it is read back (one session's logits are NaN) has
// already advanced every session's recurrent checkpoints: they are rolled back, each
// session runs its rows again alone, and only the bad one ends.
TEST_F(BatchEngineTest, a_failed_hybrid_pass_rolls_states_back_and_only_the_bad_session_ends) {
    constexpr int32_t kBad = 7;
    ModelLoadOptions lo;
    lo.check_weights = false;
    auto m = Model::load(qwen35_model_with_nan_token(kBad), test::build_tree_plugins(), device(), lo);
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1500 + i, 6, 500);
        for (int32_t& t : jobs[i].prompt)
            if (t == kBad) t = kBad + 1;
        jobs[i].params = params(8);
    }
    reference(**m, jobs);
    jobs[1].params.max_tokens = 20;
    jobs[1].prompt.push_back(kBad);  // its last prompt row, in the pass that decodes the others
    auto kv = make_pool(**m, 3);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    (*e)->add(request(jobs[0], **m, 0));
    (*e)->add(request(jobs[2], **m, 2));
    // the others are decoding when the bad prompt joins them
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*e)->step());
    (*e)->add(request(jobs[1], **m, 1));
    run_all(**e, jobs);
    EXPECT_EQ(jobs[0].got.tokens, jobs[0].want) << jobs[0].got.error;
    EXPECT_EQ(jobs[2].got.tokens, jobs[2].want) << jobs[2].got.error;
    EXPECT_EQ(to_string(jobs[1].got.stop_reason), "error");
    EXPECT_NE(jobs[1].got.error.find("NaN"), std::string::npos) << jobs[1].got.error;
    EXPECT_GE((*e)->stats().failed_passes, 1u);
}

// A plugin that does not declare TDM_MODEL_BATCHED_STATES (here: qwen35 with its chunked
// delta rule on, whose form would depend on the batch) gets one sequence per pass: the
// runner refuses more, and the engine's sessions take turns, exact as ever.
TEST_F(BatchEngineTest, recurrent_models_without_batched_states_run_one_sequence_a_pass) {
    ModelLoadOptions lo;
    lo.options["gdn_chunk"] = "64";  // no pass here is longer: the recurrent form every time
    auto m = Model::load(qwen35_model(), test::build_tree_plugins(), device(), lo);
    ASSERT_TRUE(m.ok()) << m.error().message();
    EXPECT_FALSE((*m)->batches_sequences());
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1600 + i, 5 + i * 3, 500);
        jobs[i].params = params(10);
        jobs[i].drafts = i == 1;
    }
    reference(**m, jobs);
    auto kv = make_pool(**m, 3);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    {
        const int a = *kv->add_sequence(), b = *kv->add_sequence();
        const std::vector<int32_t> tokens = {1, 2}, positions = {0, 0}, seqs = {a, b}, outputs = {0, 1};
        ASSERT_TRUE(kv->reserve(a, 1).ok() && kv->reserve(b, 1).ok());
        auto out = runner.forward(ForwardInput{tokens, positions, a, outputs, seqs});
        ASSERT_FALSE(out.ok());
        EXPECT_NE(out.error().message().find("TDM_MODEL_BATCHED_STATES"), std::string::npos)
            << out.error().message();
        kv->free_sequence(a);
        kv->free_sequence(b);
    }
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
    run_all(**e, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i;
    EXPECT_EQ((*e)->stats().failed_passes, 0u);
}

// A request's own MTP drafter holds pairs only for the rows it saw: a follow-up request
// resuming the slot's KV (a chat's next turn) drafts with the drafter the slot kept from
// the request before, instead of turning drafting off.
TEST_F(BatchEngineTest, a_request_resuming_a_slot_drafts_with_the_head_sequence_the_slot_kept) {
    auto m = Model::load(qwen35_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> first(1);
    first[0].prompt = random_prompt(1700, 9, 500);
    first[0].params = params(10);
    reference(**m, first);
    std::vector<Job> second(1);
    second[0].prompt = first[0].prompt;
    second[0].prompt.insert(second[0].prompt.end(), first[0].want.begin(), first[0].want.end());
    for (int32_t t : random_prompt(1701, 5, 500)) second[0].prompt.push_back(t);
    second[0].params = params(12);
    reference(**m, second);

    auto kv = make_pool(**m, 1);
    ASSERT_TRUE(kv);
    DraftHeadOptions ho;
    ho.kv.n_ctx = 256;
    ho.kv.n_seq_max = 3;
    auto mtp = mtp_head(**m, *kv, ho);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(**m, *kv, device(), pipelines());
    BatchEngineOptions o;
    o.hidden_point = (*mtp)->hidden_point();
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    for (std::vector<Job>* jobs : {&first, &second}) {
        SessionRequest r = request((*jobs)[0], **m, 0);
        r.spec.draft_max = 3;
        DrafterSlot ds;
        ds.owned = (*mtp)->another();
        r.drafters.push_back(std::move(ds));
        (*e)->add(std::move(r));
        run_all(**e, *jobs);
    }
    const SessionResult& got = second[0].got;
    EXPECT_EQ(got.tokens, second[0].want);
    EXPECT_GT(got.n_cached, first[0].prompt.size()) << "the second request resumed the first one's KV";
    ASSERT_EQ(got.spec.drafters.size(), 1u);
    EXPECT_EQ(got.spec.drafters[0].failure, "");
    EXPECT_GT(got.spec.drafted, 0u);
}

// A request's own draft_max may exceed what the pool's recurrent checkpoints can roll back
// (n_checkpoints - 2 drafts): its rounds draft no more than that, and stay exact.
TEST_F(BatchEngineTest, a_hybrid_requests_drafts_stay_within_the_checkpoints) {
    auto m = Model::load(qwen35_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(2);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1800 + i, 7, 500);
        jobs[i].params = params(16);
        jobs[i].drafts = true;
    }
    reference(**m, jobs);
    auto kv = make_pool(**m, 2, /*n_checkpoints=*/4);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    std::vector<std::vector<RoundRecord>> rounds(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
        SessionRequest r = request(jobs[i], **m, i);
        r.spec.draft_max = 8;
        r.on_round = [&rounds, i](const RoundRecord& rr) { rounds[i].push_back(rr); };
        (*e)->add(std::move(r));
    }
    run_all(**e, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) {
        EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i << ": " << jobs[i].got.error;
        EXPECT_GT(jobs[i].got.spec.drafted, 0u);
        for (const RoundRecord& rr : rounds[i]) EXPECT_LE(rr.drafted.size(), 2u);
    }
}

// Counts the rounds it drafts for and the results it hears (into counters that outlive it).
struct DraftCounts {
    int drafts = 0, accepts = 0;
};
class CountingDrafter final : public Drafter {
public:
    CountingDrafter(std::vector<int32_t> full, DraftCounts* counts) : full_(std::move(full)), counts_(counts) {}
    const std::string& name() const override { return name_; }
    Status begin(std::span<const int32_t>) override { return {}; }
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override {
        std::vector<int32_t> out;
        for (uint32_t i = 0; i < req.max && req.history.size() + i < full_.size(); ++i)
            out.push_back(full_[req.history.size() + i]);
        counts_->drafts += !out.empty();
        return out;
    }
    Status accept(std::span<const int32_t>, uint32_t n_drafted, uint32_t) override {
        counts_->accepts += n_drafted > 0;
        return {};
    }

private:
    std::string name_ = "counting";
    std::vector<int32_t> full_;
    DraftCounts* counts_;
};

// A prompt resumed all but its last token drafts on the prompt's own pass: that round's
// result reaches the drafter like any other.
TEST_F(BatchEngineTest, drafts_on_a_resumed_prompts_pass_are_a_round_the_drafter_hears_of) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> first(1), second(1);
    first[0].prompt = random_prompt(1900, 8, 500);
    first[0].params = params(6);
    reference(**m, first);
    second[0].prompt = first[0].prompt;
    second[0].prompt.insert(second[0].prompt.end(), first[0].want.begin(), first[0].want.end());
    second[0].params = params(8);
    reference(**m, second);
    auto kv = make_pool(**m, 1);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    (*e)->add(request(first[0], **m, 0));
    run_all(**e, first);
    std::vector<int32_t> full = second[0].prompt;
    full.insert(full.end(), second[0].want.begin(), second[0].want.end());
    SessionRequest r = request(second[0], **m, 1);
    DrafterSlot ds;
    DraftCounts counts;
    ds.owned = std::make_unique<CountingDrafter>(full, &counts);
    r.drafters.push_back(std::move(ds));
    (*e)->add(std::move(r));
    run_all(**e, second);
    EXPECT_EQ(second[0].got.tokens, second[0].want);
    EXPECT_EQ(second[0].got.n_cached, second[0].prompt.size() - 1);
    EXPECT_GT(counts.drafts, 0);
    EXPECT_EQ(counts.accepts, counts.drafts);
}

TEST_F(BatchEngineTest, abort_all_ends_running_and_waiting_sessions_with_an_error) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < jobs.size(); ++i) {
        jobs[i].prompt = random_prompt(1400 + i, 6, 500);
        jobs[i].params = params(50);
    }
    auto kv = make_pool(**m, 2);
    ASSERT_TRUE(kv);
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    for (size_t i = 0; i < jobs.size(); ++i) (*e)->add(request(jobs[i], **m, i));
    for (int i = 0; i < 3; ++i) (*e)->step();
    EXPECT_EQ((*e)->running(), 2u);
    EXPECT_EQ((*e)->waiting(), 1u);
    (*e)->abort_all("shutting down");
    for (const Job& j : jobs) {
        ASSERT_TRUE(j.done);
        EXPECT_EQ(to_string(j.got.stop_reason), "error");
        EXPECT_EQ(j.got.error, "shutting down");
    }
    EXPECT_FALSE((*e)->step());
}

// A system prompt computed once: a request arriving while another with the same prefix
// runs shares that one's whole blocks. A third request that diverges inside a shared block
// writes there, which copies the block first (copy-on-write): every session still gets
// the tokens it gets alone, the running one included.
TEST_F(BatchEngineTest, a_running_sessions_prefix_blocks_are_shared_and_copied_on_write) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    const auto system = random_prompt(77, 40, 500);  // 2 whole blocks of 16 and 8 more tokens
    std::vector<Job> jobs(3);
    for (size_t i = 0; i < 2; ++i) {
        jobs[i].prompt = system;
        const auto tail = random_prompt(90 + i, 6, 500);
        jobs[i].prompt.insert(jobs[i].prompt.end(), tail.begin(), tail.end());
    }
    jobs[2].prompt.assign(system.begin(), system.begin() + 20);  // diverges at 20, in block 1
    const auto tail = random_prompt(95, 10, 500);
    jobs[2].prompt.insert(jobs[2].prompt.end(), tail.begin(), tail.end());
    jobs[0].params = params(60);
    jobs[1].params = params(8);
    jobs[2].params = params(8);
    reference(**m, jobs);
    auto kv = make_pool(**m, 2);
    ASSERT_TRUE(kv);
    ASSERT_TRUE(kv->can_share());
    Runner runner(**m, *kv, device(), pipelines());
    auto e = BatchEngine::create(runner, nullptr, {});
    ASSERT_TRUE(e.ok());
    (*e)->add(request(jobs[0], **m, 0));
    for (int i = 0; i < 4; ++i) (*e)->step();  // job 0 has prefilled and is decoding
    (*e)->add(request(jobs[1], **m, 1));
    (*e)->step();
    EXPECT_EQ(kv->shared_blocks(), 2u) << "job 1 holds job 0's first two blocks";
    while (!jobs[1].done) (*e)->step();
    EXPECT_EQ(jobs[1].got.n_cached, 32u);
    // job 2 takes job 1's idle slot, keeps 20 of its tokens and writes position 20 into
    // the block it shares with job 0
    (*e)->add(request(jobs[2], **m, 2));
    run_all(**e, jobs);
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i;
    EXPECT_EQ(jobs[2].got.n_cached, 20u);
    EXPECT_EQ((*e)->stats().shared_prefixes, 1u);
}

TEST_F(BatchEngineTest, shared_blocks_are_counted_and_freed_by_their_last_holder) {
    auto m = Model::load(qwen3_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    auto kv = make_pool(**m, 2);
    ASSERT_TRUE(kv);
    const uint32_t all = kv->free_blocks();
    const int src = *kv->add_sequence(), dst = *kv->add_sequence();
    ASSERT_TRUE(kv->reserve(src, 48).ok());
    EXPECT_EQ(kv->free_blocks(), all - 3);
    auto shared = kv->share_prefix(src, dst, 40);
    ASSERT_TRUE(shared.ok()) << shared.error().message();
    EXPECT_EQ(*shared, 32u);  // whole blocks only
    EXPECT_EQ(kv->free_blocks(), all - 3);
    EXPECT_EQ(kv->shared_blocks(), 2u);
    EXPECT_FALSE(kv->share_prefix(src, dst, 40).ok()) << "dst must be empty";
    EXPECT_EQ(kv->copies_needed(dst, 20, 20), 1u);  // block 1 is shared
    EXPECT_EQ(kv->copies_needed(dst, 0, 31), 2u);
    EXPECT_EQ(kv->copies_needed(src, 32, 47), 0u);  // src's own third block
    ASSERT_TRUE(kv->begin_batch(src, 20, 20).ok());  // src writes into a shared block: a copy
    EXPECT_EQ(kv->free_blocks(), all - 4);
    EXPECT_EQ(kv->shared_blocks(), 1u);
    ASSERT_TRUE(kv->truncate(src, 0).ok());
    EXPECT_EQ(kv->free_blocks(), all - 2) << "dst still holds its two blocks";
    EXPECT_EQ(kv->shared_blocks(), 0u);
    kv->free_sequence(dst);
    EXPECT_EQ(kv->free_blocks(), all);

    auto hybrid = Model::load(qwen35_model(), test::build_tree_plugins(), device());
    ASSERT_TRUE(hybrid.ok());
    auto hkv = make_pool(**hybrid, 2);
    ASSERT_TRUE(hkv);
    EXPECT_FALSE(hkv->can_share());
    const int a = *hkv->add_sequence(), b = *hkv->add_sequence();
    EXPECT_FALSE(hkv->share_prefix(a, b, 16).ok());
}

}  // namespace
}  // namespace tdm
