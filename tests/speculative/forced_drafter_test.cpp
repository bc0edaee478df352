// SPDX-License-Identifier: Apache-2.0
// tests/speculative/forced_drafter_test.cpp: `bench spec --force-acceptance`'s drafter decides
// whether the draft of an output position is right once per position, so that draft lengths
// do not change which positions are easy: a policy drafting one token a round and one drafting
// four meet the same luck. Over many positions the rate is A.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "speculative/forced_drafter.h"

namespace tdm {
namespace {

constexpr size_t kPrompt = 3;
constexpr uint32_t kVocab = 1000;

std::vector<int32_t> reference(size_t n) {
    std::vector<int32_t> r(n);
    std::iota(r.begin(), r.end(), 7);
    return r;
}

// The drafts at output position g (g tokens emitted), up to k of them.
std::vector<int32_t> draft_at(ForcedDrafter& d, const std::vector<int32_t>& ref, size_t g, uint32_t k) {
    std::vector<int32_t> history(kPrompt, 1);
    history.insert(history.end(), ref.begin(), ref.begin() + long(g));
    const DraftRequest req{history, uint32_t(history.size() - 1), k};
    auto out = d.draft(req);
    EXPECT_TRUE(out.ok());
    return out.ok() ? *out : std::vector<int32_t>{};
}

TEST(ForcedDrafter, a_positions_draft_is_right_or_wrong_whatever_the_length_asked) {
    const std::vector<int32_t> ref = reference(200);
    ForcedDrafter one(ref, kPrompt, 0.6, kVocab, 42), four(ref, kPrompt, 0.6, kVocab, 42);
    int right = 0;
    for (size_t g = 0; g + 4 < ref.size(); ++g) {
        const bool r1 = draft_at(one, ref, g, 1).at(0) == ref[g];
        const std::vector<int32_t> d4 = draft_at(four, ref, g, 4);
        ASSERT_EQ(d4.size(), 4u);
        EXPECT_EQ(d4[0] == ref[g], r1) << "position " << g;
        // the second draft is right where the first is and its own position's draw says so
        if (r1) {
            const bool next = draft_at(one, ref, g + 1, 1).at(0) == ref[g + 1];
            EXPECT_EQ(d4[1] == ref[g + 1], next) << "position " << g + 1;
        } else {
            EXPECT_NE(d4[1], ref[g + 1]) << "nothing after a wrong draft is right";
        }
        right += r1;
    }
    EXPECT_NEAR(double(right) / double(ref.size() - 4), 0.6, 0.1);
}

TEST(ForcedDrafter, its_rate_over_many_positions_is_a_and_the_seed_changes_the_draws) {
    const std::vector<int32_t> ref = reference(4000);
    for (double a : {0.0, 0.3, 0.7, 1.0}) {
        ForcedDrafter d(ref, kPrompt, a, kVocab, 7);
        int right = 0;
        for (size_t g = 0; g < 2000; ++g) right += draft_at(d, ref, g, 1).at(0) == ref[g];
        EXPECT_NEAR(right / 2000.0, a, 0.035) << "A = " << a;
    }
    ForcedDrafter s1(ref, kPrompt, 0.5, kVocab, 1), s2(ref, kPrompt, 0.5, kVocab, 2);
    int differ = 0;
    for (size_t g = 0; g < 200; ++g)
        differ += (draft_at(s1, ref, g, 1).at(0) == ref[g]) != (draft_at(s2, ref, g, 1).at(0) == ref[g]);
    EXPECT_GT(differ, 50);
}

// `bench spec`'s warm-up forces its head's drafts and hands the costs it measured to the
// prompts after it, which draft with the head itself: the forced drafter teaches the engine's
// history under its head's name (GoodputHistory is kept per drafter), and alone under its own.
TEST(ForcedDrafter, teaches_the_history_under_its_inner_drafters_name) {
    class Head final : public Drafter {
    public:
        const std::string& name() const override { return name_; }
        Status begin(std::span<const int32_t>) override { return {}; }
        Result<std::vector<int32_t>> draft(const DraftRequest&) override { return std::vector<int32_t>{}; }
        Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }

    private:
        std::string name_ = "mtp";
    } head;
    const std::vector<int32_t> ref = reference(8);
    const ForcedDrafter wrapped(ref, kPrompt, 0.5, kVocab, 1, &head), alone(ref, kPrompt, 0.5, kVocab, 1);
    EXPECT_EQ(wrapped.history_name(), "mtp");
    EXPECT_NE(wrapped.name(), "mtp");
    EXPECT_EQ(alone.history_name(), alone.name());
}

}  // namespace
}  // namespace tdm
