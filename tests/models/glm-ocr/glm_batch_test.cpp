// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_batch_test.cpp: continuous batching (engine/batch_engine.h) on GLM-OCR with its
// MTP head, as `tandem serve` runs it: sessions sharing passes get the tokens of plain greedy
// decoding alone, and the head's proposals, round by round, are the same whether it drafts each
// sequence alone or all of them in one graph (the head declares batched drafting).
#include "glm_helpers.h"

#include "engine/batch_engine.h"

namespace tdm {
namespace {

using testglm::greedy;
using testglm::random_prompt;

class GlmBatch : public test::DeviceTest {};

TEST_F(GlmBatch, mtp_sequences_draft_in_one_graph_and_propose_what_they_propose_alone) {
    for (bool repeating : {false, true}) {
        const std::string path = testglm::synth({DType::Q8_0, false, repeating});
        auto m = Model::load(path, test::build_tree_plugins(), device());
        ASSERT_TRUE(m.ok()) << m.error().message();
        std::vector<std::vector<int32_t>> prompts, want;
        for (size_t i = 0; i < 5; ++i) prompts.push_back(random_prompt(1700 + i, 4 + i * 9, 500));
        const GenerateParams gp = greedy(14);
        {
            testglm::Target t = testglm::load_target(path);
            ASSERT_TRUE(t.kv);
            Runner alone(*t.model, *t.kv, device(), pipelines());
            const int seq = *t.kv->add_sequence();
            for (const auto& p : prompts) {
                ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
                auto r = generate(alone, nullptr, seq, p, gp, {});
                ASSERT_TRUE(r.ok()) << r.error().message();
                want.push_back(r->tokens);
            }
        }
        std::vector<std::vector<RoundRecord>> rounds[2];
        for (int batch = 0; batch < 2; ++batch) {
            KvPoolConfig kc;
            kc.n_ctx = 256;
            kc.n_seq_max = 4;
            auto kv = KvPool::create(device(), (*m)->attention_layers(), kc, "batch");
            ASSERT_TRUE(kv.ok()) << kv.error().message();
            const DraftHeadEntry* entry = test::build_tree_plugins().find_draft_head("mtp", (*m)->arch().desc->name);
            ASSERT_NE(entry, nullptr);
            DraftHeadOptions ho;
            ho.kv.n_ctx = 256;
            ho.kv.n_seq_max = 5;
            ho.batch = batch == 1;
            auto mtp = DraftHeadDrafter::create(*entry, "mtp", (*m)->shared_source(), **m, **kv, device(), pipelines(),
                                                ho);
            ASSERT_TRUE(mtp.ok()) << mtp.error().message();
            EXPECT_EQ((*mtp)->batcher() != nullptr, batch == 1);
            Runner runner(**m, **kv, device(), pipelines());
            BatchEngineOptions o;
            o.n_batch = 8;
            o.hidden_point = (*mtp)->hidden_point();
            auto e = BatchEngine::create(runner, nullptr, o);
            ASSERT_TRUE(e.ok()) << e.error().message();
            std::vector<SessionResult> got(prompts.size());
            std::vector<bool> done(prompts.size(), false);
            rounds[batch].resize(prompts.size());
            for (size_t i = 0; i < prompts.size(); ++i) {
                SessionRequest r;
                r.prompt = prompts[i];
                r.params = gp;
                r.spec.draft_max = 3;
                DrafterSlot ds;
                ds.owned = (*mtp)->another();
                r.drafters.push_back(std::move(ds));
                r.on_round = [&rounds, batch, i](const RoundRecord& rr) { rounds[batch][i].push_back(rr); };
                r.on_done = [&got, &done, i](const SessionResult& res) {
                    got[i] = res;
                    done[i] = true;
                };
                (*e)->add(std::move(r));
            }
            for (int guard = 0; guard < 100000 && (*e)->step(); ++guard) {
            }
            for (size_t i = 0; i < prompts.size(); ++i) {
                ASSERT_TRUE(done[i]);
                EXPECT_EQ(got[i].tokens, want[i]) << "job " << i << (batch ? ", batched" : ", alone");
                EXPECT_GT(got[i].spec.drafted, 0u) << "job " << i;
                if (repeating) {
                    EXPECT_EQ(got[i].spec.accepted, got[i].spec.drafted) << "job " << i;
                }
            }
            if (batch == 1) {
                EXPECT_GT((*mtp)->batched_graphs(), 0u) << "no pass drafted several sequences in one graph";
            }
        }
        for (size_t i = 0; i < prompts.size(); ++i) {
            ASSERT_EQ(rounds[0][i].size(), rounds[1][i].size()) << "job " << i;
            for (size_t r = 0; r < rounds[0][i].size(); ++r)
                EXPECT_EQ(rounds[0][i][r].drafted, rounds[1][i][r].drafted) << "job " << i << " round " << r;
        }
    }
}

}  // namespace
}  // namespace tdm
