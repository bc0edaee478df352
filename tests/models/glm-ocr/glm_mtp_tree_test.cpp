// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_mtp_tree_test.cpp: GLM's MTP head (a head with a KV of its own)
// growing draft trees (--draft-tree; speculative/draft_head_tree.cpp) on synthetic GLM
// models: greedy speculative output with its trees equals plain greedy output, alone on the
// random model (trees rejected at every depth) and, in the batching engine beside other
// sequences, on the repeating one (deep paths accepted, off the first branch too); every round,
// TreeDrafterCheck (tests/support/tree_drafter_check.h) checks the tree's bounds, the chain inside a
// one-child tree against the head's chain drafts, and that rejected branches left no trace
// in the head's KV. Five prompts per model: the checks are of the mechanism.
#include "glm_helpers.h"

#include "engine/batch_engine.h"
#include "support/tree_drafter_check.h"

namespace tdm {
namespace {

using testglm::greedy;
using testglm::random_prompt;

Result<std::unique_ptr<DraftHeadDrafter>> glm_tree_head(const testglm::Target& t) {
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    if (!e) return Error("no draft head answers --spec-type mtp for glm4");
    DraftHeadOptions o;
    o.kv.n_ctx = 256;
    o.kv.n_seq_max = 12;  // TreeDrafterCheck's three drafters per sequence
    return DraftHeadDrafter::create(*e, "mtp", t.model->shared_source(), *t.model, *t.kv, test::test_device(),
                                    test::test_pipelines(), o);
}

class GlmMtpTree : public test::DeviceTest {};

TEST_F(GlmMtpTree, trees_grown_by_the_head_give_plain_greedy_output) {
    testglm::ModelSpec ms{DType::Q8_0, false};
    testglm::Target t = testglm::load_target(testglm::synth(ms));
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    auto head = glm_tree_head(t);
    ASSERT_TRUE(head.ok()) << head.error().message();
    runner.set_hidden_point((*head)->hidden_point());
    const int seq = *t.kv->add_sequence();
    SpecParams sp;
    sp.draft_max = 5;
    sp.tree = {3, 2, 6};
    uint64_t tree_rounds = 0, rounds = 0, branched = 0;
    for (int i = 0; i < 5; ++i) {
        const auto prompt = random_prompt(4100 + uint64_t(i), 3 + size_t(i * 5), 500);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy(24), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        test::TreeDrafterCheck check((*head)->another(), (*head)->another(), (*head)->another());
        Drafter* chain[] = {&check};
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(24), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        tree_rounds += spec->stats.tree_rounds;
        rounds += check.rounds();
        branched += check.branched();
    }
    EXPECT_GT(rounds, 10u);
    EXPECT_GT(branched, 0u) << "no tree branched";
    EXPECT_GT(tree_rounds, 0u) << "no round verified a tree";
}

// Sessions whose head grows trees share passes with a session drafting chains with the same
// head and one decoding plainly; every greedy output equals the session's plain run.
TEST_F(GlmMtpTree, tree_sessions_share_passes_with_chain_and_plain_sessions) {
    testglm::ModelSpec ms{DType::Q8_0, false};
    ms.repeating = true;
    testglm::Target t = testglm::load_target(testglm::synth(ms));
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    auto head = glm_tree_head(t);
    ASSERT_TRUE(head.ok()) << head.error().message();
    runner.set_hidden_point((*head)->hidden_point());
    struct Job {
        std::vector<int32_t> prompt, want;
        SessionResult got;
        bool done = false;
    };
    std::vector<Job> jobs(4);
    {
        const int seq = *t.kv->add_sequence();
        for (size_t i = 0; i < jobs.size(); ++i) {
            jobs[i].prompt = random_prompt(4200 + i, 4 + i * 6, 500);
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            auto r = generate(runner, nullptr, seq, jobs[i].prompt, greedy(20), {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            jobs[i].want = r->tokens;
        }
        t.kv->free_sequence(seq);
    }
    // the engine's pool: one sequence per session
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_seq_max = 4;
    auto kv = KvPool::create(device(), t.model->attention_layers(), kc, "tree-sessions");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner batch_runner(*t.model, **kv, device(), pipelines());
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    ASSERT_NE(e, nullptr);
    DraftHeadOptions o;
    o.kv.n_ctx = 256;
    o.kv.n_seq_max = 12;
    auto bhead = DraftHeadDrafter::create(*e, "mtp", t.model->shared_source(), *t.model, **kv, test::test_device(),
                                          test::test_pipelines(), o);
    ASSERT_TRUE(bhead.ok()) << bhead.error().message();
    BatchEngineOptions bo;
    bo.n_batch = 16;
    auto engine = BatchEngine::create(batch_runner, nullptr, bo, {bhead->get()});
    ASSERT_TRUE(engine.ok()) << engine.error().message();
    for (size_t i = 0; i < jobs.size(); ++i) {
        Job& j = jobs[i];
        SessionRequest r;
        r.prompt = j.prompt;
        r.params = greedy(20);
        r.spec.draft_max = 5;
        if (i < 2) {
            r.spec.tree = {3, 2, 6};
            DrafterSlot ds;
            ds.owned = std::make_unique<test::TreeDrafterCheck>((*bhead)->another(), (*bhead)->another(), (*bhead)->another());
            r.drafters.push_back(std::move(ds));
        } else if (i == 2) {
            DrafterSlot ds;
            ds.owned = (*bhead)->another();
            r.drafters.push_back(std::move(ds));
        }
        r.on_done = [&j](const SessionResult& res) {
            j.got = res;
            j.done = true;
        };
        (*engine)->add(std::move(r));
    }
    for (int guard = 0; guard < 10000 && (*engine)->step(); ++guard) {
    }
    uint64_t tree_rounds = 0, accepted = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        ASSERT_TRUE(jobs[i].done);
        EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i << ": " << jobs[i].got.error;
        if (i < 2) {
            tree_rounds += jobs[i].got.spec.tree_rounds;
            accepted += jobs[i].got.spec.accepted;
        }
        if (i >= 2) {
            EXPECT_EQ(jobs[i].got.spec.tree_rounds, 0u) << "job " << i;
        }
    }
    EXPECT_GT(tree_rounds, 0u);
    EXPECT_GT(accepted, 2 * tree_rounds) << "the repeating model's trees were mostly rejected";
    EXPECT_GT((*engine)->stats().rows, (*engine)->stats().steps * 2) << "passes ran several sessions at once";
}

}  // namespace
}  // namespace tdm
