// SPDX-License-Identifier: Apache-2.0
// tests/serve/best_of_test.cpp: the n choices a completion's best_of sequences give: the
// most likely first, ties to the earlier sequence.
#include "serve/best_of.h"

#include <gtest/gtest.h>

namespace tdm::server {
namespace {

std::vector<Outcome> outcomes_summing(const std::vector<double>& sums) {
    std::vector<Outcome> out(sums.size());
    for (size_t i = 0; i < sums.size(); ++i) out[i].cumulative_logprob = sums[i];
    return out;
}

TEST(BestOf, the_n_most_likely_sequences_come_first) {
    const auto outcomes = outcomes_summing({-5.0, -1.5, -9.0, -1.0, -3.0});
    EXPECT_EQ(best_sequences(outcomes, 2), (std::vector<uint32_t>{3, 1}));
    EXPECT_EQ(best_sequences(outcomes, 1), (std::vector<uint32_t>{3}));
    EXPECT_EQ(best_sequences(outcomes, 5), (std::vector<uint32_t>{3, 1, 4, 0, 2}));
    EXPECT_EQ(best_sequences(outcomes, 9).size(), 5u);
}

TEST(BestOf, ties_go_to_the_earlier_sequence) {
    // greedy sequences are all alike: the first ones are kept, in order
    const auto outcomes = outcomes_summing({-2.0, -2.0, -2.0});
    EXPECT_EQ(best_sequences(outcomes, 2), (std::vector<uint32_t>{0, 1}));
}

}  // namespace
}  // namespace tdm::server
