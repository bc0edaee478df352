// SPDX-License-Identifier: Apache-2.0
// tests/speculative/ngram_tree_test.cpp: n-gram drafters growing trees through the batching
// engine (tandem/ext/drafter_branches.h, speculative/branch_tree.h): on a model whose greedy
// output cycles, prompts whose tokens are followed by different tokens at different places
// give ngram-simple and ngram-map-k4v several branches per round; greedy output with tree
// rounds equals plain greedy output for sessions sharing passes. Under the goodput
// controller a CPU device verifies chains instead, and says so in the statistics
// (speculative/tree_choice.h). Eight short prompts: the check is of the mechanism.
#include <gtest/gtest.h>

#include <random>

#include "engine/batch_engine.h"
#include "engine/generate.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/plugin_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

using TreeTokens = std::vector<int32_t>;

std::unique_ptr<Drafter> ngram_tree_drafter(const char* type, uint32_t m, uint32_t n_vocab) {
    const DrafterEntry* e = test::build_tree_plugins().find_drafter(type);
    EXPECT_NE(e, nullptr) << type;
    if (!e) return nullptr;
    EXPECT_NE(e->propose_branches, nullptr) << type << " proposes branches";
    auto d = PluginDrafter::create(*e, {{"ngram_size_n", "1"}, {"ngram_size_m", std::to_string(m)},
                                        {"ngram_min_hits", "1"}, {"n_vocab", std::to_string(n_vocab)}});
    EXPECT_TRUE(d.ok()) << d.error().message();
    return d.ok() ? std::move(d).value() : nullptr;
}

class NgramTree : public test::DeviceTest {};

TEST_F(NgramTree, greedy_output_with_ngram_branches_equals_plain_greedy_and_cpu_devices_choose_chains) {
    // greedy output cycles through 300..304 (and 305..309): period 5
    const std::string path = test::make_temp_dir("ngram-tree") + "/repeating.gguf";
    auto shape = synth::qwen3_preset("tiny");
    ASSERT_TRUE(shape.ok());
    synth::Qwen3SynthOptions so;
    so.weight_type = DType::Q8_0;
    so.repeating = true;
    ASSERT_TRUE(synth::synth_qwen3_gguf(path, *shape, so).ok());
    auto m = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 128;
    kc.n_seq_max = 4;
    const uint32_t n_vocab = (*m)->info().n_vocab;

    // tokens of both cycles in random order: each is followed by several different tokens
    std::vector<TreeTokens> prompts, want;
    GenerateParams gp;
    gp.max_tokens = 20;
    gp.ignore_eog = true;
    gp.sampling.temperature = 0;
    {
        auto kv = KvPool::create(device(), (*m)->attention_layers(), kc, "ngram-tree-plain");
        ASSERT_TRUE(kv.ok()) << kv.error().message();
        Runner runner(**m, **kv, device(), pipelines());
        const int seq = *(*kv)->add_sequence();
        for (uint64_t i = 0; i < 8; ++i) {
            std::mt19937_64 rng(900 + i);
            TreeTokens p(8 + 3 * i);
            for (auto& t : p) t = int32_t(300 + rng() % 10);
            ASSERT_TRUE((*kv)->truncate(seq, 0).ok());
            auto r = generate(runner, nullptr, seq, p, gp, {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            prompts.push_back(std::move(p));
            want.push_back(r->tokens);
        }
    }

    for (bool auto_k : {false, true}) {
        SCOPED_TRACE(auto_k ? "the goodput controller" : "fixed k: trees forced");
        auto kv = KvPool::create(device(), (*m)->attention_layers(), kc, "ngram-tree");  // the engine holds its slots
        ASSERT_TRUE(kv.ok()) << kv.error().message();
        Runner runner(**m, **kv, device(), pipelines());
        BatchEngineOptions o;
        o.n_batch = 32;
        auto e = BatchEngine::create(runner, nullptr, o);
        ASSERT_TRUE(e.ok()) << e.error().message();
        std::vector<SessionResult> got(prompts.size());
        std::vector<bool> done(prompts.size(), false);
        for (size_t i = 0; i < prompts.size(); ++i) {
            SessionRequest r;
            r.prompt = prompts[i];
            r.params = gp;
            r.spec.draft_max = 11;
            r.spec.auto_k = auto_k;
            r.spec.tree = {4, 3, 12};
            DrafterSlot ds;
            ds.owned = i % 2 ? ngram_tree_drafter("ngram-map-k4v", 4, n_vocab) : ngram_tree_drafter("ngram-simple", 6, n_vocab);
            ASSERT_TRUE(ds.owned);
            r.drafters.push_back(std::move(ds));
            r.on_done = [&got, &done, i](const SessionResult& res) {
                got[i] = res;
                done[i] = true;
            };
            (*e)->add(std::move(r));
        }
        for (int guard = 0; guard < 10000 && (*e)->step(); ++guard) {
        }
        uint64_t tree_rounds = 0, chains_chosen = 0, accepted = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
            ASSERT_TRUE(done[i]);
            EXPECT_EQ(got[i].tokens, want[i]) << "prompt " << i << ": " << got[i].error;
            tree_rounds += got[i].spec.tree_rounds;
            chains_chosen += got[i].spec.tree_chains_chosen;
            accepted += got[i].spec.accepted;
        }
        EXPECT_GT(accepted, 10u) << "the drafters follow the cycles";
        if (!auto_k) {
            EXPECT_GT(tree_rounds, 8u) << "several continuations per key make trees";
            EXPECT_EQ(chains_chosen, 0u);
        } else if (device().caps().is_cpu()) {
            EXPECT_EQ(tree_rounds, 0u) << "a tree row costs an attention pass of its own on a CPU device";
            EXPECT_GT(chains_chosen, 8u);
        }
    }
}

}  // namespace
}  // namespace tdm
