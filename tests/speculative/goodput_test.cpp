// SPDX-License-Identifier: Apache-2.0
// tests/speculative/goodput_test.cpp: the goodput controller on simulated acceptance and
// costs (no device, behaviour not timings): it drafts long when drafts are accepted and
// verifying is cheap, stops drafting within a few rounds when nothing is accepted (even
// when a verify pass costs barely more than a plain step, the case a strong prior would
// keep drafting) and then probes a few percent of steps at most, drafts shorter when rows
// cost more, and follows a change of regime in the middle of a sequence. With i.i.d.
// acceptance and a fixed cost table it settles on the analytic best length, and a new
// sequence starts from the engine's history of earlier ones (goodput_history.h). With the
// costs measured on lavapipe, a head that never agrees costs one trial of one draft in a
// 24-token reply (under 3%), and its probes wait until they cost 2% of the time. The benefit
// of the doubt that keeps drafting through chance rejections shrinks as a rejected draft
// costs more: where k = 1 breaks even at an acceptance of about 0.6 (lavapipe) a moderate
// acceptance is not drafted on the doubt, where a miss costs little (a GPU) it drafts on.
// A request's warm first round hands its cost on to the next (goodput_moderate_test.cpp has
// the long sequences at a moderate acceptance).
#include <gtest/gtest.h>

#include <algorithm>

#include "speculative/batch_budget.h"
#include "speculative/goodput.h"
#include "speculative/goodput_history.h"
#include "support/goodput_sim.h"

namespace tdm {
namespace {

using goodput_sim::Draws;

// One simulated run: plain step 10 ms, a verify pass of k+1 tokens
// 10 * (1 + verify_per_draft * k) ms, no draft cost; `accept(k)` drafts accepted.
template <class Accept>
std::pair<int, int> simulate(GoodputController& t, double verify_per_draft, int steps, Accept accept) {
    int rounds = 0, plain = 0;
    for (int i = 0; i < steps; ++i) {
        const int k = t.choose(8);
        if (k == 0) {
            t.observe_plain(10.0);
            ++plain;
        } else {
            t.observe_round(k, accept(k), 0.0, 10.0 * (1.0 + verify_per_draft * k));
            ++rounds;
        }
    }
    return {rounds, plain};
}

TEST(GoodputController, drafts_the_longest_paying_length_when_everything_is_accepted) {
    GoodputController t(8);
    simulate(t, 0.05, 40, [](int k) { return k; });
    EXPECT_EQ(t.choose(8), 8);
    EXPECT_GT(t.acceptance(), 0.9);
    EXPECT_GT(t.predicted_speedup(8), 3.0);
}

TEST(GoodputController, stops_drafting_when_nothing_is_accepted_even_if_verifying_is_cheap) {
    GoodputController t(8, 24);
    auto [rounds, plain] = simulate(t, 0.05, 300, [](int) { return 0; });
    // a few rounds to learn, then only the periodic k = 1 probes
    EXPECT_LT(rounds, 40) << "kept drafting with zero acceptance";
    EXPECT_GT(plain, 250);
    EXPECT_LT(t.acceptance(), 0.05);
}

TEST(GoodputController, stops_drafting_when_nothing_is_accepted_even_if_verifying_costs_no_more_than_a_plain_step) {
    // On a tiny model a verify pass of k+1 tokens takes as long as a plain
    // step; only the acceptance estimate can switch drafting off.
    GoodputController t(8, 24);
    auto [rounds, plain] = simulate(t, 0.0, 400, [](int) { return 0; });
    EXPECT_LT(rounds, 60) << "kept drafting with zero acceptance";
    EXPECT_GT(plain, 330);
    EXPECT_LT(t.acceptance(), 0.02);
}

TEST(GoodputController, a_gain_within_timing_noise_is_not_worth_drafting) {
    GoodputController t(1);
    t.observe_plain(10.0);
    t.observe_plain(10.0);
    // one draft in 100 accepted and verify costs what a plain step does: a gain under 1%
    for (int i = 0; i < 400; ++i) t.observe_round(1, i % 100 == 0 ? 1 : 0, 0.0, 10.0);
    EXPECT_GT(t.predicted_speedup(1), 1.0);
    EXPECT_LT(t.predicted_speedup(1), 1.02);
    EXPECT_EQ(t.choose(1), 0);
}

TEST(GoodputController, never_drafts_where_verifying_costs_more_than_the_drafts_win) {
    GoodputController t(8);
    // half the drafts accepted, but a verify pass costs a plain step per draft
    auto [rounds, plain] = simulate(t, 1.0, 200, [](int k) { return k / 2; });
    EXPECT_LT(rounds, 40);
    EXPECT_GT(plain, 150);
}

TEST(GoodputController, the_first_round_of_each_length_does_not_count_for_timing) {
    GoodputController t(4);
    t.observe_plain(1000.0);  // first plain step: graph builds, ignored
    t.observe_plain(10.0);
    t.observe_round(2, 2, 0.0, 5000.0);  // first verify of width 3: ignored for timing
    t.observe_round(2, 2, 0.0, 12.0);
    EXPECT_GT(t.predicted_speedup(2), 1.5);
}

TEST(GoodputController, with_acceptance_0_stops_within_a_few_rounds_and_probes_a_few_percent_of_steps) {
    GoodputController t(16);  // the default probe interval
    int rounds = 0, first_off = -1;
    const int steps = 2000;
    for (int i = 0; i < steps; ++i) {
        const int k = t.choose(16);
        if (k == 0) {
            t.observe_plain(10.0);
            if (first_off < 0 && t.off()) first_off = rounds;
        } else {
            t.observe_round(k, 0, 2.0 * k, 10.0 * (1.0 + 0.1 * k));
            ++rounds;
        }
    }
    EXPECT_GE(first_off, 1);
    EXPECT_LE(first_off, 4) << "rounds drafted before drafting stopped";
    EXPECT_LE(t.report().probes, uint64_t(steps * 0.01)) << "probes back off";
    EXPECT_LE(double(rounds) / steps, 0.02);
}

// Under a grammar, a drafter whose drafts the grammar refuses has every draft cut before
// verification: the rounds are plain steps, and only the cuts say that drafting fails.
TEST(GoodputController, drafts_a_constraint_always_cuts_stop_like_rejected_ones) {
    GoodputController t(16);
    int drafted_rounds = 0, first_off = -1;
    const int steps = 2000;
    for (int i = 0; i < steps; ++i) {
        const int k = t.choose(16);
        if (k > 0) {
            ++drafted_rounds;
            t.observe_cut(0);  // the first draft is forbidden: nothing is verified
        }
        t.observe_plain(10.0);
        if (first_off < 0 && t.off()) first_off = drafted_rounds;
    }
    EXPECT_GE(first_off, 1);
    EXPECT_LE(first_off, 4) << "rounds drafted before drafting stopped";
    EXPECT_LE(double(drafted_rounds) / steps, 0.02) << "then only probes, backing off";
}

TEST(GoodputController, with_acceptance_0_9_and_cheap_verify_drafts_long) {
    GoodputController t(16, 24);
    Draws d;
    uint64_t k_sum = 0, late_rounds = 0;
    for (int i = 0; i < 400; ++i) {
        const int k = t.choose(16);
        if (k == 0) {
            t.observe_plain(10.0);
            continue;
        }
        t.observe_round(k, d.accepted(k, 0.9), 0.1 * k, 10.0 * (1.0 + 0.02 * k));
        if (i >= 200) {
            k_sum += uint64_t(k);
            ++late_rounds;
        }
    }
    ASSERT_GT(late_rounds, 150u);
    EXPECT_GE(double(k_sum) / double(late_rounds), 7.0);
    EXPECT_FALSE(t.off());
}

TEST(GoodputController, a_draft_head_starts_at_1_and_an_ngram_drafter_at_its_cap) {
    GoodputController head(16, 24, DrafterKind::head), ngram(16, 24, DrafterKind::ngram);
    EXPECT_EQ(head.choose(16), 1);
    EXPECT_EQ(ngram.choose(12), 12);
    for (GoodputController* t : {&head, &ngram}) {
        const int k = t == &head ? 1 : 3;
        t->observe_round(k, k, 1.0, 12.0);
        EXPECT_EQ(t->choose(16), 0);  // then calibrating: the first plain step builds graphs
        t->observe_plain(10.0);
        EXPECT_EQ(t->choose(16), 0);
        t->observe_plain(10.0);
        EXPECT_GT(t->choose(16), 0);  // all accepted: drafting pays
    }
}

// The mean draft length once settled, when verifying k+1 rows costs 10 * (1 + slope * k) ms.
double settled_k(double slope) {
    GoodputController t(16, 24);
    Draws d;
    uint64_t k_sum = 0, n = 0;
    for (int i = 0; i < 400; ++i) {
        const int k = t.choose(16);
        if (k == 0) t.observe_plain(10.0);
        else t.observe_round(k, d.accepted(k, 0.8), 0.0, 10.0 * (1.0 + slope * k));
        if (i >= 200) {
            k_sum += uint64_t(k);
            ++n;
        }
    }
    return double(k_sum) / double(n);
}

TEST(GoodputController, drafts_shorter_as_verify_rows_cost_more) {
    const double cheap = settled_k(0.02), dear = settled_k(0.25), dearer = settled_k(0.6);
    EXPECT_GT(cheap, dear + 1.0);
    EXPECT_GT(dear, dearer);
    EXPECT_GE(dearer, 0.0);
}

TEST(GoodputController, in_a_batched_pass_wider_batches_get_fewer_drafts_per_sequence) {
    // A row costs 1 ms over a 20 ms pass: at 2 sequences a draft accepted 80% of the time
    // pays for itself deep into the draft, at 24 the pass already yields a token per ~1.8 ms
    // and only the likeliest drafts pay.
    PassCostModel cost;
    for (int rep = 0; rep < 3; ++rep)
        for (uint32_t w = 1; w <= 96; ++w) cost.observe(w, w, 20.0 + 1.0 * w);
    GoodputController seq(8, 24);
    Draws d;
    seq.observe_plain(10.0);
    seq.observe_plain(10.0);
    for (int i = 0; i < 60; ++i) seq.observe_round(8, d.accepted(8, 0.8), 0.0, 12.0);
    std::vector<double> reach;
    for (int j = 1; j <= 8; ++j) reach.push_back(seq.reach(j));
    const auto mean_k = [&](uint32_t n) {
        std::vector<DraftCandidate> c(n, DraftCandidate{8, seq.acceptance(), 0.0, 0.0, reach});
        double sum = 0;
        for (uint32_t x : allocate_drafts(cost, n, n, double(n), c)) sum += x;
        return sum / n;
    };
    EXPECT_GT(mean_k(2), mean_k(8));
    EXPECT_GT(mean_k(8), mean_k(24));
}

TEST(GoodputController, follows_a_change_of_regime_in_the_middle_of_a_sequence) {
    GoodputController t(8, 24);
    Draws d;
    double p = 0.95;
    int off_at = -1, on_again_at = -1;
    for (int i = 0; i < 1200; ++i) {
        if (i == 300) p = 0.0;  // the text stops being predictable...
        if (i == 700) p = 0.95;  // ...and becomes predictable again (code, a quote)
        const int k = t.choose(8);
        if (k == 0) {
            t.observe_plain(10.0);
            if (i > 300 && off_at < 0 && t.off()) off_at = i;
        } else {
            t.observe_round(k, d.accepted(k, p), 0.0, 10.0 * (1.0 + 0.05 * k));
            if (i > 700 && on_again_at < 0 && !t.off() && k > 1) on_again_at = i;
        }
    }
    ASSERT_GT(off_at, 300);
    EXPECT_LE(off_at - 300, 30) << "kept drafting after acceptance fell to 0";
    ASSERT_GT(on_again_at, 700);
    // the next probe comes within the back-off reached during the 400 steps off
    EXPECT_LE(on_again_at - 700, 24 * 16 + 10) << "did not draft again once acceptance came back";
    EXPECT_GE(t.choose(8), 6);
}

// The k that maximises E[accepted + 1] / cost(k) with acceptance p at every position
// (E(k) = 1 + p + ... + p^k) and a round costing draft_ms * k + verify(k).
template <class Verify>
int analytic_best_k(double p, double draft_ms, Verify verify, int k_max) {
    int best = 0;
    double best_rate = 1.0 / verify(0);  // a plain step
    double e = 1.0, r = 1.0;
    for (int k = 1; k <= k_max; ++k) {
        r *= p;
        e += r;
        const double rate = e / (draft_ms * k + verify(k));
        if (rate > best_rate) {
            best_rate = rate;
            best = k;
        }
    }
    return best;
}

// With acceptance 0.7 at every position (i.i.d.) and a fixed cost table, the length the
// controller settles on (the one it chooses most once settled) is the analytic best. At 0.7
// the goodput curve is flat near its top (neighbouring lengths within 1-3%), so the tables
// are ones whose best length wins by at least 2%: nearer ties are within the estimate's noise
// and cost next to nothing either way.
TEST(GoodputController, with_iid_acceptance_settles_on_the_analytic_best_length) {
    struct Table {
        double slope, draft_ms;
        int best;
    };
    // a verify row costing 0.3 of a step (lavapipe), cheap rows and drafts, dear rows with
    // dear drafts (a draft model)
    for (const Table c : {Table{0.3, 0.0, 2}, Table{0.08, 1.0, 3}, Table{0.2, 3.0, 1}}) {
        const auto verify = [&](int k) { return 10.0 * (1.0 + c.slope * k); };
        const int best = analytic_best_k(0.7, c.draft_ms, verify, 16);
        GoodputController t(16, 24);
        Draws d;
        std::vector<int> chosen(17, 0);
        for (int i = 0; i < 1500; ++i) {
            const int k = t.choose(16);
            if (k == 0) t.observe_plain(verify(0));
            else t.observe_round(k, d.accepted(k, 0.7), c.draft_ms * k, verify(k));
            if (i >= 500) ++chosen[size_t(k)];
        }
        const int mode = int(std::max_element(chosen.begin(), chosen.end()) - chosen.begin());
        ASSERT_EQ(best, c.best) << "slope " << c.slope << ", draft " << c.draft_ms << " ms";
        EXPECT_EQ(mode, best) << "slope " << c.slope << ", draft " << c.draft_ms << " ms";
    }
}

// A new sequence starts from what the engine's earlier sequences of the same drafter
// learned: their acceptance as its prior and their measured costs, so it neither pays the
// kind's first length nor calibrates; with no history, the kind's fixed prior.
TEST(GoodputController, a_new_sequence_starts_from_the_history_of_its_drafter) {
    const auto verify = [](int k) { return 10.0 * (1.0 + 0.1 * k); };
    GoodputHistory history;
    EXPECT_EQ(history.find(DrafterKind::head, "mtp"), nullptr);
    for (int seq = 0; seq < 3; ++seq) {  // three sequences whose drafts are accepted 90% of the time
        GoodputController t(16, 24, DrafterKind::head, history.find(DrafterKind::head, "mtp"));
        Draws d{uint64_t(seq + 1)};
        for (int i = 0; i < 60; ++i) {
            const int k = t.choose(16);
            if (k == 0) t.observe_plain(verify(0));
            else t.observe_round(k, d.accepted(k, 0.9), 0.0, verify(k));
        }
        history.absorb(DrafterKind::head, "mtp", t.learned());
    }
    const GoodputMemory* head = history.find(DrafterKind::head, "mtp");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(history.find(DrafterKind::head, "draft"), nullptr) << "another drafter's history is its own";
    EXPECT_GT(head->hit_total() / head->tried_total(), 0.8);
    EXPECT_GT(head->plain_ms, 0.0);

    GoodputController cold(16, 24, DrafterKind::head), warm(16, 24, DrafterKind::head, head);
    EXPECT_NEAR(cold.acceptance(), 0.5, 1e-9) << "the kind's prior";
    EXPECT_GT(warm.acceptance(), 0.8) << "the history's";
    EXPECT_EQ(cold.choose(16), 1) << "the kind's first length";
    EXPECT_GE(warm.choose(16), 6) << "long drafts at once: the history's acceptance and costs";

    // a drafter whose history says drafting does not pay starts off, and only probes
    GoodputHistory never;
    for (int seq = 0; seq < 2; ++seq) {
        GoodputController t(16, 24, DrafterKind::head, never.find(DrafterKind::head, "mtp"));
        for (int i = 0; i < 40; ++i) {
            const int k = t.choose(16);
            if (k == 0) t.observe_plain(verify(0));
            else t.observe_round(k, 0, 0.0, verify(k));
        }
        never.absorb(DrafterKind::head, "mtp", t.learned());
    }
    GoodputController t(16, 24, DrafterKind::head, never.find(DrafterKind::head, "mtp"));
    // each sequence drafted a trial and a probe or two: few drafts, so the kind's prior
    // still weighs in the history's estimate
    EXPECT_LT(t.acceptance(), 0.2);
    int drafted = 0;
    for (int i = 0; i < 24; ++i) {
        const int k = t.choose(16);
        drafted += k > 0;
        if (k == 0) t.observe_plain(verify(0));
        else t.observe_round(k, 0, 0.0, verify(k));
    }
    EXPECT_TRUE(t.off());
    EXPECT_LE(drafted, 1) << "at most the first probe";
}

// The costs `tandem run` measured on lavapipe for the Qwen3.5-0.8B shape (Q8_0) with its MTP
// head: a plain step 245 ms, a verify of k + 1 rows 245 (1 + 0.26 k) ms, a draft 57 ms per
// token; each width's first round and the first plain step 60 ms more (graph builds).
struct LavapipeQwen35 {
    std::vector<int> seen = std::vector<int>(17, 0);
    double verify(int k) { return 245.0 * (1.0 + 0.26 * k) + (seen[size_t(k)]++ == 0 ? 60.0 : 0.0); }
};

// The time of `tokens` tokens decoded with the controller, drafts accepted with `accept(k)`.
template <class Cost, class Accept>
double decode_ms(GoodputController& t, Cost& cost, int tokens, Accept accept, int* rounds = nullptr) {
    double ms = 0;
    for (int n = 0; n < tokens;) {
        const int k = t.choose(8);
        const double verify = cost.verify(k);
        if (k == 0) {
            t.observe_plain(verify);
            ms += verify;
            ++n;
            continue;
        }
        const int a = accept(k);
        t.observe_round(k, a, 57.0 * k, verify);
        ms += 57.0 * k + verify;
        n += a + 1;
        if (rounds) ++*rounds;
    }
    return ms;
}

// One request of `passes` passes whose head never agrees: the plain steps before each of its
// rounds, then those after its last (the last element).
std::vector<int> request_with_a_head_that_never_agrees(GoodputController& t, LavapipeQwen35& cost, int passes) {
    std::vector<int> plain_runs{0};
    for (int n = 0; n < passes; ++n) {
        const int k = t.choose(8);
        const double verify = cost.verify(k);
        if (k == 0) {
            t.observe_plain(verify);
            ++plain_runs.back();
            continue;
        }
        plain_runs.push_back(0);
        t.observe_round(k, 0, 57.0 * k, verify);
    }
    return plain_runs;
}

// Issue 40's worst case: `tandem run -n 24` with a head that never agrees, no history. One
// trial of one draft, and no probe within the reply: under 3% slower than plain decoding.
TEST(GoodputController, a_head_that_never_agrees_costs_under_3_percent_of_a_24_token_reply) {
    GoodputController t(8, kGoodputProbeInterval, DrafterKind::head);
    LavapipeQwen35 spec, plain;
    int rounds = 0;
    const double ms = decode_ms(t, spec, 24, [](int) { return 0; }, &rounds);
    double plain_ms = 0;
    for (int i = 0; i < 24; ++i) plain_ms += plain.verify(0);
    EXPECT_EQ(rounds, 1) << "the first trial only";
    EXPECT_TRUE(t.off());
    EXPECT_GE(plain_ms / ms, 0.97);
}

// Probes of a drafter that never agreed in the sequence wait until their extra cost is 2% of
// the time: on lavapipe a probe costs half a plain step, so 25 plain steps or more between
// them; where a probe costs little the probe interval rules.
TEST(GoodputController, a_dear_probe_waits_until_it_costs_2_percent_of_the_time) {
    const auto gaps = [](GoodputController& t, auto verify, double draft_ms) {
        std::vector<int> out;
        int plain = 0;
        for (int i = 0; i < 300; ++i) {
            const int k = t.choose(8);
            if (k == 0) {
                t.observe_plain(verify(0));
                ++plain;
                continue;
            }
            if (t.report().probes > 0) out.push_back(plain);
            plain = 0;
            t.observe_round(k, 0, draft_ms * k, verify(k));
        }
        return out;
    };
    GoodputController dear(8, kGoodputProbeInterval, DrafterKind::head);
    const std::vector<int> dear_gaps = gaps(dear, [](int k) { return 245.0 * (1.0 + 0.26 * k); }, 57.0);
    ASSERT_GE(dear_gaps.size(), 2u);
    for (int g : dear_gaps) EXPECT_GE(g, 25);
    GoodputController cheap(8, kGoodputProbeInterval, DrafterKind::head);
    const std::vector<int> cheap_gaps = gaps(cheap, [](int k) { return 10.0 * (1.0 + 0.02 * k); }, 0.5);
    ASSERT_GE(cheap_gaps.size(), 2u);
    EXPECT_EQ(cheap_gaps.front(), 2 + kGoodputProbeInterval) << "two calibrating plain steps, then the interval";
}

// The wait before a probe is priced at the first step off, not at every step: a slow stretch
// raises the plain step's estimate within a step or two while the verify's stays where the last
// round left it, and priced anew at every step the miss looked cheap and the probe came early,
// itself in the slow stretch (on lavapipe, the Gemma 4 assistant's probe 12 steps after a
// trial instead of 21). Here: a plain step of 410 ms, a verify of 2 rows 540, a probe's draft
// 24, so a probe is 0.376 plain steps dearer and 19 steps keep that to 2%; after two steps of
// 551 and 669 ms (the 11th and 12th) the estimate of 484 ms would price it at 9, and the probe
// would come at the 12th.
TEST(GoodputController, a_slow_stretch_does_not_bring_the_probe_forward) {
    GoodputMemory h;
    h.tried = {2.0};  // two rejected trials: a verdict, drafting starts off
    h.hit = {0.0};
    h.plain_ms = 410.0;
    h.verify_ms = {0.0, 540.0};
    h.resume_draft_ms = 24.0;
    h.resume_measured = true;
    GoodputController t(8, kGoodputProbeInterval, DrafterKind::head, &h);
    int plain = 0;
    for (int n = 0; n < 40; ++n) {
        if (t.choose(8) > 0) break;
        t.observe_plain(plain == 10 ? 551.0 : plain == 11 ? 669.0 : 410.0);
        ++plain;
    }
    EXPECT_TRUE(t.off());
    EXPECT_EQ(plain, 19) << "plain steps before the probe";
}

// A server's requests with a head that never agrees, on lavapipe: four of 24 tokens, then one
// of 64. One rejected trial is no verdict on the kind (at a forced acceptance of 0.7 the first
// trial missed 30% of the time and then every later request started off): the second request
// makes its own trial. That one is a warm first round at width 1 (the history says a round ran
// there): it is timed and hands its cost on, so the requests after it probe as the measured
// cost asks (after 25 plain steps for 2%), then as the back-off does (16, 32, ...), counting
// the plain steps of the requests before: the third request probes after 2 of its own steps
// (23 came after the second's trial), the fourth after 4, the long one after 13 (32 in all).
// Before, every request's one round was its first at that width, no cost was ever handed on,
// and every request probed after 13 steps, priced by the guess; and before the count went on
// across requests, none shorter than the wait ever probed, so a head whose first trials
// missed by chance never drafted again. The requests that did not draft leave the history's
// acceptance as it was, so the two trials' verdict does not age into the kind's guess.
TEST(GoodputController, two_trials_make_a_verdict_and_a_warm_first_round_hands_its_cost_on) {
    GoodputHistory history;
    LavapipeQwen35 cost;  // one engine: each width's graphs are built once
    std::vector<int> first_gap;
    for (int seq = 0; seq < 5; ++seq) {
        GoodputController t(8, kGoodputProbeInterval, DrafterKind::head, history.find(DrafterKind::head, "mtp"));
        const std::vector<int> runs = request_with_a_head_that_never_agrees(t, cost, seq < 4 ? 24 : 64);
        first_gap.push_back(runs.size() > 1 ? runs[0] : -1);
        history.absorb(DrafterKind::head, "mtp", t.learned());
        const GoodputMemory* h = history.find(DrafterKind::head, "mtp");
        ASSERT_NE(h, nullptr);
        EXPECT_EQ(h->hit_total(), 0.0);
        EXPECT_NEAR(h->trial_ms, 57.0 + 245.0 * 1.26 + 60.0, 1.0) << "the first trial, graph builds included";
        if (seq < 2) {
            EXPECT_NEAR(h->tried_total(), seq == 0 ? 1.0 : 1.7, 1e-9) << "the trials' verdict, after request " << seq;
        }
    }
    EXPECT_EQ(first_gap, (std::vector<int>{0, 0, 2, 4, 13}))
        << "two trials, then probes priced by the measured cost and backed off, across requests";
    const GoodputMemory* h = history.find(DrafterKind::head, "mtp");
    ASSERT_GT(h->verify_ms.size(), 1u);
    EXPECT_NEAR(h->verify_ms[1], 245.0 * 1.26, 1.0) << "the warm verify of 2 rows, handed on";
    EXPECT_NEAR(h->resume_draft_ms, 57.0, 1.0) << "a probe's draft: the warm trial's, after its prompt";
    EXPECT_EQ(h->draft_ms_per_token, 0.0) << "no round followed a round";
}

// Where every trial was a first round at its width (a batch's first wave, each request's trial
// building its graphs), no warm round measured what a probe costs: the trial's time, graph
// builds included, is handed on and prices the probes (capped at 4 probe intervals, as for a
// sequence's own trial). Priced by the guess instead (a verify of 2 rows at 1.25 plain steps,
// a free draft), 8 streams of the 0.8B shape on lavapipe all probed in one pass after 13 steps,
// a pass that nearly doubled while the head caught up on the rows it skipped.
TEST(GoodputController, a_first_trials_cost_prices_the_probes_until_a_warm_one_is_timed) {
    GoodputMemory h;
    h.tried = {2.0};
    h.hit = {0.0};
    h.plain_ms = 245.0;
    h.built = {false, true};
    // the plain steps before each of the first two probes; the first probe's round is warm
    // (the history says width 1 ran) and timed: 1.49 plain steps, the 2% rule's 25 steps
    const auto probe_gaps = [](const GoodputMemory& m) {
        GoodputController t(8, kGoodputProbeInterval, DrafterKind::head, &m);
        std::vector<int> gaps;
        int plain = 0;
        for (int n = 0; n < 200 && gaps.size() < 2; ++n) {
            if (t.choose(8) > 0) {
                gaps.push_back(plain);
                plain = 0;
                t.observe_round(1, 0, 57.0, 245.0 * 1.26);
                continue;
            }
            t.observe_plain(245.0);
            ++plain;
        }
        return gaps;
    };
    EXPECT_EQ(probe_gaps(h), (std::vector<int>{13, 25})) << "priced by the guess, then measured";
    h.trial_ms = 57.0 + 245.0 * 1.26 + 60.0;
    EXPECT_EQ(probe_gaps(h), (std::vector<int>{4 * kGoodputProbeInterval, 25}))
        << "priced by the trial (1.74 plain steps), capped; then measured";
    // a history with a warm verify at another width prices the probe from it, not the trial:
    // 3 rows at 2 plain steps, so 2 rows at 4/3 of one; with the draft a probe is 0.57 plain
    // steps dearer than a plain step, and 29 plain steps keep that to 2% of the time
    h.verify_ms = {0.0, 0.0, 490.0};
    h.draft_ms_per_token = 57.0;
    EXPECT_EQ(probe_gaps(h).front(), 29) << "interpolated from the warm width 2";
}

// A first trial that missed on a GPU, where building the head's and the verify's graphs made it
// cost 5 plain steps: that cost is no probe's, so the next chance comes within 4 probe
// intervals (32 steps), not the 200 the trial's time would ask for.
TEST(GoodputController, a_first_trial_slowed_by_graph_builds_waits_at_most_four_intervals) {
    GoodputController t(8, kGoodputProbeInterval, DrafterKind::head);
    int plain = 0, rounds = 0;
    for (int i = 0; i < 200 && rounds < 2; ++i) {
        const int k = t.choose(8);
        if (k == 0) {
            t.observe_plain(10.0);
            ++plain;
            continue;
        }
        if (rounds++ == 0) {
            t.observe_round(k, 0, 20.0 * k, 40.0);  // the trial, graph builds included
            plain = 0;
        }
    }
    ASSERT_EQ(rounds, 2) << "no probe after the missed trial";
    // the trial came first, so two calibrating plain steps follow it, then the wait
    EXPECT_GE(plain, 2 + kGoodputProbeInterval);
    EXPECT_LE(plain, 2 + 4 * kGoodputProbeInterval);
}

// A controller after two rounds of one draft (the first counts for acceptance only), each
// accepted, costing `verify2` for its verify of 2 rows and `draft` for its draft against a
// plain step of 10.
GoodputController after_two_rounds(double verify2, double draft) {
    GoodputController t(8, kGoodputProbeInterval, DrafterKind::head);
    t.observe_plain(10.0);
    t.observe_plain(10.0);
    t.observe_round(1, 1, draft, verify2);
    t.observe_round(1, 1, draft, verify2);
    return t;
}

// The doubt is one standard error wherever an accepted draft can pay for its round: on a GPU
// (a round of one draft costs 1.1 plain steps) as on lavapipe (1.6), none where a round of one
// draft costs 2 plain steps or more.
TEST(GoodputController, the_benefit_of_the_doubt_is_one_standard_error_where_an_accepted_draft_pays) {
    const GoodputController gpu = after_two_rounds(10.5, 0.5), cpu = after_two_rounds(13.0, 3.0),
                            dear = after_two_rounds(16.0, 5.0);
    EXPECT_NEAR(gpu.miss_cost(), 0.1, 1e-9);
    EXPECT_EQ(gpu.optimism(), 1.0);
    EXPECT_NEAR(cpu.miss_cost(), 0.6, 1e-9);
    EXPECT_EQ(cpu.optimism(), 1.0);
    EXPECT_NEAR(dear.miss_cost(), 1.1, 1e-9);
    EXPECT_EQ(dear.optimism(), 0.0);
}

// Issue 40 at acceptance 0.4-0.5 on a CPU device: a verify of 2 rows costs 1.3 plain steps and
// a draft 0.3, so k = 1 yields 1.4-1.5 tokens for 1.6 steps: it loses 6-12% a round. The doubt
// bets rounds on the estimate being low; what stops the bet is the evidence it buys and the
// streak of first misses (three). Before the floor under decayed evidence (4 drafts) a full
// standard error kept 215 rounds in these 3600 steps, up to 9 in a row, and was scaled down by
// the miss cost; with the floor it keeps about 50, a few in a row, and the simulated time
// stays within 2% of plain decoding. Rounds the estimate itself chose (after a lucky streak or
// a probe that hit) are not the doubt's and are not counted.
TEST(GoodputController, at_a_dear_miss_and_moderate_acceptance_the_doubt_costs_little) {
    int on_doubt = 0, longest = 0;
    for (double p : {0.4, 0.45, 0.5})
        for (uint64_t seed : {1, 2, 3}) {
            GoodputController t(16, kGoodputProbeInterval, DrafterKind::head);
            Draws d{seed};
            int streak = 0;
            double tokens = 0, ms = 0;
            for (int i = 0; i < 400; ++i) {
                const GoodputOffer o = t.offer(16);
                const int k = t.choose(16);
                if (k == 0) {
                    t.observe_plain(10.0);
                    streak = 0;
                    tokens += 1;
                    ms += 10.0;
                    continue;
                }
                const bool doubt = o.why == GoodputOffer::Why::measured && o.speedup <= min_gain(1);
                on_doubt += doubt;
                streak = doubt ? streak + 1 : 0;
                longest = std::max(longest, streak);
                const int a = d.accepted(k, p);
                t.observe_round(k, a, 3.0 * k, 10.0 * (1.0 + 0.3 * k));
                tokens += a + 1;
                ms += 3.0 * k + 10.0 * (1.0 + 0.3 * k);
            }
            EXPECT_GE(tokens * 10.0 / ms, 0.97) << "acceptance " << p << ", seed " << seed << ": against plain";
        }
    EXPECT_LE(on_doubt, 90) << "rounds drafted on the doubt, in 9 runs of 400 steps";
    EXPECT_LE(longest, 6) << "rounds in a row drafted on the doubt";
}

// A draft head catches up on the rows it skipped before it drafts: a round right after one of
// its own drafts at 3 ms, one after 8 plain steps at 9 (Qwen3.5-0.8B's MTP head on lavapipe:
// 41 ms against 80-110). The first is what a draft costs while drafting is on, the second what
// turning it back on costs: folded into one average the probes' catch-ups made a round of one
// draft look 0.72 plain steps dearer than a plain step instead of 0.6, which at a forced
// acceptance of 0.7 (k = 1 breaking even near 0.63) switched drafting off.
TEST(GoodputController, a_heads_catch_up_after_plain_steps_prices_the_probe_not_the_drafts) {
    GoodputController t(8, kGoodputProbeInterval, DrafterKind::head);
    t.observe_plain(10.0);
    t.observe_plain(10.0);
    t.observe_round(1, 1, 9.0, 13.0);  // the first at its width: graph builds, not timed
    t.observe_round(1, 1, 3.0, 13.0);
    for (int i = 0; i < 8; ++i) t.observe_plain(10.0);
    t.observe_round(1, 1, 9.0, 13.0);
    EXPECT_NEAR(t.miss_cost(), 0.6, 1e-9);
    const GoodputMemory m = t.learned();
    EXPECT_DOUBLE_EQ(m.draft_ms_per_token, 3.0);
    EXPECT_DOUBLE_EQ(m.resume_draft_ms, 9.0) << "what a probe drafts";
    // what the next round's drafting adds to its tokens': nothing right after a round, the
    // catch-up after a plain step (the batch's plan prices a first draft with it)
    EXPECT_DOUBLE_EQ(t.catch_up_ms(), 0.0);
    t.observe_plain(10.0);
    EXPECT_DOUBLE_EQ(t.catch_up_ms(), 6.0);

    // Until a round follows a round, what a draft costs is unknown: the catch-ups are no
    // measure of it, and taken for one (95-150 ms after `bench spec`'s warm-up) they kept
    // every later prompt from drafting the second round that would have measured it.
    GoodputController u(8, kGoodputProbeInterval, DrafterKind::head);
    u.observe_plain(10.0);
    u.observe_plain(10.0);
    u.observe_round(1, 0, 9.0, 13.0);
    for (int i = 0; i < 8; ++i) u.observe_plain(10.0);
    u.observe_round(1, 1, 9.0, 13.0);
    EXPECT_NEAR(u.miss_cost(), 0.3, 1e-9);
    EXPECT_EQ(u.learned().draft_ms_per_token, 0.0);
    u.observe_round(1, 1, 3.0, 13.0);
    EXPECT_NEAR(u.miss_cost(), 0.6, 1e-9);
}

// A GPU: a draft and a verify row cost 5% of a plain step each. At acceptance 0.5-0.7 every
// length up to 3 or 4 pays, and once settled the controller never stops drafting: its only
// plain steps re-measure the baseline, ever more rarely (after 16, 32, 64, ... rounds).
TEST(GoodputController, at_a_cheap_miss_and_moderate_acceptance_it_keeps_drafting) {
    for (double p : {0.5, 0.6, 0.7})
        for (uint64_t seed : {1, 2, 3}) {
            GoodputController t(16, kGoodputProbeInterval, DrafterKind::head);
            Draws d{seed};
            int late_plain = 0, late_off = 0;
            for (int i = 0; i < 400; ++i) {
                const int k = t.choose(16);
                if (i >= 100) late_off += t.off();
                if (k == 0) {
                    t.observe_plain(10.0);
                    late_plain += i >= 100;
                    continue;
                }
                t.observe_round(k, d.accepted(k, p), 0.5 * k, 10.0 * (1.0 + 0.05 * k));
            }
            EXPECT_EQ(late_off, 0) << "acceptance " << p << ", seed " << seed;
            EXPECT_LE(late_plain, 3) << "acceptance " << p << ", seed " << seed;
            EXPECT_GT(t.optimism(), 0.85);
        }
}

// What a history hands on after a benchmark's warm-up measured the plain step at 24 ms where
// it costs 10: acceptance 0.5 at the first position, a verify of 2 rows 13 ms, a draft 3 ms.
GoodputMemory history_with_a_baseline_too_high() {
    GoodputMemory h;
    h.tried = {20.0};
    h.hit = {10.0};
    h.plain_ms = 24.0;
    h.verify_ms = {0.0, 13.0};
    h.draft_ms_per_token = 3.0;
    return h;
}

// A baseline handed on too high (a slow plain step in a benchmark's warm-up: 24 ms where a
// step costs 10) makes k = 1 at acceptance 0.5 look like a 2x gain where it loses 6%: a
// controller that drafts every round never sees the plain step that would say so. After 16
// rounds it takes one, believes the faster time, and stops drafting.
TEST(GoodputController, a_baseline_measured_too_high_is_measured_again) {
    const GoodputMemory stale = history_with_a_baseline_too_high();
    GoodputController t(1, kGoodputProbeInterval, DrafterKind::head, &stale);
    EXPECT_GT(t.predicted_speedup(1), 2.0);
    Draws d;
    int first_plain = -1;
    for (int i = 0; i < 20; ++i) {
        const int k = t.choose(1);
        if (k == 0) {
            t.observe_plain(10.0);
            if (first_plain < 0) first_plain = i;
            continue;
        }
        t.observe_round(k, d.accepted(k, 0.5), 3.0, 13.0);
    }
    EXPECT_EQ(first_plain, 16) << "the first plain step re-measures the baseline after 16 rounds";
    EXPECT_LT(t.predicted_speedup(1), 1.0);
    EXPECT_TRUE(t.off());
}

// A re-measure within 10% of the estimate is averaged in, as a verify's time is: kept whole,
// one fast sample set the baseline against the verify's average (on lavapipe a prompt's last
// step at 181 ms against 197 moved the miss cost from 0.66 to 0.81). One further under it is
// the step as it is (a baseline handed on too high, the test above).
TEST(GoodputController, a_re_measure_near_the_estimate_is_averaged_in) {
    const auto after_re_measure = [](double ms) {
        GoodputMemory h = history_with_a_baseline_too_high();
        h.plain_ms = 10.0;
        h.hit = {18.0};  // drafting pays: 0.9 against a round of 1.6 plain steps
        GoodputController t(1, kGoodputProbeInterval, DrafterKind::head, &h);
        for (int i = 0; i < 16; ++i) {
            EXPECT_EQ(t.choose(1), 1);
            t.observe_round(1, 1, 3.0, 13.0);
        }
        EXPECT_EQ(t.choose(1), 0) << "the re-measure";
        t.observe_plain(ms);
        return t.report().plain_ms;
    };
    EXPECT_NEAR(after_re_measure(9.5), 9.9, 1e-9) << "within 10%: averaged in";
    EXPECT_NEAR(after_re_measure(8.5), 8.5, 1e-9) << "more than 10% under: replaces it";
}

// Requests shorter than the probe wait, one after another, with a head that never agrees: the
// wait counts on across them, as in one long sequence: probes 25 plain steps apart (what keeps
// a probe's cost to 2% here), then as the back-off grows (32, 64), never sooner. Counted per
// request none would ever probe; counted twice (a request handing on what it started from
// plus its own steps, added to the history's) they came closer than the wait.
TEST(GoodputController, short_requests_probe_as_one_long_sequence_would) {
    GoodputHistory history;
    LavapipeQwen35 cost;
    std::vector<int> gaps;
    int since = 0;
    for (int seq = 0; seq < 24; ++seq) {
        GoodputController t(8, kGoodputProbeInterval, DrafterKind::head, history.find(DrafterKind::head, "mtp"));
        const std::vector<int> runs = request_with_a_head_that_never_agrees(t, cost, 10);
        for (size_t r = 0; r + 1 < runs.size(); ++r) {
            since += runs[r];
            if (seq >= 2) gaps.push_back(since);  // the first two are the trials
            since = 0;
        }
        since += runs.back();
        history.absorb(DrafterKind::head, "mtp", t.learned());
    }
    ASSERT_GE(gaps.size(), 3u) << "probes across requests of 10 tokens";
    EXPECT_EQ(gaps[0], 25);
    for (size_t i = 1; i < gaps.size(); ++i) {
        EXPECT_GE(gaps[i], 25) << "probe " << i;
        EXPECT_GE(gaps[i], gaps[i - 1]) << "the back-off only grows while probes miss";
    }
}

// `bench spec`'s warm-up hands on the plain step of its reference decode (many warm plain
// steps), not its speculative sequence's estimate, which can rest on one slow sample: every
// drafter's estimate is replaced, the verify and draft costs kept, and a controller starting
// from it prices a rejected draft at what it costs (0.6 plain steps, not a third of a step won).
TEST(GoodputController, a_plain_step_measured_apart_replaces_the_warm_up_estimate) {
    GoodputHistory history;
    const GoodputMemory warm_up = history_with_a_baseline_too_high();
    history.absorb(DrafterKind::head, "mtp", warm_up);
    history.absorb(DrafterKind::ngram, "ngram-simple", warm_up);
    history.forget_acceptance();
    {
        GoodputController stale(1, kGoodputProbeInterval, DrafterKind::head, history.find(DrafterKind::head, "mtp"));
        EXPECT_LT(stale.miss_cost(), 0.0) << "(13 + 3 - 24) / 24: a miss looks like a gain";
    }
    history.set_plain_ms(10.0);
    history.set_plain_ms(0.0);  // no measurement: nothing changes
    for (auto [kind, drafter] : {std::pair{DrafterKind::head, "mtp"}, std::pair{DrafterKind::ngram, "ngram-simple"}}) {
        const GoodputMemory* m = history.find(kind, drafter);
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(m->plain_ms, 10.0);
        EXPECT_EQ(m->verify_ms[1], 13.0);
        EXPECT_EQ(m->draft_ms_per_token, 3.0);
    }
    GoodputController t(1, kGoodputProbeInterval, DrafterKind::head, history.find(DrafterKind::head, "mtp"));
    EXPECT_NEAR(t.miss_cost(), 0.6, 1e-9);
}

// In a batch a sequence's "plain step" is the batch's pass, whose time moves with the other
// sequences' rows: such a pass is no re-measure (its minimum would drag the baseline down).
TEST(GoodputController, a_batched_pass_does_not_re_measure_the_baseline) {
    const GoodputMemory h = history_with_a_baseline_too_high();
    GoodputController batched(1, kGoodputProbeInterval, DrafterKind::head, &h);
    GoodputController alone(1, kGoodputProbeInterval, DrafterKind::head, &h);
    for (int i = 0; i < 16; ++i) {
        batched.observe_round(1, 1, 3.0, 13.0);
        alone.observe_round(1, 1, 3.0, 13.0);
    }
    batched.observe_plain(5.0, /*alone=*/false);
    alone.observe_plain(5.0, /*alone=*/true);
    // alone: the faster time replaces the estimate, then the step's sample is averaged in
    EXPECT_DOUBLE_EQ(alone.report().plain_ms, 5.0);
    // batched: only the ordinary average, 24 + 0.2 (5 - 24)
    EXPECT_NEAR(batched.report().plain_ms, 24.0 + 0.2 * (5.0 - 24.0), 1e-9);
}

// A history of costs alone (a benchmark's warm-up, whose drafts were forced): the device's
// costs spare the calibrating plain steps, but the first trial is still the kind's.
TEST(GoodputController, a_history_of_costs_alone_spares_the_calibration_not_the_first_trial) {
    GoodputHistory history;
    {
        GoodputController warm_up(8, 24, DrafterKind::head);
        Draws d;
        for (int i = 0; i < 40; ++i) {
            const int k = warm_up.choose(8);
            if (k == 0) warm_up.observe_plain(10.0);
            else warm_up.observe_round(k, d.accepted(k, 0.5), 0.5 * k, 10.0 * (1.0 + 0.05 * k));
        }
        history.absorb(DrafterKind::head, "mtp", warm_up.learned());
    }
    history.forget_acceptance();
    const GoodputMemory* costs = history.find(DrafterKind::head, "mtp");
    ASSERT_NE(costs, nullptr);
    EXPECT_EQ(costs->tried_total(), 0.0);
    EXPECT_GT(costs->plain_ms, 0.0);
    GoodputController t(8, 24, DrafterKind::head, costs);
    EXPECT_NEAR(t.acceptance(), 0.5, 1e-9) << "the kind's prior, not the warm-up's";
    EXPECT_EQ(t.choose(8), 1) << "the kind's first trial";
    t.observe_round(1, 1, 0.5, 10.5);
    EXPECT_GT(t.choose(8), 0) << "no calibrating plain step: the costs are known";
}

}  // namespace
}  // namespace tdm
