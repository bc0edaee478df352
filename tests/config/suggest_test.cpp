// SPDX-License-Identifier: Apache-2.0
// tests/config/suggest_test.cpp: edit distance and the "did you mean" rule shared by the
// config loader and the command-line parser.
#include "config/suggest.h"

#include <gtest/gtest.h>

#include <vector>

namespace tdm::test {
namespace {

TEST(Suggest, edit_distance_counts_edits_and_adjacent_swaps) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("abc", ""), 3u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("draft_max", "draft_max"), 0u);
    EXPECT_EQ(edit_distance("drft_max", "draft_max"), 1u);   // insertion
    EXPECT_EQ(edit_distance("draft_maxx", "draft_max"), 1u);  // deletion
    EXPECT_EQ(edit_distance("top_q", "top_p"), 1u);           // substitution
    EXPECT_EQ(edit_distance("tmep", "temp"), 1u);             // swap
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, closest_name_proposes_a_near_candidate) {
    const std::vector<std::string> keys = {"draft_max", "draft_min", "skip_streak", "trace"};
    EXPECT_EQ(closest_name("drft_max", keys), "draft_max");
    EXPECT_EQ(closest_name("DRAFT_MIN", keys), "draft_min");  // case does not count
    EXPECT_EQ(closest_name("trcae", keys), "trace");
    EXPECT_EQ(closest_name("compression", keys), std::nullopt);
    EXPECT_EQ(closest_name("", keys), std::nullopt);
}

TEST(Suggest, closest_name_ignores_dashes_and_accepts_prefixes) {
    const std::vector<std::string> opts = {"-m", "--model", "--temp", "--top-k", "-md"};
    EXPECT_EQ(closest_name("--modle", opts), "--model");
    EXPECT_EQ(closest_name("--temperature", opts), "--temp");  // prefix, far in edits
    EXPECT_EQ(closest_name("--mdl", opts), "-md");
    EXPECT_EQ(closest_name("--zzzzzzzz", opts), std::nullopt);
}

TEST(Suggest, ties_go_to_the_earlier_candidate) {
    const std::vector<std::string> a = {"top_k", "top_p"};
    EXPECT_EQ(closest_name("top_x", a), "top_k");
    const std::vector<std::string> b = {"top_p", "top_k"};
    EXPECT_EQ(closest_name("top_x", b), "top_p");
}

TEST(Suggest, did_you_mean_formats_the_suggestion_or_nothing) {
    const std::vector<std::string> keys = {"draft_max"};
    EXPECT_EQ(did_you_mean("drft_max", keys), " (did you mean 'draft_max'?)");
    EXPECT_EQ(did_you_mean("zzz", keys), "");
}

}  // namespace
}  // namespace tdm::test
