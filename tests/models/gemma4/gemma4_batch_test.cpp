// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_batch_test.cpp: continuous batching (engine/batch_engine.h) on Gemma 4,
// whose sliding-window layers keep a ring of blocks per sequence: sessions that share passes
// (several sequences per pass, prompts in chunks beside decode rows, rings wrapping at 32)
// get the tokens of plain greedy decoding alone, with and without the assistant, which reads
// the KV of whichever target sequence holds it.
#include <gtest/gtest.h>

#include "engine/batch_engine.h"
#include "gemma4_assistant_harness.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"
#include "gemma4_tiny_runtime.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

namespace g4 = test::g4;

class Gemma4Batch : public test::DeviceTest {};

TEST_F(Gemma4Batch, sessions_sharing_passes_get_their_plain_greedy_tokens_with_and_without_the_assistant) {
    const std::string dir = test::make_temp_dir("gemma4-batch");
    const g4::Preset tp = g4::preset("tiny-e2b");
    const g4::AssistantPreset ap = g4::assistant_preset("tiny-e2b");
    g4::AssistantPair pair = g4::load_assistant_pair(
        g4::write_gguf(tp, g4::make_weights(tp, 31), dir + "/target.gguf"),
        g4::write_assistant_gguf(ap, g4::make_assistant_weights(ap, 32), dir + "/a.gguf"));
    ASSERT_TRUE(pair.kv);
    const Model& m = *pair.model;

    struct Job {
        std::vector<int32_t> prompt, want;
        SessionResult got;
        bool done = false;
    };
    std::vector<Job> jobs(6);
    for (size_t i = 0; i < jobs.size(); ++i) jobs[i].prompt = g4::random_tokens(60 + i, 3 + i * 7);
    const GenerateParams gp = g4::greedy(30);
    {
        Runner alone(m, *pair.kv, device(), pipelines());
        const int seq = *pair.kv->add_sequence();
        for (Job& j : jobs) {
            ASSERT_TRUE(pair.kv->truncate(seq, 0).ok());
            auto r = generate(alone, nullptr, seq, j.prompt, gp, {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            j.want = r->tokens;
        }
        pair.kv->free_sequence(seq);
    }

    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.rows_max = g4::kRowsMax;
    kc.n_seq_max = 3;
    auto kv = KvPool::create(device(), m.attention_layers(), kc, "batch");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    ASSERT_TRUE((*kv)->has_rings());
    pair.kv = std::move(kv).value();
    auto assistant = g4::make_assistant(pair);
    ASSERT_TRUE(assistant.ok()) << assistant.error().message();
    Runner runner(m, *pair.kv, device(), pipelines());
    BatchEngineOptions o;
    o.n_batch = g4::kRowsMax;
    auto e = BatchEngine::create(runner, nullptr, o, {assistant->get()});
    ASSERT_TRUE(e.ok()) << e.error().message();
    for (Job& j : jobs) {
        SessionRequest r;
        r.prompt = j.prompt;
        r.params = gp;
        r.spec.draft_max = 3;
        DrafterSlot ds;
        ds.shared = assistant->get();
        r.drafters.push_back(std::move(ds));
        r.on_done = [&j](const SessionResult& res) {
            j.got = res;
            j.done = true;
        };
        (*e)->add(std::move(r));
    }
    while ((*e)->step()) {
    }
    uint64_t drafted = 0, plain = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        ASSERT_TRUE(jobs[i].done);
        EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i << ": " << jobs[i].got.error;
        drafted += jobs[i].got.spec.drafted;
        plain += jobs[i].got.spec.drafted == 0;
    }
    EXPECT_GT(drafted, 0u) << "the assistant drafted for some sessions";
    EXPECT_GT(plain, 0u) << "others decoded plainly while it was taken";
    EXPECT_GT((*e)->stats().rows, (*e)->stats().steps * 2) << "passes ran several sessions at once";
}

// The full-head assistant (31B's) drafts for every session in one graph per pass: one row
// per sequence at its own position, over its own target sequence's KV. Each session's
// proposals, round by round, are those it gets drafting alone, and its tokens are plain
// greedy decoding's.
TEST_F(Gemma4Batch, the_full_head_assistant_drafts_all_sessions_in_one_graph_as_it_drafts_each_alone) {
    const std::string dir = test::make_temp_dir("gemma4-batch-31b");
    const g4::Preset tp = g4::preset("tiny-31b");
    const g4::AssistantPreset ap = g4::assistant_preset("tiny-31b");
    ASSERT_FALSE(ap.ordered);
    const std::string target = g4::write_gguf(tp, g4::make_weights(tp, 41), dir + "/target.gguf");
    const std::string asst = g4::write_assistant_gguf(ap, g4::make_assistant_weights(ap, 42), dir + "/a.gguf");
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < 4; ++i) prompts.push_back(g4::random_tokens(80 + i, 4 + i * 6));
    const GenerateParams gp = g4::greedy(20);
    std::vector<std::vector<RoundRecord>> rounds[2];
    std::vector<std::vector<int32_t>> tokens[2], plain(prompts.size());
    for (int batch = 0; batch < 2; ++batch) {
        g4::AssistantPair pair = g4::load_assistant_pair(target, asst);
        ASSERT_TRUE(pair.kv);
        if (batch == 0) {  // plain greedy decoding of each prompt alone, on the pair's own pool
            Runner alone(*pair.model, *pair.kv, device(), pipelines());
            const int seq = *pair.kv->add_sequence();
            for (size_t i = 0; i < prompts.size(); ++i) {
                ASSERT_TRUE(pair.kv->truncate(seq, 0).ok());
                auto r = generate(alone, nullptr, seq, prompts[i], gp, {});
                ASSERT_TRUE(r.ok()) << r.error().message();
                plain[i] = r->tokens;
            }
        }
        KvPoolConfig kc;
        kc.n_ctx = 256;
        kc.rows_max = g4::kRowsMax;
        kc.n_seq_max = 4;
        auto kv = KvPool::create(device(), pair.model->attention_layers(), kc, "batch");
        ASSERT_TRUE(kv.ok()) << kv.error().message();
        pair.kv = std::move(kv).value();
        auto src = ModelSource::open(asst);
        ASSERT_TRUE(src.ok());
        const DraftHeadEntry* entry = test::build_tree_plugins().find_draft_head_source((*src)->architecture(), "gemma4");
        ASSERT_TRUE(entry);
        DraftHeadOptions ho;
        ho.batch = batch == 1;
        auto head = DraftHeadDrafter::create(*entry, "assistant", std::shared_ptr<const ModelSource>(std::move(*src)),
                                             *pair.model, *pair.kv, device(), pipelines(), ho);
        ASSERT_TRUE(head.ok()) << head.error().message();
        EXPECT_EQ((*head)->batcher() != nullptr, batch == 1);
        Runner runner(*pair.model, *pair.kv, device(), pipelines());
        BatchEngineOptions o;
        o.n_batch = g4::kRowsMax;
        o.hidden_point = (*head)->hidden_point();
        auto e = BatchEngine::create(runner, nullptr, o);
        ASSERT_TRUE(e.ok()) << e.error().message();
        rounds[batch].resize(prompts.size());
        tokens[batch].resize(prompts.size());
        size_t done = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
            SessionRequest r;
            r.prompt = prompts[i];
            r.params = gp;
            r.spec.draft_max = 3;
            DrafterSlot ds;
            ds.owned = (*head)->another();
            r.drafters.push_back(std::move(ds));
            r.on_round = [&rounds, batch, i](const RoundRecord& rr) { rounds[batch][i].push_back(rr); };
            r.on_done = [&tokens, &done, batch, i](const SessionResult& res) {
                tokens[batch][i] = res.tokens;
                ++done;
            };
            (*e)->add(std::move(r));
        }
        while ((*e)->step()) {
        }
        ASSERT_EQ(done, prompts.size());
        if (batch) {
            EXPECT_GT((*head)->batched_graphs(), 0u) << "no pass drafted several sequences in one graph";
        }
    }
    size_t drafted = 0;
    for (const auto& per_session : rounds[1])
        for (const RoundRecord& rr : per_session) drafted += rr.drafted.size();
    EXPECT_GT(drafted, 0u);
    for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(tokens[0][i], plain[i]) << "session " << i;
        EXPECT_EQ(tokens[1][i], plain[i]) << "session " << i;
        ASSERT_EQ(rounds[1][i].size(), rounds[0][i].size()) << "session " << i;
        for (size_t r = 0; r < rounds[0][i].size(); ++r)
            EXPECT_EQ(rounds[1][i][r].drafted, rounds[0][i][r].drafted) << "session " << i << " round " << r;
    }
}

}  // namespace
}  // namespace tdm
