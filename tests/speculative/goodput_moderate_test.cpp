// SPDX-License-Identifier: Apache-2.0
// tests/speculative/goodput_moderate_test.cpp: the goodput controller over long simulated
// sequences (3600 steps, seeded) at the costs of lavapipe, where k = 1 breaks even near an
// acceptance of 0.69, and of a GPU, where a miss costs a tenth of a step: at 0.5 on lavapipe
// it drafts little more than its probes (one accepted probe after a pause no longer turns
// drafting on: the floor under decayed evidence), at 0 only probes, at 0.7 on a GPU it drafts
// throughout, on lavapipe text that turns predictable gets drafts back, and short sequences
// at 0.3 probe by what a probe is expected to lose.
#include <gtest/gtest.h>

#include "support/goodput_sim.h"
#include "speculative/goodput.h"
#include "speculative/goodput_history.h"

namespace tdm {
namespace {

using goodput_sim::Draws;
using goodput_sim::kGpuMtp;
using goodput_sim::kLavapipeMtp;
using goodput_sim::simulate_costs;
using goodput_sim::SimRun;

// At acceptance 0.5 on lavapipe every round loses (1.5 tokens for 1.69 steps). Evidence that
// decayed to a draft or two over a few plain steps let one accepted probe lift the estimate
// over break-even and buy several losing rounds: about 300 rounds in 3600 steps, 4% slower
// than plain. Under the evidence floor a hit moves it a fifth of the way: the rounds left are
// probes, the few a run of hits buys and those the benefit of the doubt bets (a standard
// error over 4-6 drafts of evidence is about 0.2): 200-310 rounds, within 2% of plain.
TEST(GoodputController, at_acceptance_0_5_on_lavapipe_few_rounds_are_drafted_at_a_loss) {
    for (uint64_t seed : {1, 2, 3}) {
        GoodputController t(16, kGoodputProbeInterval, DrafterKind::head);
        const SimRun r = simulate_costs(t, kLavapipeMtp, 3600, seed, [](int) { return 0.5; });
        EXPECT_LE(r.rounds, 360) << "seed " << seed;
        EXPECT_GE(r.speedup(), 0.98) << "seed " << seed << ": simulated time against plain";
    }
}

// The case the floor is for: drafting went off at a moderate acceptance, three probes missed
// (the back-off grew to 64 plain steps), and the fourth's one draft was accepted. Without the
// floor that one draft was nearly all the evidence left and turned drafting back on (at k = 16
// in a longer simulation); with it the estimate moves a little and drafting stays off.
TEST(GoodputController, one_accepted_probe_after_a_long_pause_does_not_turn_drafting_on) {
    GoodputController t(16, kGoodputProbeInterval, DrafterKind::head);
    t.observe_plain(10.0);
    t.observe_plain(10.0);
    for (int i = 0; i < 20; ++i) t.observe_round(1, i % 2, kLavapipeMtp.draft_ms, 14.1);  // acceptance 0.5
    ASSERT_EQ(t.choose(16), 0) << "k = 1 loses at 0.5";
    ASSERT_TRUE(t.off());
    int gap = 0;
    for (int probes = 0; probes < 4 && gap < 1000;) {
        if (t.choose(16) == 0) {
            t.observe_plain(10.0);
            ++gap;
            continue;
        }
        if (++probes < 4) {
            t.observe_round(1, 0, kLavapipeMtp.draft_ms, 14.1);
            gap = 0;
        }
    }
    ASSERT_EQ(gap, 8 * kGoodputProbeInterval) << "the fourth probe waited out the back-off";
    t.observe_round(1, 1, kLavapipeMtp.draft_ms, 14.1);
    EXPECT_TRUE(t.off());
    EXPECT_LT(t.acceptance_at(1), 0.6);
    EXPECT_EQ(t.choose(16), 0);
}

// A head that never agrees, on lavapipe, over a long sequence: the first trial and the probes,
// backing off, under 1% of the steps.
TEST(GoodputController, at_acceptance_0_on_lavapipe_only_probes_are_drafted) {
    for (uint64_t seed : {1, 2, 3}) {
        GoodputController t(16, kGoodputProbeInterval, DrafterKind::head);
        const SimRun r = simulate_costs(t, kLavapipeMtp, 3600, seed, [](int) { return 0.0; });
        EXPECT_LE(r.rounds, 20) << "seed " << seed;
        EXPECT_TRUE(t.off());
    }
}

// A GPU at acceptance 0.7 over a long sequence: every length up to several pays, and the
// floor changes nothing there: it drafts throughout, its only plain steps re-measures of the
// baseline (after 16, 32, ... rounds, then every 256: 17 in 3600 steps).
TEST(GoodputController, at_acceptance_0_7_on_a_gpu_keeps_drafting_over_a_long_sequence) {
    for (uint64_t seed : {1, 2, 3}) {
        GoodputController t(16, kGoodputProbeInterval, DrafterKind::head);
        const SimRun r = simulate_costs(t, kGpuMtp, 3600, seed, [](int) { return 0.7; }, 100);
        EXPECT_EQ(r.late_off, 0) << "seed " << seed;
        EXPECT_LE(r.late_plain, 20) << "seed " << seed;
        EXPECT_GT(r.speedup(), 1.8) << "seed " << seed;
    }
}

// The floor keeps old evidence from vanishing, so on lavapipe, where k = 1 needs 0.69, text
// that turns predictable must be found by a run of accepted probes: each hit brings the next
// probe to the first interval, and drafting comes back within the back-off reached while off
// (256 plain steps at most) and a few intervals more.
TEST(GoodputController, on_lavapipe_text_that_turns_predictable_gets_drafts_back) {
    for (double before : {0.0, 0.45})
        for (uint64_t seed : {1, 2, 3}) {
            GoodputController t(16, kGoodputProbeInterval, DrafterKind::head);
            const auto p = [&](int i) { return i < 1500 ? before : 0.95; };
            simulate_costs(t, kLavapipeMtp, 1500, seed, p);
            ASSERT_TRUE(t.off()) << "acceptance " << before << ", seed " << seed;
            int back_at = -1;
            Draws d{seed + 100};
            for (int i = 0; i < 600 && back_at < 0; ++i) {
                const int k = t.choose(16);
                if (k == 0) {
                    t.observe_plain(10.0);
                    continue;
                }
                t.observe_round(k, d.accepted(k, 0.95), kLavapipeMtp.draft_ms * k, 10.0 * (1.0 + 0.41 * k));
                if (!t.off()) back_at = i;
            }
            ASSERT_GE(back_at, 0) << "acceptance " << before << ", seed " << seed;
            EXPECT_LE(back_at, 256 + 8 * kGoodputProbeInterval) << "acceptance " << before << ", seed " << seed;
        }
}

// At acceptance 0.3 on lavapipe a probe loses about 0.4 of a plain step: it costs 0.69 more
// than one and wins a token 30% of the time. Short sequences (a benchmark's prompts, a
// server's requests) start from their drafter's history, which says the head agrees, so each
// probed at the back-off's first interval, 8 plain steps, and again 8 after an accepted
// probe: two or three probes per 32-token sequence. The wait now keeps the probes' expected
// loss to 2% of the time: about 20 plain steps here, one probe or none per sequence.
TEST(GoodputController, at_acceptance_0_3_on_lavapipe_short_sequences_probe_by_their_expected_loss) {
    GoodputHistory history;
    SimRun total;
    for (uint64_t seq = 0; seq < 22; ++seq) {
        GoodputController t(16, kGoodputProbeInterval, DrafterKind::head, history.find(DrafterKind::head, "mtp"));
        // two long sequences first: the history learns that the head agrees, at 0.3
        const SimRun r = simulate_costs(t, kLavapipeMtp, seq < 2 ? 400 : 32, seq + 1, [](int) { return 0.3; });
        history.absorb(DrafterKind::head, "mtp", t.learned());
        if (seq < 2) continue;
        total.rounds += r.rounds;
        total.tokens += r.tokens;
        total.ms += r.ms;
    }
    // before: 46 rounds, 0.975 of plain; now 30 rounds (a start on the doubt, then a probe or
    // none per sequence), 0.980
    EXPECT_LE(total.rounds, 36) << "20 sequences of 32 steps";
    EXPECT_GE(total.speedup(), 0.978) << "simulated time against plain";
}

}  // namespace
}  // namespace tdm
