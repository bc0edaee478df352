// SPDX-License-Identifier: Apache-2.0
// tests/speculative/goodput_bench_sim_test.cpp: issue 40's goals for `bench spec`, in a
// simulation of what the controller meets on lavapipe that the plain cost tables leave out:
// timing noise (a few percent per pass, and one pass in 25 slowed by 20-100%), a draft head
// that catches up on the rows it skipped (its draft after plain steps costs more than after a
// round), a warm-up whose forced drafts at 1/2 hand on costs alone, and draws fixed per output
// position, as `--force-acceptance` draws them; with the MTP head's costs and with the Gemma 4
// assistant's. The default (no flag) must stay within 3% of plain decoding at every acceptance
// and reach 95% of fixed k = 1 at 0.7 (held at 95.5%, a margin over the 200 seeds' spread), in
// expectation over many seeds: a single real run spreads by more than those margins, so this
// is where the design is held to them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "speculative/forced_drafter.h"
#include "speculative/goodput.h"
#include "speculative/goodput_history.h"

namespace tdm {
namespace {

// Qwen3.5-0.8B with its MTP head on lavapipe, in plain steps of 10 ms: a verify of k + 1 rows
// 10 (1 + 0.35 k), a draft 2.3 per token right after a round, plus the catch-up: 1.05 after the
// prompt, 1.2 + 0.06 per skipped row after plain steps (measured: 41 ms after a round, 55-74 after
// a 16-token prompt, 80-150 after 8-35 plain steps, against a plain step of 175-180).
struct NoisyLavapipe {
    std::mt19937_64 rng;
    double noise() {
        std::normal_distribution<double> jitter(0.0, 0.04);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        double f = std::exp(jitter(rng));
        if (u(rng) < 0.04) f *= 1.2 + 0.8 * u(rng);
        return f;
    }
};

// What a round costs, in plain steps of 10 ms: a verify of k + 1 rows 10 (1 + verify_per_draft k),
// a draft draft_per_token per token plus the head's catch-up on the rows it skipped:
// after_prompt after the prompt, catch_up + catch_up_per_row per row after plain steps.
struct RoundCosts {
    double verify_per_draft, draft_per_token, after_prompt, catch_up, catch_up_per_row;
};
// Qwen3.5-0.8B's MTP head (above).
constexpr RoundCosts kMtpHead{0.35, 2.3, 1.05, 1.2, 0.06};
// Gemma 4 E2B's assistant on lavapipe: it reads the target's K/V and keeps no state of its own,
// so it catches up on nothing; a draft 0.6 per token (24 ms against plain steps of 390-400), a
// verify of 2 rows 1.37-1.39 plain steps, of 4 rows 2.01 (`bench spec --spec-fixed`).
constexpr RoundCosts kGemmaAssistant{0.36, 0.6, 0.0, 0.0, 0.0};

struct Decoded {
    double tokens = 0, ms = 0;
};

// One sequence of `gen` tokens: under `controller`, or at a fixed length (0: plain decoding).
Decoded decode(GoodputController* controller, int fixed_k, uint64_t seed, double acceptance, int gen,
               NoisyLavapipe& machine, const RoundCosts& costs) {
    Decoded d;
    int position = 0, skipped = 0;
    bool after_prompt = true;
    while (d.tokens < gen) {
        const int k = controller ? controller->choose(16) : fixed_k;
        if (k == 0) {
            const double ms = 10.0 * machine.noise();
            if (controller) controller->observe_plain(ms);
            d.ms += ms;
            d.tokens += 1;
            ++position;
            ++skipped;
            continue;
        }
        int a = 0;
        while (a < k && forced_draw(seed, size_t(position + a)) < acceptance) ++a;
        const double catch_up = after_prompt   ? costs.after_prompt
                                : skipped > 0 ? costs.catch_up + costs.catch_up_per_row * skipped
                                              : 0.0;
        const double draft = (costs.draft_per_token * k + catch_up) * machine.noise();
        const double verify = 10.0 * (1.0 + costs.verify_per_draft * k) * machine.noise();
        if (controller) controller->observe_round(k, a, draft, verify);
        d.ms += draft + verify;
        d.tokens += a + 1;
        position += a + 1;
        after_prompt = false;
        skipped = 0;
    }
    return d;
}

struct Ratios {
    double default_vs_plain = 0, default_vs_fixed = 0;
};

// `bench spec --force-acceptance A --prompts 4 --gen-tokens 32`, over `reps` seeds: the mean of
// each run's default / plain and default / fixed k = 1.
Ratios simulate_bench_spec(double acceptance, int reps, const RoundCosts& costs = kMtpHead) {
    Ratios r;
    for (int rep = 0; rep < reps; ++rep) {
        NoisyLavapipe machine{std::mt19937_64(uint64_t(rep) * 7 + 3)};
        GoodputHistory history;
        {  // the warm-up: forced drafts at 1/2, 96 tokens; its costs alone are handed on
            GoodputController warm(16, kGoodputProbeInterval, DrafterKind::head);
            decode(&warm, 0, 1000000 + uint64_t(rep), 0.5, 96, machine, costs);
            history.absorb(DrafterKind::head, "mtp", warm.learned());
            history.forget_acceptance();
            history.set_plain_ms(10.0);
        }
        Decoded spec, fixed, plain;
        for (uint64_t prompt = 0; prompt < 4; ++prompt) {
            const uint64_t seed = uint64_t(rep) * 100 + prompt + 1;
            GoodputController c(16, kGoodputProbeInterval, DrafterKind::head, history.find(DrafterKind::head, "mtp"));
            const Decoded s = decode(&c, 0, seed, acceptance, 32, machine, costs);
            history.absorb(DrafterKind::head, "mtp", c.learned());
            const Decoded f = decode(nullptr, 1, seed, acceptance, 32, machine, costs);
            const Decoded p = decode(nullptr, 0, seed, acceptance, 32, machine, costs);
            spec.tokens += s.tokens;
            spec.ms += s.ms;
            fixed.tokens += f.tokens;
            fixed.ms += f.ms;
            plain.tokens += p.tokens;
            plain.ms += p.ms;
        }
        const double s = spec.tokens / spec.ms, f = fixed.tokens / fixed.ms, p = plain.tokens / plain.ms;
        r.default_vs_plain += s / p / reps;
        r.default_vs_fixed += s / f / reps;
    }
    return r;
}

TEST(GoodputBenchSim, the_default_stays_within_3_percent_of_plain_at_every_acceptance) {
    for (double a : {0.0, 0.3, 0.5, 0.6, 0.7, 0.9})
        EXPECT_GE(simulate_bench_spec(a, 100).default_vs_plain, 0.97) << "forced acceptance " << a;
}

// The Gemma 4 assistant's costs: a round of one draft at 1.42 plain steps breaks even at an
// acceptance of 0.42, so the doubt keeps drafting longer at 0.3-0.4 than the MTP head's, at a
// smaller loss per round (about 0.98 of plain in this simulation; real runs of 4 prompts
// spread from 0.94 to 1.01, the machine's slow stretches included).
TEST(GoodputBenchSim, with_the_gemma_assistants_costs_too) {
    for (double a : {0.0, 0.3, 0.4, 0.5, 0.7, 0.9})
        EXPECT_GE(simulate_bench_spec(a, 100, kGemmaAssistant).default_vs_plain, 0.97) << "forced acceptance " << a;
    EXPECT_GE(simulate_bench_spec(0.7, 200, kGemmaAssistant).default_vs_fixed, 0.955);
}

// At 0.7 a round of one draft (1.58 plain steps) beats plain by 7%: k = 1 breaks even at 0.63.
// With the catch-ups counted as the drafts' cost, a third of a standard error of doubt, a
// re-measured plain step kept whole and each sequence counting its own probe wait, this
// simulation gave 95.3% (now about 96.4%); real runs on lavapipe spread 90-100% a pair.
TEST(GoodputBenchSim, at_0_7_the_default_reaches_95_percent_of_fixed_k_1) {
    EXPECT_GE(simulate_bench_spec(0.7, 200).default_vs_fixed, 0.955);
}

}  // namespace
}  // namespace tdm
