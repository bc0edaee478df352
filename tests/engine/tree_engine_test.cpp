// SPDX-License-Identifier: Apache-2.0
// tests/engine/tree_engine_test.cpp: tree rounds through the batching engine
// (speculative/draft_tree.h, engine/batch_engine.h). With a drafter that grows trees (the
// right continuation on a random branch, wrong siblings beside it), greedy output equals
// plain greedy decoding for sessions sharing passes, with nodes accepted off the first
// branch (their K/V moved to consecutive positions); a sampling session beside them
// verifies trees too (speculative/tree_sampling.h), and with a fixed seed gives the same
// tokens alone as beside them. (Its distribution is tests/speculative/tree_sampling_test.cpp's.)
// Six short prompts: the check is of the mechanism (the kernels' exactness is
// tests/speculative/draft_tree_test.cpp's).
#include <gtest/gtest.h>

#include <random>

#include "engine/batch_engine.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

// Grows a tree over what the reference run generated next: at each depth `width` children
// of the node on the right path, the right token among them with probability `acceptance`
// (at a random place), and the path goes on from the right child, or from a wrong one.
class ReferenceTreeDrafter final : public Drafter {
public:
    ReferenceTreeDrafter(std::vector<int32_t> full, double acceptance, uint32_t width, uint32_t n_vocab,
                         uint64_t seed)
        : full_(std::move(full)), a_(acceptance), width_(width), n_vocab_(n_vocab), rng_(seed) {}
    const std::string& name() const override { return name_; }
    Status begin(std::span<const int32_t>) override { return {}; }
    bool grows_trees() const override { return true; }
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override {
        std::vector<int32_t> out;
        for (uint32_t i = 0; i < req.max && req.history.size() + i < full_.size(); ++i)
            out.push_back(full_[req.history.size() + i]);
        ++chains_;
        return out;
    }
    Result<DraftTree> draft_tree(const DraftRequest& req) override {
        DraftTree t(req.history.back());
        uint32_t on = 0;  // the node the next level grows under
        for (size_t at = req.history.size(); at < full_.size() && t.size() < req.tree.nodes; ++at) {
            const bool right = double(rng_() >> 11) * 0x1.0p-53 < a_;
            const uint32_t right_at = uint32_t(rng_() % width_);
            uint32_t next = 0;
            for (uint32_t c = 0; c < width_ && t.size() < req.tree.nodes; ++c) {
                const int32_t tok = full_[at];
                const int32_t wrong = int32_t((uint32_t(tok) + 1 + uint32_t(rng_() % (n_vocab_ - 1))) % n_vocab_);
                const uint32_t node = TDM_TRY(t.add(on, right && c == right_at ? tok : wrong));
                if (c == right_at || next == 0) next = node;
            }
            if (next == 0) break;
            on = next;
        }
        return t;
    }
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }
    uint32_t chains() const { return chains_; }

private:
    std::string name_ = "reference-tree";
    std::vector<int32_t> full_;
    double a_;
    uint32_t width_, n_vocab_;
    std::mt19937_64 rng_;
    uint32_t chains_ = 0;
};

class TreeEngineTest : public test::DeviceTest {};

TEST_F(TreeEngineTest, greedy_tree_rounds_give_plain_greedy_output_for_sessions_sharing_passes) {
    const std::string path = test::make_temp_dir("tree-engine") + "/q3.gguf";
    auto shape = synth::qwen3_preset("tiny");
    ASSERT_TRUE(shape.ok());
    synth::Qwen3SynthOptions so;
    so.weight_type = DType::Q8_0;
    so.seed = 5;
    ASSERT_TRUE(synth::synth_qwen3_gguf(path, *shape, so).ok());
    auto m = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_seq_max = 3;
    auto kv = KvPool::create(device(), (*m)->attention_layers(), kc, "tree-engine");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(**m, **kv, device(), pipelines());
    const uint32_t n_vocab = (*m)->info().n_vocab;

    struct Job {
        std::vector<int32_t> prompt, want;
        float temperature = 0;
        SessionResult got;
        bool done = false;
        ReferenceTreeDrafter* drafter = nullptr;
    };
    std::vector<Job> jobs(6);
    GenerateParams gp;
    gp.max_tokens = 24;
    gp.ignore_eog = true;
    {
        const int seq = *(*kv)->add_sequence();
        for (size_t i = 0; i < jobs.size(); ++i) {
            std::mt19937_64 rng(300 + i);
            jobs[i].prompt.resize(4 + i * 5);
            for (auto& t : jobs[i].prompt) t = int32_t(rng() % 500);
            jobs[i].temperature = i == 5 ? 0.8f : 0.0f;  // sampling: trees as well
            ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
            GenerateParams p = gp;
            p.sampling.temperature = jobs[i].temperature;
            p.sampling.seed = 7;
            auto r = generate(runner, nullptr, seq, jobs[i].prompt, p, {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            jobs[i].want = r->tokens;
        }
        (*kv)->free_sequence(seq);
    }
    BatchEngineOptions o;
    o.n_batch = 16;
    o.reuse_slots = false;  // the sampling session's run alone below prefills as it did first
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    for (size_t i = 0; i < jobs.size(); ++i) {
        Job& j = jobs[i];
        SessionRequest r;
        r.prompt = j.prompt;
        r.params = gp;
        r.params.sampling.temperature = j.temperature;
        r.params.sampling.seed = 7;
        r.spec.draft_max = 11;
        r.spec.tree = {4, 3, 12};
        std::vector<int32_t> full = j.prompt;
        full.insert(full.end(), j.want.begin(), j.want.end());
        auto d = std::make_unique<ReferenceTreeDrafter>(full, 0.7, 3, n_vocab, 40 + i);
        j.drafter = d.get();
        DrafterSlot ds;
        ds.owned = std::move(d);
        r.drafters.push_back(std::move(ds));
        r.on_done = [&j](const SessionResult& res) {
            j.got = res;
            j.done = true;
        };
        (*e)->add(std::move(r));
    }
    for (int guard = 0; guard < 10000 && (*e)->step(); ++guard) {
    }
    uint64_t tree_rounds = 0, deep = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        ASSERT_TRUE(jobs[i].done);
        // sampling with drafts keeps the distribution, not the tokens of plain sampling
        if (jobs[i].temperature == 0) {
            EXPECT_EQ(jobs[i].got.tokens, jobs[i].want) << "job " << i << ": " << jobs[i].got.error;
        }
        EXPECT_EQ(jobs[i].got.tokens.size(), 24u) << "job " << i << ": " << jobs[i].got.error;
        const SpecStats& st = jobs[i].got.spec;
        tree_rounds += st.tree_rounds;
        for (size_t d = 2; d < st.tree_depths.size(); ++d) deep += st.tree_depths[d];
        if (jobs[i].temperature > 0) {
            EXPECT_GT(st.tree_rounds, 0u) << "sampling verifies trees";
            EXPECT_EQ(jobs[i].drafter->chains(), 0u);
        }
    }
    EXPECT_GT(tree_rounds, 10u);
    EXPECT_GT(deep, 0u) << "no round accepted two drafts or more of a tree";
    EXPECT_GT((*e)->stats().rows, (*e)->stats().steps * 2) << "passes ran several sessions at once";

    // The sampling session again, alone, with the same seeds: the same tokens (the engine
    // resumes no prefix, so its rounds are the same ones).
    Job& sampled = jobs[5];
    SessionRequest again;
    again.prompt = sampled.prompt;
    again.params = gp;
    again.params.sampling.temperature = sampled.temperature;
    again.params.sampling.seed = 7;
    again.spec.draft_max = 11;
    again.spec.tree = {4, 3, 12};
    std::vector<int32_t> full = sampled.prompt;
    full.insert(full.end(), sampled.want.begin(), sampled.want.end());
    DrafterSlot ds;
    ds.owned = std::make_unique<ReferenceTreeDrafter>(full, 0.7, 3, n_vocab, 40 + 5);
    again.drafters.push_back(std::move(ds));
    SessionResult alone;
    bool alone_done = false;
    again.on_done = [&](const SessionResult& res) {
        alone = res;
        alone_done = true;
    };
    (*e)->add(std::move(again));
    for (int guard = 0; guard < 10000 && (*e)->step(); ++guard) {
    }
    ASSERT_TRUE(alone_done);
    EXPECT_EQ(alone.tokens, sampled.got.tokens);
    EXPECT_GT(alone.spec.tree_rounds, 0u);
}

}  // namespace
}  // namespace tdm
