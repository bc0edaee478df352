// SPDX-License-Identifier: Apache-2.0
// tests/speculative/batch_budget_test.cpp: the draft budget of a batched pass
// (speculative/batch_budget.h): the cost model recovers a + b * rows, and drafts go where
// they raise the expected tokens per millisecond, best first, and nowhere when rows cost
// more than they bring.
#include <gtest/gtest.h>

#include "speculative/batch_budget.h"

namespace tdm {
namespace {

TEST(BatchBudget, the_cost_model_fits_a_plus_b_times_rows) {
    PassCostModel m;
    EXPECT_FALSE(m.ready());
    for (int i = 0; i < 3; ++i) m.observe(8, 100);
    m.observe(8, 100);
    EXPECT_FALSE(m.ready()) << "one width only: no slope";
    for (uint32_t rows : {4u, 12u, 16u, 9u, 20u}) m.observe(rows, 50 + 6.25 * rows);
    for (uint32_t rows : {4u, 12u, 16u, 9u, 20u, 8u}) m.observe(rows, 50 + 6.25 * rows);
    ASSERT_TRUE(m.ready());
    EXPECT_NEAR(m.b(), 6.25, 0.2);
    EXPECT_NEAR(m.a(), 50, 3);
}

TEST(BatchBudget, nearly_free_rows_take_every_likely_draft) {
    // a GPU's memory-bound decode: 8 sessions, rows cost 1% of a pass each
    std::vector<DraftCandidate> c(8, {4, 0.7, 0});
    const auto k = allocate_drafts(100, 1, 8, 8, c);
    for (uint32_t x : k) EXPECT_EQ(x, 4u);
}

TEST(BatchBudget, costly_rows_take_no_draft_or_only_the_likely_ones) {
    // lavapipe with 8 sessions: a row costs 1/8 of the pass's fixed part
    std::vector<DraftCandidate> poor(8, {4, 0.3, 0});
    for (uint32_t x : allocate_drafts(40, 5, 8, 8, poor)) EXPECT_EQ(x, 0u);
    // one session drafts well, the others badly: only it drafts, and not beyond what pays
    std::vector<DraftCandidate> mixed(8, {4, 0.2, 0});
    mixed[3] = {4, 0.95, 0};
    const auto k = allocate_drafts(40, 5, 8, 8, mixed);
    for (size_t i = 0; i < k.size(); ++i) {
        if (i == 3) {
            EXPECT_GE(k[i], 1u);
        } else {
            EXPECT_EQ(k[i], 0u) << i;
        }
    }
}

TEST(BatchBudget, drafts_never_exceed_a_cap_and_drafting_time_counts) {
    std::vector<DraftCandidate> c = {{2, 0.9, 0}, {0, 0.9, 0}, {6, 0.9, 0}};
    const auto k = allocate_drafts(100, 0.1, 3, 3, c);
    EXPECT_EQ(k[0], 2u);
    EXPECT_EQ(k[1], 0u);
    EXPECT_EQ(k[2], 6u);
    // a 0.9 token for 30 ms more of a 100 ms pass pays; for 80 ms it does not
    std::vector<DraftCandidate> fair = {{2, 0.9, 30}};
    EXPECT_GE(allocate_drafts(100, 0.1, 2, 2, fair)[0], 1u);
    std::vector<DraftCandidate> slow = {{2, 0.9, 80}, {6, 0.9, 80}};
    for (uint32_t x : allocate_drafts(100, 0.1, 2, 2, slow)) EXPECT_EQ(x, 0u);
}

}  // namespace
}  // namespace tdm
