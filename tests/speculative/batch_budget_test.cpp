// SPDX-License-Identifier: Apache-2.0
// tests/speculative/batch_budget_test.cpp: the draft budget of a batched pass
// (speculative/batch_budget.h): the cost model recovers a + b * rows and keeps what each
// shape measured; drafts go where they raise the expected tokens per millisecond, best
// first, and nowhere when rows cost more than they bring, including when the next row
// starts a new tile of a kernel (a step in the pass time). A sequence the plan gives no
// drafts probes on its controller's own schedule, the cost floor included.
#include <gtest/gtest.h>

#include "speculative/batch_budget.h"
#include "speculative/goodput.h"
#include "speculative/goodput_history.h"

namespace tdm {
namespace {

// A cost model that saw each width of `ms_of` (rows = outputs) a few times.
template <typename F>
PassCostModel measured(F ms_of, std::initializer_list<uint32_t> widths) {
    PassCostModel m;
    for (int round = 0; round < 3; ++round)
        for (uint32_t w : widths) m.observe(w, w, ms_of(w));
    return m;
}

TEST(BatchBudget, the_cost_model_fits_a_plus_b_times_rows_and_keeps_each_shape) {
    PassCostModel m;
    EXPECT_FALSE(m.ready());
    for (int i = 0; i < 4; ++i) m.observe(8, 8, 100);
    EXPECT_FALSE(m.ready()) << "one width only: no slope";
    m.observe(4, 4, 1000);  // the first pass of a shape builds its graph: not counted
    for (int i = 0; i < 2; ++i)
        for (uint32_t rows : {4u, 12u, 16u, 9u, 20u}) m.observe(rows, rows, 50 + 6.25 * rows);
    ASSERT_TRUE(m.ready());
    EXPECT_NEAR(m.b(), 6.25, 0.5);
    EXPECT_NEAR(m.a(), 50, 8);
    EXPECT_TRUE(m.measured(12, 12));
    EXPECT_DOUBLE_EQ(m.estimate(12, 12), 50 + 6.25 * 12);
    EXPECT_FALSE(m.measured(30, 30));
    EXPECT_NEAR(m.estimate(30, 30), m.a() + m.b() * 30, 1e-9) << "an unseen shape comes from the fit";
    EXPECT_FALSE(m.measured(12, 1)) << "shapes differ by their rows with logits too";
}

TEST(BatchBudget, nearly_free_rows_take_every_likely_draft) {
    // a GPU's memory-bound decode: 8 sessions, rows cost 1% of a pass each
    const auto m = measured([](uint32_t w) { return 100 + 1.0 * w; }, {8, 12, 16, 24, 40});
    std::vector<DraftCandidate> c(8, {4, 0.7, 0});
    for (uint32_t x : allocate_drafts(m, 8, 8, 8, c)) EXPECT_EQ(x, 4u);
}

TEST(BatchBudget, costly_rows_take_no_draft_or_only_the_likely_ones) {
    // lavapipe with 8 sessions: a row costs 1/8 of the pass's fixed part
    const auto m = measured([](uint32_t w) { return 40 + 5.0 * w; }, {8, 9, 10, 11, 12, 16});
    std::vector<DraftCandidate> poor(8, {4, 0.3, 0});
    for (uint32_t x : allocate_drafts(m, 8, 8, 8, poor)) EXPECT_EQ(x, 0u);
    // one session drafts well, the others badly: only it drafts, and not beyond what pays
    std::vector<DraftCandidate> mixed(8, {4, 0.2, 0});
    mixed[3] = {4, 0.95, 0};
    const auto k = allocate_drafts(m, 8, 8, 8, mixed);
    for (size_t i = 0; i < k.size(); ++i) {
        if (i == 3) {
            EXPECT_GE(k[i], 1u);
        } else {
            EXPECT_EQ(k[i], 0u) << i;
        }
    }
}

// Kernels that take rows in tiles of 4: 8 rows cost as much as 5, a 9th row opens a tile.
// A pass at a tile's end takes a draft only if enough good drafts fill the next tile; a
// pass inside a tile fills it with the drafts that are nearly free.
TEST(BatchBudget, a_draft_that_opens_a_new_tile_must_pay_for_the_whole_tile) {
    const auto tiles = [](uint32_t w) { return 60.0 + 30.0 * double((w + 3) / 4); };
    const auto m = measured(tiles, {5, 6, 7, 8, 9, 10, 11, 12, 13, 16});
    // at 8 rows (a tile's end): one good draft alone would not pay for the tile
    std::vector<DraftCandidate> one(8, {4, 0.0, 0});
    one[0] = {1, 0.9, 0};
    for (uint32_t x : allocate_drafts(m, 8, 8, 8, one)) EXPECT_EQ(x, 0u);
    // four likely drafts fill the new tile and pay for it
    std::vector<DraftCandidate> four(8, {4, 0.0, 0});
    four[0] = {4, 0.97, 0};
    EXPECT_EQ(allocate_drafts(m, 8, 8, 8, four)[0], 4u);
    // at 5 rows (a tile begun): three drafts fill it for free, even unlikely ones
    std::vector<DraftCandidate> five(5, {4, 0.3, 0});
    uint32_t total = 0;
    for (uint32_t x : allocate_drafts(m, 5, 5, 5, five)) total += x;
    EXPECT_EQ(total, 3u);
}

TEST(BatchBudget, drafts_never_exceed_a_cap_and_drafting_time_counts) {
    const auto m = measured([](uint32_t w) { return 100 + 0.1 * w; }, {2, 3, 4, 5, 8, 11, 12});
    std::vector<DraftCandidate> c = {{2, 0.9, 0}, {0, 0.9, 0}, {6, 0.9, 0}};
    const auto k = allocate_drafts(m, 3, 3, 3, c);
    EXPECT_EQ(k[0], 2u);
    EXPECT_EQ(k[1], 0u);
    EXPECT_EQ(k[2], 6u);
    // a 0.9 token for 30 ms more of a 100 ms pass pays; for 80 ms it does not
    std::vector<DraftCandidate> fair = {{2, 0.9, 30}};
    EXPECT_GE(allocate_drafts(m, 2, 2, 2, fair)[0], 1u);
    std::vector<DraftCandidate> slow = {{2, 0.9, 80}, {6, 0.9, 80}};
    for (uint32_t x : allocate_drafts(m, 2, 2, 2, slow)) EXPECT_EQ(x, 0u);
}

// A head's first draft after plain steps pays its catch-up on the rows it skipped. The tiny
// Qwen3.5 at 4 streams on lavapipe: a pass of 4 rows 8.7 ms, 8 rows in the same tile. With
// a fresh sequence's drafting priced at 0 (it had none measured), four unlikely drafts (0.11)
// filled the tile for free; priced at the 2 ms catch-up each may waste, they do not. A likely
// draft still goes: accepted, its catch-up serves the rounds after it, so only its chance of
// being wasted is charged.
TEST(BatchBudget, a_first_draft_pays_the_catch_up_it_may_waste) {
    const auto m = measured([](uint32_t w) { return w <= 8 ? 8.7 : 12.0; }, {4, 5, 6, 7, 8, 9});
    std::vector<DraftCandidate> free_catch_up(4, {1, 0.11, 0.0, 0.0});
    for (uint32_t x : allocate_drafts(m, 4, 4, 4, free_catch_up)) EXPECT_EQ(x, 1u);
    std::vector<DraftCandidate> priced(4, {1, 0.11, 0.0, 2.0 * (1 - 0.11)});
    for (uint32_t x : allocate_drafts(m, 4, 4, 4, priced)) EXPECT_EQ(x, 0u);
    std::vector<DraftCandidate> likely(4, {1, 0.8, 0.2, 2.0 * (1 - 0.8)});
    for (uint32_t x : allocate_drafts(m, 4, 4, 4, likely)) EXPECT_EQ(x, 1u);
    // the catch-up is the first draft's: a second draft of the same sequence pays its row only
    std::vector<DraftCandidate> deeper(4, {0, 0.0, 0.0, 0.0});
    deeper[0] = {2, 0.9, 0.0, 2.0};
    EXPECT_EQ(allocate_drafts(m, 4, 4, 4, deeper)[0], 2u);
    // a cheap draft is tried without a dear one ahead of it in worth
    std::vector<DraftCandidate> dear_and_cheap(4, {0, 0.0, 0.0, 0.0});
    dear_and_cheap[0] = {1, 0.5, 0.0, 3.0};
    dear_and_cheap[1] = {1, 0.45, 0.0, 0.0};
    const auto k = allocate_drafts(m, 4, 4, 4, dear_and_cheap);
    EXPECT_EQ(k[0], 0u);
    EXPECT_EQ(k[1], 1u);
}

// A pass of more rows does the work of the pass it widens, so noise in that pass's measured
// time must not make the wider one look cheaper. At 16 streams of the tiny Qwen3.5 on lavapipe
// the plan gave drafts at an acceptance of 0.17, their drafting unmeasured, in pass after
// pass: worth the 5% margin only with the 17-row pass estimated 4% under the 16-row one. Here
// passes of 4-12 rows take 10-11 ms and the one 16-row pass counted ran in a slow stretch
// (14 ms): the fit alone puts 17 rows (and 25) under it.
TEST(BatchBudget, a_wider_pass_is_never_priced_under_the_pass_it_widens) {
    PassCostModel m;
    m.observe(16, 16, 14.0);  // builds the graph: not counted
    m.observe(16, 16, 14.0);  // one pass in a slow stretch
    for (int round = 0; round < 3; ++round)
        for (uint32_t w : {4u, 6u, 8u, 10u, 12u}) m.observe(w, w, 10.0 + 0.1 * w);
    ASSERT_TRUE(m.ready());
    ASSERT_FALSE(m.measured(17, 17));
    ASSERT_LT(m.estimate(17, 17), 14.0 * 0.96) << "the fit alone prices 17 rows under 16";
    // four sequences whose drafts (0.17) cost nothing measured yet, twelve that may not draft
    std::vector<DraftCandidate> unlikely(16, {0, 0.0, 0.0, 0.0});
    for (size_t i = 0; i < 4; ++i) unlikely[i] = {1, 0.17, 0.0, 0.0};
    for (uint32_t x : allocate_drafts(m, 16, 16, 16, unlikely)) EXPECT_EQ(x, 0u);
    // Nor is a wider pass not measured as cheap as this one: each added row costs at least the
    // fit's b. Nine such drafts at once (the second wave of that run, its 16-row pass measured
    // at 20 ms in a slow stretch) would otherwise ride on it for free.
    std::vector<DraftCandidate> nine(16, {0, 0.0, 0.0, 0.0});
    for (size_t i = 0; i < 9; ++i) nine[i] = {1, 0.17, 0.0, 0.0};
    for (uint32_t x : allocate_drafts(m, 16, 16, 16, nine)) EXPECT_EQ(x, 0u);
    // A narrow shape measured high does not floor wider passes of other plans: the floor is the
    // pass being widened. From 4 rows, three likely drafts still go.
    std::vector<DraftCandidate> from_four(4, {1, 0.9, 0.0, 0.0});
    uint32_t total = 0;
    for (uint32_t x : allocate_drafts(m, 4, 4, 4, from_four)) total += x;
    EXPECT_GT(total, 0u);
}

// A sequence that has not drafted yet has measured neither what a draft costs per token nor
// its head's catch-up: it is priced by what the pass's other sequences of the same drafter
// measured (BatchEngine::plan_drafts hands it those: Drafter::history_name). At 16 streams of the tiny Qwen3.5 the first wave's sequences each found out for
// themselves instead, one draft (a catch-up of 5-6 ms against a 13 ms pass) per pass.
TEST(BatchBudget, a_fresh_sequence_is_priced_by_what_its_peers_measured) {
    GoodputMemory probed;
    probed.tried = {4};
    probed.hit = {0};
    probed.plain_ms = 13.0;
    probed.verify_ms = {0.0, 13.5};
    probed.draft_ms_per_token = 1.0;
    probed.resume_draft_ms = 6.0;
    probed.resume_measured = true;
    const GoodputController peer(16, kGoodputProbeInterval, DrafterKind::head, &probed);
    ASSERT_DOUBLE_EQ(peer.probe_draft_ms(), 6.0) << "its catch-up and one token";
    const GoodputController fresh(16, kGoodputProbeInterval, DrafterKind::head);
    ASSERT_TRUE(fresh.catches_up()) << "its first draft catches up on its prompt";
    ASSERT_EQ(fresh.probe_draft_ms(), 0.0);

    DraftCandidate alone{1, 0.2, 0, 0, {0.2}};
    const std::vector<const GoodputController*> only_fresh = {&fresh, &fresh};
    price_drafting(alone, fresh, only_fresh, 0.0);
    EXPECT_EQ(alone.first_draft_ms, 0.0) << "nobody drafting with its drafter measured a catch-up";
    EXPECT_EQ(alone.draft_ms_per_token, 0.0);

    DraftCandidate c{1, 0.2, 0, 0, {0.2}};
    const std::vector<const GoodputController*> pass = {&fresh, &peer};
    price_drafting(c, fresh, pass, 0.0);
    EXPECT_DOUBLE_EQ(c.draft_ms_per_token, 1.0);
    EXPECT_DOUBLE_EQ(c.first_draft_ms, 5.0 * (1 - 0.2)) << "the peer's catch-up, at the chance it is wasted";

    // its own measurements come first, and a head right after a round of its own catches up
    // on nothing
    DraftCandidate own{1, 0.2, 0, 0, {0.2}};
    price_drafting(own, peer, pass, 0.0);
    EXPECT_DOUBLE_EQ(own.first_draft_ms, 5.0 * (1 - 0.2));
    GoodputController drafting(16, kGoodputProbeInterval, DrafterKind::head, &probed);
    drafting.observe_round(1, 1, 1.0, 13.5);
    ASSERT_FALSE(drafting.catches_up());
    DraftCandidate next{1, 0.2, 0, 0, {0.2}};
    price_drafting(next, drafting, pass, 0.0);
    EXPECT_EQ(next.first_draft_ms, 0.0);

    // one that has only probed measured a probe's draft (6 ms: its catch-up and one token)
    // but no time per token: the token is priced once, at the peer's 1 ms
    GoodputMemory only_probed = probed;
    only_probed.draft_ms_per_token = 0;
    const GoodputController prober(16, kGoodputProbeInterval, DrafterKind::head, &only_probed);
    ASSERT_DOUBLE_EQ(prober.probe_draft_ms(), 6.0);
    DraftCandidate probe{1, 0.2, 0, 0, {0.2}};
    const std::vector<const GoodputController*> with_peer = {&prober, &peer};
    price_drafting(probe, prober, with_peer, 0.0);
    EXPECT_DOUBLE_EQ(probe.draft_ms_per_token, 1.0);
    EXPECT_DOUBLE_EQ(probe.first_draft_ms, 5.0 * (1 - 0.2)) << "not 6: the probe's token is priced per token";
    // nobody measured a time per token: the session's own average of its drafts (which, for
    // one that has only probed, holds whole probes' drafts) prices the token, and the catch-up
    // is what the probe's draft leaves; a probe is priced at about one probe's draft, not two,
    // however the average falls against it
    const std::vector<const GoodputController*> only_probers = {&prober, &prober};
    for (double average : {5.9, 6.0, 6.5}) {
        DraftCandidate p{1, 0.2, 0, 0, {0.2}};
        price_drafting(p, prober, only_probers, average);
        EXPECT_DOUBLE_EQ(p.draft_ms_per_token, average);
        EXPECT_NEAR(p.first_draft_ms, std::max(0.0, 6.0 - average) * (1 - 0.2), 1e-12) << average;
    }

    // with sixteen such drafts to place, the pass of 16 gives none at this acceptance
    const auto m = measured([](uint32_t w) { return w <= 16 ? 13.0 : 13.5; }, {12, 16, 17, 18, 20});
    std::vector<DraftCandidate> free_drafts(16, {1, 0.2, 0, 0, {0.2}});
    std::vector<DraftCandidate> priced = free_drafts;
    std::vector<const GoodputController*> peers(16, &fresh);
    peers[15] = &peer;
    for (DraftCandidate& d : priced) price_drafting(d, fresh, peers, 0.0);
    uint32_t free_total = 0, priced_total = 0;
    for (uint32_t x : allocate_drafts(m, 16, 16, 16, free_drafts)) free_total += x;
    for (uint32_t x : allocate_drafts(m, 16, 16, 16, priced)) priced_total += x;
    EXPECT_GT(free_total, 0u) << "unpriced, they look free";
    EXPECT_EQ(priced_total, 0u);
}

// A head that never agrees (Qwen3.5-0.8B's random-weight MTP head), 4 streams in one pass
// on lavapipe: a pass of 4 rows 480 ms; one in which the streams probe (a draft each, in
// step, as after a shared start) 960 ms, and the head's step 70 ms. Each stream's
// controller starts from what a warm-up taught (its drafts missed, the plain step's cost).
// A stream the plan starves probes when its controller would alone, so the probes wait
// until they cost 2% of the time: 2 probe passes in 64, where the back-off alone took 3
// (passes 8, 25 and 58), each costing every stream more than a pass.
TEST(BatchBudget, a_starved_head_that_never_agreed_probes_when_alone_it_would) {
    GoodputMemory warm_up;
    warm_up.tried = {4};
    warm_up.hit = {0};
    warm_up.plain_ms = 480;
    constexpr double kPlainPass = 480, kProbePass = 960, kHeadStep = 70;
    constexpr int kPasses = 64;
    std::vector<int> alone, starved;
    GoodputController solo(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
    for (int pass = 0; pass < kPasses; ++pass) {
        if (solo.choose(16) > 0) {
            alone.push_back(pass);
            solo.observe_round(1, 0, kHeadStep, kProbePass);
        } else {
            solo.observe_plain(kPlainPass);
        }
    }
    GoodputController batched(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
    for (int pass = 0; pass < kPasses; ++pass) {
        batched.planned(0);
        if (batched.probe_when_starved(1, 1)) {
            starved.push_back(pass);
            batched.observe_round(1, 0, kHeadStep, kProbePass);
        } else {
            batched.observe_plain(kPlainPass);
        }
    }
    ASSERT_EQ(starved.size(), alone.size());
    EXPECT_EQ(starved.size(), 2u);
    // alone, a probe follows `wait` plain steps; starved, it is the `wait`-th pass without drafts
    EXPECT_EQ(starved[0] + 1, alone[0]);
    EXPECT_EQ(starved[1] - starved[0] + 1, alone[1] - alone[0]);
    EXPECT_GE(starved[0], 2 * kGoodputProbeInterval - 4) << "the first waits for the guessed cost, not the interval";
}


// What a warm-up taught a head that never agreed: its drafts missed, and what a plain pass, a
// verify of 2 rows and a probe's draft cost.
GoodputMemory never_agreed(double plain_ms, double verify_ms, double draft_ms) {
    GoodputMemory m;
    m.tried = {4};
    m.hit = {0};
    m.plain_ms = plain_ms;
    m.verify_ms = {0.0, verify_ms};
    m.resume_draft_ms = draft_ms;
    m.resume_measured = true;
    return m;
}

// Starved passes of `pass_ms` with `sequences` decoding, `probers` of them starved, until the
// controller asks for a probe (at most 1000): how many.
int starved_until_probe(GoodputController& batched, double pass_ms, uint32_t sequences = 1,
                        uint32_t probers = 0) {
    if (probers == 0) probers = sequences;
    int n = 0;
    for (batched.planned(0); !batched.probe_when_starved(probers, sequences) && n < 1000; batched.planned(0)) {
        batched.observe_plain(pass_ms, /*alone=*/false);
        ++n;
    }
    return n;
}

// The same head, starved by the plan, through a slow stretch of the machine: two passes of
// 700 and 900 ms (against 480) late in the wait. The wait is priced once, at the first starved
// pass after a round, as alone (GoodputController::latch_wait): priced again at every pass,
// the stretch raised the plain step's estimate while the probe's cost stayed where the last
// round left it, the probe looked cheap and came right after the stretch, 18 passes early.
TEST(BatchBudget, a_slow_stretch_does_not_bring_a_starved_probe_forward) {
    const GoodputMemory warm_up = never_agreed(480.0, 960.0, 70.0);
    auto first_probe = [&](int stretch_at) {
        GoodputController batched(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
        for (int pass = 0; pass < 200; ++pass) {
            batched.planned(0);
            if (batched.probe_when_starved(1, 1)) return pass;
            const double ms = pass == stretch_at ? 700.0 : pass == stretch_at + 1 ? 900.0 : 480.0;
            batched.observe_plain(ms, /*alone=*/false);
        }
        return -1;
    };
    const int steady = first_probe(-1);
    ASSERT_GT(steady, 40) << "a probe costs about a pass more: it waits for 2% of the time";
    EXPECT_EQ(first_probe(steady - 20), steady);
}

// Starved again after a round, a sequence waits the whole wait again, as alone: a round finds
// out what a probe would. Before, the count of starved passes went on across the round, and
// the probe came a pass or two after it.
TEST(BatchBudget, a_round_restarts_a_starved_sequences_wait) {
    const GoodputMemory warm_up = never_agreed(480.0, 960.0, 70.0);
    GoodputController batched(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
    const int wait = starved_until_probe(batched, 480.0);
    batched.observe_round(1, 0, 70.0, 960.0);  // the probe
    ASSERT_GT(wait, 20);
    for (int pass = 0; pass < wait - 2; ++pass) {
        batched.planned(0);
        ASSERT_FALSE(batched.probe_when_starved(1, 1)) << "pass " << pass;
        batched.observe_plain(480.0, false);
    }
    batched.observe_round(1, 0, 70.0, 960.0);  // a round the plan gave it
    EXPECT_GE(starved_until_probe(batched, 480.0), wait - 1) << "counted from the round, not from the probe before it";
}

// A probe the plan drops (it could not pay even if accepted) is no probe: the next round the
// plan gives is an ordinary one, and a miss there does not double the back-off. Where a
// probe costs little (a GPU) the back-off alone sets the wait: 8 passes, then 8 again.
TEST(BatchBudget, a_dropped_probe_neither_counts_nor_backs_off) {
    const GoodputMemory warm_up = never_agreed(10.0, 10.5, 0.5);
    GoodputController batched(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
    const int first = starved_until_probe(batched, 10.0);
    EXPECT_EQ(first, kGoodputProbeInterval - 1);
    batched.probe_dropped();
    EXPECT_EQ(batched.report().probes, 0u);
    batched.observe_round(1, 0, 0.5, 10.5);  // a round the plan gave it later: missed
    EXPECT_EQ(starved_until_probe(batched, 10.0), first) << "no failed probe: the back-off is where it was";
}

// Every sequence of a pass waits for a probe's drafting and its row, so a probe's cost is
// weighed by how many there are. A tiny Qwen3.5 at 16 streams on lavapipe: a pass 13 ms, one
// with a probe's row 13.5 ms, the head's catch-up graph 3 ms a prober. Each pricing its probes
// as if alone, the 16 spent 16 times the 2% they allow, about 30% of the time; weighed, 2%.
TEST(BatchBudget, a_starved_probe_is_priced_for_every_sequence_that_waits_for_it) {
    constexpr double kPass = 13.0, kProbeRow = 13.5, kDraft = 3.0;
    const GoodputMemory warm_up = never_agreed(kPass, kProbeRow, kDraft);
    auto share_of_time = [&](uint32_t sequences, int wait) {
        return double(sequences) * (kProbeRow + kDraft - kPass) / (double(wait + 1) * kPass);
    };
    GoodputController alone(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
    const int alone_wait = starved_until_probe(alone, kPass, 1);
    EXPECT_LE(share_of_time(1, alone_wait), 0.02);
    EXPECT_GT(share_of_time(16, alone_wait), 0.25) << "the wait of one, kept by 16";
    GoodputController in_sixteen(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
    const int wait = starved_until_probe(in_sixteen, kPass, 16);
    EXPECT_LE(share_of_time(16, wait), 0.02);
    EXPECT_GE(share_of_time(16, wait), 0.015) << "no longer than the share asks";

    // Switched off alone (the batch's plan had no pass costs yet), its wait priced for one,
    // then starved in a pass of 16: priced again for them. It kept the price of one before,
    // and every request of the tiny model probed 7-15 passes in.
    GoodputMemory drafted = warm_up;
    drafted.draft_ms_per_token = kDraft;
    GoodputController switched_off(16, kGoodputProbeInterval, DrafterKind::head, &drafted);
    ASSERT_EQ(switched_off.choose(16), 0);
    switched_off.observe_plain(kPass, /*alone=*/false);
    ASSERT_TRUE(switched_off.off());
    EXPECT_EQ(starved_until_probe(switched_off, kPass, 16), wait);

    // One starved among 16 that draft: its probes are the only ones, so it waits as alone.
    GoodputController among_drafters(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
    EXPECT_EQ(starved_until_probe(among_drafters, kPass, 16, 1), alone_wait);

    // Priced for 16, then alone again (the others finished): priced for one again.
    GoodputController left_alone(16, kGoodputProbeInterval, DrafterKind::head, &drafted);
    ASSERT_EQ(left_alone.choose(16), 0);
    for (int pass = 0; pass < 3; ++pass) {
        left_alone.planned(0);
        ASSERT_FALSE(left_alone.probe_when_starved(16, 16));
        left_alone.observe_plain(kPass, /*alone=*/false);
    }
    int steps = 3;
    while (left_alone.choose(16) == 0 && steps < 1000) {
        left_alone.observe_plain(kPass, /*alone=*/true);
        ++steps;
    }
    EXPECT_LE(steps, alone_wait + 4);
}

// Until a probe has been timed, what one costs is the trial's time (graph builds included),
// and the wait it implies is capped so that a good head whose first trial missed gets another
// chance soon. Sixteen streams whose trials all missed together are sixteen times that
// evidence, and pay for each probe sixteen times: the tiny Qwen3.5's first wave on lavapipe,
// held to the cap of one (32 passes), probed a third of its streams together, the head
// catching up on 56 rows each: 3.5 passes lost in a 32-token request.
TEST(BatchBudget, a_wait_priced_by_a_trial_alone_is_capped_by_the_streams_that_wait) {
    GoodputMemory warm_up;  // 16 trials in one batched pass of a warm-up, all missed
    warm_up.tried = {16};
    warm_up.hit = {0};
    warm_up.plain_ms = 13.0;
    warm_up.trial_ms = 26.0;
    warm_up.built = {false, true};
    const auto switched_off = [&] {
        GoodputController c(16, kGoodputProbeInterval, DrafterKind::head, &warm_up);
        EXPECT_EQ(c.choose(16), 0);
        EXPECT_TRUE(c.off());
        return c;
    };
    GoodputController alone = switched_off();
    int steps = 0;
    while (alone.choose(16) == 0 && steps < 1000) {
        alone.observe_plain(13.0);
        ++steps;
    }
    EXPECT_LE(steps, 4 * kGoodputProbeInterval) << "alone: a second chance within the trial's cap";
    GoodputController in_sixteen = switched_off();
    EXPECT_GE(starved_until_probe(in_sixteen, 13.0, 16), 16 * kGoodputProbeInterval);
    GoodputController one_starved = switched_off();
    EXPECT_LE(starved_until_probe(one_starved, 13.0, 16, 1), 4 * kGoodputProbeInterval)
        << "the only one starved among 16 that draft: as alone";
}

}  // namespace
}  // namespace tdm
