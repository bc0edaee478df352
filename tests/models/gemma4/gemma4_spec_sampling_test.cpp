// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_spec_sampling_test.cpp: issue 11's T > 0 requirement for Gemma 4 (DESIGN
// invariant 2), as tests/speculative/spec_test.cpp checks it for Qwen: speculative sampling with
// the gemma4 assistant as the drafter leaves the target's distribution as it is. The joint
// distribution of the first two sampled tokens, plain vs speculative, over many seeds; a
// two-sample chi-square on the pooled table must stay below a loose bound.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/generate.h"
#include "support/sampling_stats.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_assistant.h"
#include "gemma4_tiny_runtime.h"
#include "speculative/forced_drafter.h"
#include "support/device_fixture.h"
#include "support/prefill.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

namespace g4 = test::g4;
using Tokens = std::vector<int32_t>;

class Gemma4SpecSampling : public test::DeviceTest {};

TEST_F(Gemma4SpecSampling, speculative_sampling_with_the_assistant_preserves_the_target_distribution) {
    const std::string dir = test::make_temp_dir("gemma4-sampling");
    const g4::Preset tp = g4::preset("tiny-e2b");
    const g4::AssistantPreset ap = g4::assistant_preset("tiny-e2b");
    const std::string target_path =
        g4::write_gguf(tp, g4::amplify_layer_outputs(g4::make_weights(tp, 61), 4.0f), dir + "/target.gguf");
    const std::string assistant_path =
        g4::write_assistant_gguf(ap, g4::make_assistant_weights(ap, 62), dir + "/a.gguf");
    g4::Loaded t = g4::load(target_path, device(), pipelines());
    ASSERT_TRUE(t.runner);
    auto assistant = g4::load_assistant(assistant_path, *t.model, *t.kv);
    ASSERT_TRUE(assistant.ok()) << assistant.error().message();
    t.runner->set_hidden_point((*assistant)->hidden_point());
    const uint32_t n_vocab = t.model->info().n_vocab;

    // 31 prompt tokens: the first sampled token sits at position 31 and the draft after it at
    // 32, so every verify straddles the wrap of the sliding-window rings (32 positions) with
    // the window (8) full. The prompt but its last token is prefilled once; each run
    // truncates back to it and goes on from there (n_cached), as a prompt cache would.
    const Tokens prompt = g4::random_tokens(14, 31);
    const uint32_t n_cached = uint32_t(prompt.size() - 1);
    const int seq = *t.kv->add_sequence();
    auto pre = test::prefill(*t.runner, seq, Tokens(prompt.begin(), prompt.end() - 1), g4::kRowsMax, false, {});
    ASSERT_TRUE(pre.ok()) << pre.error().message();
    auto run_from_cache = [&](int max_tokens, uint64_t seed, Drafter* drafter, SpecStats* stats) -> Tokens {
        GenerateParams gp;
        gp.max_tokens = max_tokens;
        gp.n_batch = g4::kRowsMax;
        gp.ignore_eog = true;
        gp.n_cached = n_cached;
        gp.sampling.temperature = 1.5f;  // flat enough for several outcomes
        gp.sampling.top_k = 4;
        gp.sampling.top_p = 1.0f;
        gp.sampling.min_p = 0.0f;
        gp.sampling.seed = seed;
        EXPECT_TRUE(t.kv->truncate(seq, n_cached).ok());
        if (!drafter) {
            auto r = generate(*t.runner, nullptr, seq, prompt, gp, {});
            EXPECT_TRUE(r.ok()) << r.error().message();
            return r.ok() ? r->tokens : Tokens{};
        }
        Drafter* chain[] = {drafter};
        auto r = generate_speculative(*t.runner, nullptr, seq, prompt, gp, chain, SpecParams{}, {});
        EXPECT_TRUE(r.ok()) << r.error().message();
        if (!r.ok()) return {};
        *stats = r->stats;
        return r->gen.tokens;
    };

    // The assistant's random weights put its own proposals outside the target's top 4 nearly
    // always, so the rejection rule would only ever reject a token of probability 0. It does
    // all its work but proposes the target's greedy continuation instead (the fixed
    // proposal of the Qwen test): likely enough to be accepted often, wrong often enough to
    // be rejected, whatever token was sampled first.
    GenerateParams gg = g4::greedy(3);
    gg.n_cached = n_cached;
    ASSERT_TRUE(t.kv->truncate(seq, n_cached).ok());
    auto greedy_ref = generate(*t.runner, nullptr, seq, prompt, gg, {});
    ASSERT_TRUE(greedy_ref.ok()) << greedy_ref.error().message();

    std::map<std::pair<int, int>, int> hp, hs;
    uint64_t drafted = 0, accepted = 0;
    const int n = 400;
    for (int i = 0; i < n; ++i) {
        const Tokens a = run_from_cache(2, 100000 + uint64_t(i), nullptr, nullptr);
        ASSERT_EQ(a.size(), 2u);
        hp[{a[0], a[1]}]++;
        // three tokens: with two, the budget leaves no room for a draft after the first
        ForcedDrafter proposal(greedy_ref->tokens, prompt.size(), 1.0, n_vocab, uint64_t(i), assistant->get());
        SpecStats st;
        const Tokens b = run_from_cache(3, 900000 + uint64_t(i), &proposal, &st);
        ASSERT_EQ(b.size(), 3u);
        hs[{b[0], b[1]}]++;
        drafted += st.drafted;
        accepted += st.accepted;
    }
    // every run verified a draft for its second token; some were taken, some were not
    EXPECT_EQ(drafted, uint64_t(n));
    EXPECT_GT(accepted, uint64_t(n / 10));
    EXPECT_LT(accepted, drafted - uint64_t(n / 10));

    // two-sample chi-square over cells with enough mass
    const auto [chi2, dof] = test::two_sample_chi_square(hp, hs);
    std::printf("  %llu of %llu drafts accepted; chi2 %.1f over %d cells\n", (unsigned long long)accepted,
                (unsigned long long)drafted, chi2, dof);
    ASSERT_GT(dof, 2);
    // mean dof, sd sqrt(2 dof): 6 sd is a deliberately loose bound (fixed seeds: deterministic)
    EXPECT_LT(chi2, dof + 6.0 * std::sqrt(2.0 * dof)) << "chi2 " << chi2 << " with " << dof << " cells";
}

}  // namespace
}  // namespace tdm
