// SPDX-License-Identifier: Apache-2.0
// tests/support/head_sampling_check.cpp: plain vs speculative sampling with a draft head
// (see head_sampling_check.h).
#include "support/head_sampling_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "engine/generate.h"
#include "speculative/forced_drafter.h"
#include "support/sampling_stats.h"

namespace tdm::test {
namespace {

using Tokens = std::vector<int32_t>;

GenerateParams sampling_params(int max_tokens, uint64_t seed) {
    GenerateParams gp;
    gp.max_tokens = max_tokens;
    gp.ignore_eog = true;
    gp.sampling.temperature = 1.5f;  // flat enough for several outcomes
    gp.sampling.top_k = 4;
    gp.sampling.top_p = 1.0f;
    gp.sampling.min_p = 0.0f;
    gp.sampling.seed = seed;
    return gp;
}

}  // namespace

HeadSamplingCounts sample_with_head(Runner& runner, KvPool& kv, std::span<const int32_t> prompt, Drafter& head,
                                    uint32_t n_vocab, int runs) {
    HeadSamplingCounts c;
    const Tokens p(prompt.begin(), prompt.end());
    GenerateParams greedy;
    greedy.max_tokens = 3;
    greedy.ignore_eog = true;
    greedy.sampling.temperature = 0;
    int seq = *kv.add_sequence();
    auto reference = generate(runner, nullptr, seq, p, greedy, {});
    kv.free_sequence(seq);
    EXPECT_TRUE(reference.ok()) << reference.error().message();
    if (!reference.ok()) return c;

    std::map<std::pair<int, int>, int> plain, spec;
    for (int i = 0; i < runs; ++i) {
        seq = *kv.add_sequence();
        auto a = generate(runner, nullptr, seq, p, sampling_params(2, 100000 + uint64_t(i)), {});
        kv.free_sequence(seq);
        EXPECT_TRUE(a.ok()) << a.error().message();
        if (!a.ok() || a->tokens.size() != 2) return c;
        plain[{a->tokens[0], a->tokens[1]}]++;

        ForcedDrafter proposal(reference->tokens, p.size(), 1.0, n_vocab, uint64_t(i), &head);
        Drafter* chain[] = {&proposal};
        seq = *kv.add_sequence();
        auto b = generate_speculative(runner, nullptr, seq, p, sampling_params(3, 900000 + uint64_t(i)), chain,
                                      SpecParams{}, {});
        kv.free_sequence(seq);
        EXPECT_TRUE(b.ok()) << b.error().message();
        if (!b.ok() || b->gen.tokens.size() != 3) return c;
        spec[{b->gen.tokens[0], b->gen.tokens[1]}]++;
        c.drafted += b->stats.drafted;
        c.accepted += b->stats.accepted;
    }
    const auto [chi2, cells] = two_sample_chi_square(plain, spec);
    c.chi2 = chi2;
    c.cells = cells;
    return c;
}

void expect_same_distribution(const HeadSamplingCounts& c, int runs) {
    std::printf("  %llu of %llu drafts accepted; chi2 %.1f over %d cells\n", (unsigned long long)c.accepted,
                (unsigned long long)c.drafted, c.chi2, c.cells);
    EXPECT_GE(c.drafted, uint64_t(runs)) << "a run verified no draft";
    // both outcomes of the rejection rule in good numbers (how often the greedy proposal is
    // taken depends on the target: 10-30% on the tiny ones)
    EXPECT_GE(c.accepted, uint64_t(runs / 20));
    EXPECT_GE(c.drafted - c.accepted, uint64_t(runs / 20));
    EXPECT_GT(c.cells, 2);
    EXPECT_LT(c.chi2, c.cells + 6.0 * std::sqrt(2.0 * c.cells)) << "chi2 " << c.chi2 << " with " << c.cells << " cells";
}

}  // namespace tdm::test
