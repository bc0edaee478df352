// SPDX-License-Identifier: Apache-2.0
// tests/speculative/chain_goodput_test.cpp: the goodput controller of a chain of drafters
// (speculative/chain_goodput.h) on simulated sequences (no device, behaviour not timings):
// which drafter it asks. A drafter whose drafts are never accepted stops being asked within
// a few rounds while the other keeps drafting; an n-gram drafter without a match loses no
// acceptance credit and is still asked first when its matches pay more; a change of regime
// is followed both ways (a drafter that comes back after being switched off, and one that was
// outranked and becomes the better one); one drafter alone is exactly its own controller.
#include <gtest/gtest.h>

#include "speculative/chain_goodput.h"
#include "support/goodput_sim.h"
#include "speculative/goodput_history.h"

namespace tdm {
namespace {

// A drafter the simulation stands in for: only its kind and name matter to the controller.
class SimDrafter : public Drafter {
public:
    SimDrafter(std::string name, DrafterKind kind) : name_(std::move(name)), kind_(kind) {}
    const std::string& name() const override { return name_; }
    DrafterKind kind() const override { return kind_; }
    Status begin(std::span<const int32_t>) override { return {}; }
    Result<std::vector<int32_t>> draft(const DraftRequest&) override { return std::vector<int32_t>{}; }
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }

private:
    std::string name_;
    DrafterKind kind_;
};


// What one simulated drafter does: its drafts are accepted with `acceptance` per position
// (given the ones before), it has a proposal with probability `proposes` (an n-gram match),
// and drafting costs `draft_ms` per token. Plain step 10 ms, a verify of k + 1 rows
// 10 * (1 + 0.1 k) ms.
struct Behaviour {
    double acceptance = 0, proposes = 1.0, draft_ms = 0;
};

struct Sim {
    std::vector<std::unique_ptr<SimDrafter>> drafters;
    std::vector<ChainedDrafter> chain;
    ChainGoodput tune;
    goodput_sim::Draws draws;
    uint32_t pos = 64;
    std::vector<uint64_t> asked, won;  // per drafter

    // The drafters are named `prefix` followed by their place in the chain.
    explicit Sim(std::vector<DrafterKind> kinds, const GoodputHistory* history = nullptr, const std::string& prefix = "d")
        : tune(8, history) {
        for (size_t i = 0; i < kinds.size(); ++i) {
            drafters.push_back(std::make_unique<SimDrafter>(prefix + std::to_string(i), kinds[i]));
            chain.push_back(ChainedDrafter{.drafter = drafters.back().get(), .on = true, .stat = i});
        }
        tune.meet(chain);
        asked.assign(kinds.size(), 0);
        won.assign(kinds.size(), 0);
    }

    static double verify(int k) { return 10.0 * (1.0 + 0.1 * k); }

    // One round; returns the drafter whose drafts were verified (-1: a plain step).
    int step(const std::vector<Behaviour>& b) {
        const int k = tune.choose(chain, 8, pos);
        int winner = -1, nd = 0;
        if (k > 0)
            for (size_t i : std::vector<size_t>(tune.order().begin(), tune.order().end())) {
                const int own = tune.ask(chain[i], k);
                if (own <= 0) continue;
                ++asked[i];
                if (draws.next() < b[i].proposes) {
                    winner = int(i);
                    nd = own;
                    break;
                }
            }
        if (winner < 0) {
            tune.observe_plain(verify(0));
            pos += 1;
            return -1;
        }
        const Behaviour& w = b[size_t(winner)];
        const int m = draws.accepted(nd, w.acceptance);
        tune.observe_round(size_t(winner), nd, m, w.draft_ms * nd, verify(nd));
        ++won[size_t(winner)];
        pos += uint32_t(m) + 1;
        return winner;
    }
};

TEST(ChainGoodput, a_drafter_never_accepted_stops_being_asked_while_the_other_keeps_drafting) {
    for (bool useless_first : {true, false}) {
        SCOPED_TRACE(useless_first ? "the useless drafter first in the chain" : "second");
        Sim sim({DrafterKind::head, DrafterKind::head});
        const size_t useless = useless_first ? 0 : 1, good = 1 - useless;
        std::vector<Behaviour> b(2);
        b[useless] = {0.0, 1.0, 1.0};
        b[good] = {0.8, 1.0, 1.0};
        int stopped_at = -1;
        uint64_t asked_late = 0;
        for (int i = 0; i < 600; ++i) {
            const uint64_t before = sim.asked[useless];
            sim.step(b);
            if (i >= 300) asked_late += sim.asked[useless] - before;
            if (stopped_at < 0 && sim.tune.controller(useless)->off()) stopped_at = i;
        }
        // its own controller switches it off after its third miss; outranked by the other
        // drafter, it is asked only when it goes first (its first round, revisits, probes)
        ASSERT_GE(stopped_at, 0) << "the useless drafter is still on";
        EXPECT_LE(stopped_at, 40) << "rounds before it was switched off";
        EXPECT_LE(sim.asked[useless], 12u) << "its revisits and probes back off";
        EXPECT_LE(asked_late, 3u) << "asked in the last 300 rounds";
        EXPECT_GT(sim.won[good], 400u) << "the other drafter keeps drafting";
        EXPECT_FALSE(sim.tune.controller(good)->off());
        EXPECT_LT(sim.tune.controller(useless)->acceptance(), 0.1);
    }
}

TEST(ChainGoodput, an_ngram_drafter_without_a_match_loses_no_credit_and_is_asked_first_while_its_matches_pay_more) {
    // n-gram: a match one round in three, nearly always right, free; the head: always a
    // proposal, 70% of it accepted, 1 ms a token
    Sim sim({DrafterKind::ngram, DrafterKind::head});
    const std::vector<Behaviour> b = {{0.95, 0.3, 0.0}, {0.7, 1.0, 1.0}};
    uint64_t rounds = 0, ngram_first = 0;
    for (int i = 0; i < 600; ++i) {
        const bool settled = i >= 100;
        const int w = sim.step(b);
        if (settled && w >= 0) {
            ++rounds;
            ngram_first += sim.tune.order().front() == 0;
        }
    }
    ASSERT_GT(rounds, 400u);
    EXPECT_GT(double(ngram_first) / double(rounds), 0.9) << "the n-gram drafter is asked first";
    EXPECT_GT(sim.tune.controller(0)->acceptance(), 0.85) << "rounds without a match are no rejections";
    EXPECT_GT(sim.won[0], 120u);
    EXPECT_GT(sim.won[1], 250u) << "the head drafts when the n-gram drafter has nothing";
}

TEST(ChainGoodput, follows_a_change_of_regime_of_the_better_drafter) {
    Sim sim({DrafterKind::head, DrafterKind::head});
    std::vector<Behaviour> b = {{0.9, 1.0, 0.5}, {0.6, 1.0, 0.5}};
    std::vector<uint64_t> won_in[3] = {{0, 0}, {0, 0}, {0, 0}};
    int switched_at = -1, back_at = -1;
    for (int i = 0; i < 1500; ++i) {
        const int phase = i < 400 ? 0 : i < 900 ? 1 : 2;
        b[0].acceptance = phase == 1 ? 0.0 : 0.9;  // the first drafter stops agreeing, then agrees again
        const int w = sim.step(b);
        if (w >= 0) ++won_in[phase][size_t(w)];
        if (phase == 1 && switched_at < 0 && w == 1) switched_at = i - 400;
        if (phase == 2 && back_at < 0 && w == 0) back_at = i - 900;
    }
    EXPECT_GT(won_in[0][0], 3 * won_in[0][1]) << "the better drafter drafts";
    ASSERT_GE(switched_at, 0);
    EXPECT_LE(switched_at, 10) << "rounds before the other drafter took over";
    EXPECT_GT(won_in[1][1], 10 * std::max<uint64_t>(1, won_in[1][0])) << "the drafter that stopped agreeing is off";
    ASSERT_GE(back_at, 0) << "never asked again";
    // its probes back off to 32 x 8 rounds at most
    EXPECT_LE(back_at, 8 * 32 + 10);
    EXPECT_GT(won_in[2][0], won_in[2][1]) << "and drafts again once its probe found it agreeing";
}

TEST(ChainGoodput, an_outranked_drafter_that_becomes_the_better_one_is_found_again) {
    Sim sim({DrafterKind::head, DrafterKind::head});
    std::vector<Behaviour> b = {{0.65, 1.0, 0.5}, {0.3, 1.0, 0.5}};
    uint64_t late_second = 0, late = 0;
    for (int i = 0; i < 1200; ++i) {
        if (i == 300) b[1].acceptance = 0.97;  // the outranked drafter's text became predictable
        const int w = sim.step(b);
        if (i >= 900 && w >= 0) {
            ++late;
            late_second += w == 1;
        }
    }
    ASSERT_GT(late, 200u);
    EXPECT_GT(double(late_second) / double(late), 0.8) << "revisits found the second drafter better";
}

TEST(ChainGoodput, one_drafter_alone_is_exactly_its_controller) {
    Sim sim({DrafterKind::head});
    GoodputController alone(8);
    goodput_sim::Draws d;
    for (int i = 0; i < 300; ++i) {
        const double p = i < 150 ? 0.8 : 0.0;
        const int k = sim.tune.choose(sim.chain, 8, sim.pos);
        ASSERT_EQ(k, alone.choose(8)) << "step " << i;
        ASSERT_EQ(sim.tune.ask(sim.chain[0], k), k);
        if (k == 0) {
            sim.tune.observe_plain(Sim::verify(0));
            alone.observe_plain(Sim::verify(0));
            sim.pos += 1;
            continue;
        }
        const int m = d.accepted(k, p);
        sim.tune.observe_round(0, k, m, 0.5 * k, Sim::verify(k));
        alone.observe_round(k, m, 0.5 * k, Sim::verify(k));
        sim.pos += uint32_t(m) + 1;
    }
    const ControllerStats a = sim.tune.report(), b = alone.report();
    EXPECT_EQ(a.off_steps, b.off_steps);
    EXPECT_EQ(a.probes, b.probes);
    EXPECT_EQ(a.chosen_rounds, b.chosen_rounds);
    EXPECT_EQ(a.chosen_k_sum, b.chosen_k_sum);
}

// A chain's drafters start from the engine's history of each, and only a drafter that
// drafted adds to it.
TEST(ChainGoodput, each_drafter_starts_from_its_own_history_and_teaches_it_only_if_it_drafted) {
    GoodputHistory history;
    {
        Sim sim({DrafterKind::ngram, DrafterKind::head});
        const std::vector<Behaviour> b = {{0.9, 0.5, 0.0}, {0.0, 1.0, 1.0}};
        for (int i = 0; i < 200; ++i) sim.step(b);
        sim.tune.teach(history);
    }
    ASSERT_NE(history.find(DrafterKind::ngram, "d0"), nullptr);
    const GoodputMemory* head = history.find(DrafterKind::head, "d1");
    ASSERT_NE(head, nullptr) << "the head drafted its first rounds";
    EXPECT_LT(head->hit_total(), 1.0);

    ChainGoodput next(8, &history);
    Sim shape({DrafterKind::ngram, DrafterKind::head});
    next.meet(shape.chain);
    EXPECT_GT(next.controller(0)->acceptance(), 0.8) << "the n-gram drafter's history";
    EXPECT_LT(next.controller(1)->acceptance(), 0.2) << "the head's history";
    EXPECT_EQ(next.choose(shape.chain, 8, 10), 8) << "the n-gram drafter first, long";
    EXPECT_EQ(next.order().front(), 0u);

    // a drafter never asked in a chain leaves its history alone
    GoodputHistory fresh;
    Sim idle({DrafterKind::ngram, DrafterKind::head});
    const std::vector<Behaviour> b = {{0.9, 1.0, 0.0}, {0.9, 1.0, 1.0}};
    idle.step(b);  // the n-gram drafter is first and proposes
    idle.tune.teach(fresh);
    EXPECT_NE(fresh.find(DrafterKind::ngram, "d0"), nullptr);
    EXPECT_EQ(fresh.find(DrafterKind::head, "d1"), nullptr);
}

// Two drafters of one kind keep histories of their own: a server's MTP head that never agrees
// does not switch off, from its first step, the sequences of the draft model that other
// requests pick, and a chain of two n-gram drafters teaches each what it did (kept per kind,
// the draft model started off, and the chain folded each sequence into one history twice,
// the matching drafter's acceptance diluted by the other's misses).
TEST(ChainGoodput, drafters_of_one_kind_keep_histories_of_their_own) {
    GoodputHistory history;
    const std::vector<Behaviour> never = {{0.0, 1.0, 1.0}};
    for (int seq = 0; seq < 3; ++seq) {
        Sim mtp({DrafterKind::head}, &history, "mtp");
        for (int i = 0; i < 40; ++i) mtp.step(never);
        mtp.tune.teach(history);
    }
    ASSERT_NE(history.find(DrafterKind::head, "mtp0"), nullptr);
    Sim again({DrafterKind::head}, &history, "mtp");
    EXPECT_EQ(again.tune.choose(again.chain, 8, again.pos), 0) << "the MTP head's history: off";
    Sim draft({DrafterKind::head}, &history, "draft");
    EXPECT_EQ(draft.tune.choose(draft.chain, 8, draft.pos), 1) << "the draft model's first trial";
    EXPECT_FALSE(draft.tune.controller(0)->off());
    EXPECT_DOUBLE_EQ(draft.tune.controller(0)->report().plain_ms, Sim::verify(0))
        << "the target's plain step, measured by the head's sequences: no calibration";
    // a drafter of another kind that happens to bear the head's name is no kin of it
    Sim namesake({DrafterKind::ngram}, &history, "mtp");
    EXPECT_EQ(namesake.tune.choose(namesake.chain, 8, namesake.pos), 8) << "an n-gram drafter's first length";

    GoodputHistory pair;
    Sim chain({DrafterKind::ngram, DrafterKind::ngram}, &pair);
    const std::vector<Behaviour> b = {{0.9, 0.6, 0.0}, {0.0, 1.0, 0.0}};
    for (int i = 0; i < 200; ++i) chain.step(b);
    ASSERT_GT(chain.won[1], 0u) << "the second drafter drafted where the first had no match";
    chain.tune.teach(pair);
    const GoodputMemory* matching = pair.find(DrafterKind::ngram, "d0");
    const GoodputMemory* missing = pair.find(DrafterKind::ngram, "d1");
    ASSERT_NE(matching, nullptr);
    ASSERT_NE(missing, nullptr);
    EXPECT_GT(matching->hit_total() / matching->tried_total(), 0.8);
    EXPECT_LT(missing->hit_total(), 1.0);
    const GoodputMemory own = chain.tune.controller(0)->learned();
    EXPECT_NEAR(matching->hit_total() / matching->tried_total(), own.hit_total() / own.tried_total(), 1e-9)
        << "its own drafts alone";
}

// A head switched off in an earlier sequence (it never agreed), outranked by an n-gram drafter
// that drafts every round of a short request, is never asked: it hands on its count toward
// the next probe all the same, so that requests shorter than the wait still probe it in turn.
TEST(ChainGoodput, a_member_off_and_never_asked_hands_on_its_count_toward_the_next_probe) {
    GoodputHistory history;
    GoodputMemory off;
    off.tried = {2.0};  // two trials, both rejected: a verdict
    off.hit = {0.0};
    off.plain_ms = Sim::verify(0);
    off.verify_ms = {0.0, Sim::verify(1)};
    off.draft_ms_per_token = 1.0;
    off.resume_draft_ms = 1.0;
    off.resume_measured = true;
    off.off_steps = 2;
    off.probe_after = kGoodputProbeInterval;
    history.absorb(DrafterKind::head, "d1", off);
    const std::vector<Behaviour> b = {{0.9, 1.0, 0.0}, {0.0, 1.0, 1.0}};
    Sim sim({DrafterKind::ngram, DrafterKind::head}, &history);
    // meanwhile another request of the drafter measured a dearer draft: the head, which started
    // from the history before it, must not hand its stale copy back
    GoodputMemory other;
    other.draft_ms_per_token = 3.0;
    history.absorb(DrafterKind::head, "d1", other);
    for (int i = 0; i < 5; ++i) sim.step(b);  // the n-gram drafter's rounds, and its plain steps measuring the baseline
    EXPECT_GT(sim.won[0], 0u);
    EXPECT_EQ(sim.asked[1], 0u) << "the head is off, its probe not due (a wait of 10 steps)";
    ASSERT_TRUE(sim.tune.controller(1)->off());
    sim.tune.teach(history);
    const GoodputMemory* head = history.find(DrafterKind::head, "d1");
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(head->off_steps, 7.0) << "the 2 it started from and the 5 rounds it sat out";
    EXPECT_EQ(head->probe_after, kGoodputProbeInterval);
    EXPECT_EQ(head->tried_total(), 2.0) << "no drafts: the acceptance is not aged";
    EXPECT_EQ(head->draft_ms_per_token, 3.0) << "nor the costs replaced by the head's copy of the older history";

    // the next request's head goes on from there: its probe comes at the wait (10 or 11 plain
    // steps: a probe's loss, 0.2 of a step, over 2%) less the 7 handed on; from 2, 8 rounds in
    Sim next({DrafterKind::ngram, DrafterKind::head}, &history);
    int probed_at = -1;
    for (int i = 0; i < 12 && probed_at < 0; ++i) {
        next.step(b);
        if (next.asked[1] > 0) probed_at = i;
    }
    EXPECT_GE(probed_at, 2);
    EXPECT_LE(probed_at, 4);
}

}  // namespace
}  // namespace tdm
