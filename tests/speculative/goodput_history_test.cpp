// SPDX-License-Identifier: Apache-2.0
// tests/speculative/goodput_history_test.cpp: what the engine's history of earlier sequences
// weighs as a new sequence's prior: as much as those sequences agree with each other on the
// first draft's acceptance (16 drafts where they agree as closely as chance allows, 4 where
// their texts differ), so that a run of rejections at the start of a sequence does not switch
// drafting off where every sequence before drafted at a paying rate, and still does where
// they differed.
#include <gtest/gtest.h>

#include <vector>

#include "speculative/goodput.h"
#include "speculative/goodput_history.h"

namespace tdm {
namespace {

// One sequence's contribution: `tried` first drafts, `hit` of them accepted, and the costs of
// lavapipe at a round of one draft of 1.5 plain steps (a verify of 2 rows 1.3, a draft 0.2).
GoodputMemory sequence(double tried, double hit) {
    GoodputMemory m;
    m.tried = {tried};
    m.hit = {hit};
    m.plain_ms = 10.0;
    m.verify_ms = {0.0, 13.0};
    m.draft_ms_per_token = 2.0;
    m.built = {false, true};
    return m;
}

GoodputHistory history_of(const std::vector<std::pair<double, double>>& seqs) {
    GoodputHistory h;
    for (auto [tried, hit] : seqs) h.absorb(DrafterKind::head, "mtp", sequence(tried, hit));
    return h;
}

TEST(GoodputHistory, weighs_as_much_as_its_sequences_agree) {
    const GoodputHistory agree = history_of({{20, 14}, {20, 13}, {20, 15}, {20, 14}});
    EXPECT_DOUBLE_EQ(agree.find(DrafterKind::head, "mtp")->prior_weight(4, 16), 16.0) << "rates 0.65-0.75 over 20 drafts: chance";
    const GoodputHistory differ = history_of({{20, 18}, {20, 2}, {20, 18}, {20, 2}});
    EXPECT_DOUBLE_EQ(differ.find(DrafterKind::head, "mtp")->prior_weight(4, 16), 4.0) << "rates 0.9 and 0.1: texts";
    const GoodputHistory some = history_of({{20, 18}, {20, 12}, {20, 16}, {20, 10}});
    const double w = some.find(DrafterKind::head, "mtp")->prior_weight(4, 16);
    EXPECT_GT(w, 4.0) << "rates 0.5-0.9: a little more than chance";
    EXPECT_LT(w, 16.0);
    const GoodputHistory few = history_of({{2, 2}, {2, 2}});
    EXPECT_DOUBLE_EQ(few.find(DrafterKind::head, "mtp")->prior_weight(4, 16), 4.0) << "agreeing, but worth 3.4 drafts";
    const GoodputHistory one = history_of({{20, 14}});
    EXPECT_DOUBLE_EQ(one.find(DrafterKind::head, "mtp")->prior_weight(4, 16), 4.0) << "one sequence says nothing of agreement";
    // a sequence of one draft says nothing of its rate, one of none nothing at all
    const GoodputHistory thin = history_of({{20, 14}, {1, 0}, {0, 0}});
    EXPECT_DOUBLE_EQ(thin.find(DrafterKind::head, "mtp")->seqs, 1.0);
    GoodputHistory forgot = history_of({{20, 14}, {20, 13}, {20, 15}});
    forgot.forget_acceptance();
    EXPECT_DOUBLE_EQ(forgot.find(DrafterKind::head, "mtp")->prior_weight(4, 16), 4.0);
}

// Three rounds whose one draft is rejected, at the start of a sequence: where the sequences
// before agreed on 0.7 (k = 1 breaks even at 0.5 here) drafting goes on; where they differed,
// as often at 0.5 as at 0.9 (a higher mean), the same rejections switch it off. With the
// history's weight fixed at 4 drafts, both switched off; at 16, neither did.
TEST(GoodputHistory, rejections_at_the_start_outvote_a_history_only_as_far_as_it_disagrees) {
    const auto after_three_misses = [](const GoodputHistory& h) {
        GoodputController t(8, kGoodputProbeInterval, DrafterKind::head, h.find(DrafterKind::head, "mtp"));
        for (int i = 0; i < 3; ++i) {
            if (t.choose(8) == 0) return false;
            t.observe_round(1, 0, 2.0, 13.0);
        }
        return t.choose(8) > 0;
    };
    EXPECT_TRUE(after_three_misses(history_of({{20, 14}, {20, 13}, {20, 15}, {20, 14}})));
    const GoodputHistory differ = history_of({{20, 10}, {20, 18}, {20, 10}, {20, 18}});
    EXPECT_DOUBLE_EQ(differ.find(DrafterKind::head, "mtp")->prior_weight(4, 16), 4.0);
    EXPECT_FALSE(after_three_misses(differ));
}

// A sequence that drafted only after plain steps (its probes) hands on what a probe drafts, a
// head's catch-up included, and leaves the draft's cost measured right after a round as it was.
TEST(GoodputHistory, a_probes_catch_up_is_handed_on_apart_from_a_drafts_cost) {
    GoodputHistory h;
    GoodputMemory probes = sequence(2, 1);
    probes.draft_ms_per_token = 0.0;
    probes.resume_draft_ms = 6.0;
    h.absorb(DrafterKind::head, "mtp", sequence(4, 3));
    h.absorb(DrafterKind::head, "mtp", probes);
    EXPECT_DOUBLE_EQ(h.find(DrafterKind::head, "mtp")->draft_ms_per_token, 2.0);
    EXPECT_DOUBLE_EQ(h.find(DrafterKind::head, "mtp")->resume_draft_ms, 6.0);
    GoodputController t(8, kGoodputProbeInterval, DrafterKind::head, h.find(DrafterKind::head, "mtp"));
    EXPECT_NEAR(t.miss_cost(), 0.5, 1e-9) << "a verify of 2 rows at 13 and a draft at 2, against 10";
}

}  // namespace
}  // namespace tdm
