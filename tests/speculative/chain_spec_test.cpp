// SPDX-License-Identifier: Apache-2.0
// tests/speculative/chain_spec_test.cpp: chains of drafters under the goodput controller
// (speculative/chain_goodput.h) on a synthetic Qwen3 target whose greedy output cycles: the
// output is plain greedy output whichever drafter the controller asks, for one sequence
// alone (generate_speculative) and for sessions sharing passes (the batching engine, whose
// plan weighs each chain's drafts); a drafter whose drafts are never accepted is asked a few
// times while ngram-simple drafts. Five short prompts: the check is of the mechanism (the
// controller's choices on many sequences: tests/speculative/chain_goodput_test.cpp).
#include <gtest/gtest.h>

#include <random>

#include "engine/batch_engine.h"
#include "engine/generate.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/forced_drafter.h"
#include "speculative/plugin_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

std::unique_ptr<Drafter> ngram_simple(uint32_t n_vocab) {
    const DrafterEntry* e = test::build_tree_plugins().find_drafter("ngram-simple");
    EXPECT_NE(e, nullptr);
    if (!e) return nullptr;
    auto d = PluginDrafter::create(*e, {{"ngram_size_n", "2"}, {"ngram_size_m", "8"}, {"ngram_min_hits", "1"},
                                        {"n_vocab", std::to_string(n_vocab)}});
    EXPECT_TRUE(d.ok()) << d.error().message();
    return d.ok() ? std::move(d).value() : nullptr;
}

class ChainSpec : public test::DeviceTest {
protected:
    void SetUp() override {
        test::DeviceTest::SetUp();
        // greedy output cycles through 300..304 (and 305..309): ngram-simple matches it
        const std::string path = test::make_temp_dir("chain-spec") + "/repeating.gguf";
        auto shape = synth::qwen3_preset("tiny");
        ASSERT_TRUE(shape.ok());
        synth::Qwen3SynthOptions so;
        so.weight_type = DType::Q8_0;
        so.repeating = true;
        ASSERT_TRUE(synth::synth_qwen3_gguf(path, *shape, so).ok());
        auto m = Model::load(path, test::build_tree_plugins(), device());
        ASSERT_TRUE(m.ok()) << m.error().message();
        model_ = std::move(m).value();
        gp_.max_tokens = 40;
        gp_.ignore_eog = true;
        gp_.sampling.temperature = 0;
        auto kv = KvPool::create(device(), model_->attention_layers(), kv_config(), "chain-plain");
        ASSERT_TRUE(kv.ok()) << kv.error().message();
        Runner runner(*model_, **kv, device(), pipelines());
        const int seq = *(*kv)->add_sequence();
        for (uint64_t i = 0; i < 5; ++i) {
            std::mt19937_64 rng(700 + i);
            std::vector<int32_t> p(6 + 2 * i);
            for (auto& t : p) t = int32_t(300 + rng() % 10);
            ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
            auto r = generate(runner, nullptr, seq, p, gp_, {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            prompts_.push_back(std::move(p));
            want_.push_back(r->tokens);
        }
    }
    static KvPoolConfig kv_config() {
        KvPoolConfig kc;
        kc.n_ctx = 128;
        kc.n_seq_max = 5;
        return kc;
    }
    // A drafter proposing the target's own tokens, each right with probability `acceptance`.
    std::unique_ptr<Drafter> forced(size_t prompt, double acceptance) const {
        return std::make_unique<ForcedDrafter>(want_[prompt], prompts_[prompt].size(), acceptance,
                                               model_->info().n_vocab, 40 + prompt);
    }

    std::unique_ptr<Model> model_;
    GenerateParams gp_;
    std::vector<std::vector<int32_t>> prompts_, want_;
};

TEST_F(ChainSpec, greedy_output_equals_plain_and_a_drafter_never_accepted_is_asked_a_few_times) {
    auto kv = KvPool::create(device(), model_->attention_layers(), kv_config(), "chain-solo");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(*model_, **kv, device(), pipelines());
    const int seq = *(*kv)->add_sequence();
    const uint32_t n_vocab = model_->info().n_vocab;
    SpecParams sp;
    sp.draft_max = 8;
    sp.auto_k = true;
    uint64_t useless_asked = 0, ngram_drafts = 0, rounds = 0;
    for (size_t i = 0; i < prompts_.size(); ++i) {
        for (bool useless_first : {true, false}) {
            SCOPED_TRACE(::testing::Message() << "prompt " << i << (useless_first ? ", useless first" : ", ngram first"));
            std::unique_ptr<Drafter> useless = forced(i, 0.0), ngram = ngram_simple(n_vocab);
            ASSERT_TRUE(ngram);
            Drafter* chain[2] = {useless.get(), ngram.get()};
            if (!useless_first) std::swap(chain[0], chain[1]);
            ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
            auto r = generate_speculative(runner, nullptr, seq, prompts_[i], gp_, chain, sp, {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            ASSERT_EQ(r->gen.tokens, want_[i]);
            const DrafterStats& u = r->stats.drafters[useless_first ? 0 : 1];
            const DrafterStats& n = r->stats.drafters[useless_first ? 1 : 0];
            useless_asked += u.calls_gen;
            ngram_drafts += n.gen_drafts;
            rounds += r->stats.rounds;
        }
    }
    EXPECT_GT(ngram_drafts, 20u) << "ngram-simple follows the cycles";
    // each sequence starts fresh: its first rounds try both, then the useless one is off
    EXPECT_LE(useless_asked, 5u * 2 * prompts_.size()) << "of " << rounds << " rounds";
}

TEST_F(ChainSpec, sessions_sharing_passes_keep_greedy_output_with_chains) {
    auto kv = KvPool::create(device(), model_->attention_layers(), kv_config(), "chain-batched");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(*model_, **kv, device(), pipelines());
    BatchEngineOptions o;
    o.n_batch = 32;
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    std::vector<SessionResult> got(prompts_.size());
    std::vector<bool> done(prompts_.size(), false);
    for (size_t i = 0; i < prompts_.size(); ++i) {
        SessionRequest r;
        r.prompt = prompts_[i];
        r.params = gp_;
        r.spec.draft_max = 8;
        r.spec.auto_k = true;
        // a useless drafter, ngram-simple, and one agreeing 90% of the time, in turns
        for (int j = 0; j < 3; ++j) {
            DrafterSlot ds;
            const int which = (int(i) + j) % 3;
            ds.owned = which == 0 ? forced(i, 0.0) : which == 1 ? ngram_simple(model_->info().n_vocab) : forced(i, 0.9);
            ASSERT_TRUE(ds.owned);
            r.drafters.push_back(std::move(ds));
        }
        r.on_done = [&got, &done, i](const SessionResult& res) {
            got[i] = res;
            done[i] = true;
        };
        (*e)->add(std::move(r));
    }
    for (int guard = 0; guard < 10000 && (*e)->step(); ++guard) {
    }
    uint64_t accepted = 0;
    for (size_t i = 0; i < prompts_.size(); ++i) {
        ASSERT_TRUE(done[i]);
        EXPECT_EQ(got[i].tokens, want_[i]) << "prompt " << i << ": " << got[i].error;
        accepted += got[i].spec.accepted;
        EXPECT_TRUE(got[i].spec.controller.on);
    }
    EXPECT_GT(accepted, 20u);
}

}  // namespace
}  // namespace tdm
