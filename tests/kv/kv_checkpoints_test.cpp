// SPDX-License-Identifier: Apache-2.0
// tests/kv/kv_checkpoints_test.cpp: how many recurrent-state checkpoints per sequence fit one
// binding (kv/kv_pool.h, checkpoints_that_fit): what a speculative pool of many sequences
// takes when a checkpoint for every row of the longest verify would not fit. And which
// checkpoints a batch writes (KvPool::plan_states): the lowest ones other than the one it reads,
// so that plain steps in a speculative pool write two of them, as in a plain pool.
#include <gtest/gtest.h>

#include <set>

#include "kv/kv_pool.h"
#include "support/device_fixture.h"

namespace tdm {
namespace {

tdm_recurrent_state state(uint64_t n_f32) { return {sizeof(tdm_recurrent_state), n_f32}; }

constexpr uint64_t kMiB = 1024 * 1024;

TEST(KvCheckpoints, as_many_as_wanted_when_they_fit) {
    const tdm_recurrent_state states[] = {state(kMiB / 4), state(1000)};  // 1 MiB and 4000 bytes
    EXPECT_EQ(checkpoints_that_fit(states, 4, 128 * kMiB, 18), 18u);
    EXPECT_EQ(checkpoints_that_fit({}, 16, 128 * kMiB, 18), 18u) << "no recurrent state: nothing to fit";
}

TEST(KvCheckpoints, the_largest_state_decides_how_many_fit_one_binding) {
    // Qwen3.5-0.8B's SSM state is 1 MiB per sequence; lavapipe binds 128 MiB
    const tdm_recurrent_state states[] = {state(6144 * 3), state(kMiB / 4)};
    EXPECT_EQ(checkpoints_that_fit(states, 8, 128 * kMiB, 18), 16u);
    EXPECT_EQ(checkpoints_that_fit(states, 16, 128 * kMiB, 18), 8u);
    EXPECT_EQ(checkpoints_that_fit(states, 64, 128 * kMiB, 18), 2u);
}

TEST(KvCheckpoints, none_when_not_even_two_fit) {
    const tdm_recurrent_state states[] = {state(kMiB / 4)};
    EXPECT_EQ(checkpoints_that_fit(states, 65, 128 * kMiB, 18), 0u);
    EXPECT_EQ(checkpoints_that_fit(states, 1, kMiB, 18), 0u);
}

// A pool of one sequence with one small recurrent state and 8 checkpoints (a speculative pool).
class KvCheckpointPlans : public test::DeviceTest {
protected:
    void SetUp() override {
        test::DeviceTest::SetUp();
        KvPoolConfig kc;
        kc.n_ctx = 64;
        kc.n_seq_max = 1;
        kc.n_checkpoints = 8;
        const tdm_recurrent_state states[] = {state(64)};
        auto p = KvPool::create(device(), {}, kc, "checkpoint test", states);
        ASSERT_TRUE(p.ok()) << p.error().message();
        pool = std::move(p).value();
        seq = *pool->add_sequence();
    }
    // Plans and commits a batch of n rows at the sequence's length; returns the plan.
    StatePlan run(uint32_t n, const std::function<bool(uint32_t)>& checkpointed = {}) {
        auto plan = pool->plan_states(seq, pool->state_length(seq), n, checkpointed);
        EXPECT_TRUE(plan.ok()) << plan.error().message();
        if (!plan.ok()) return {};
        pool->commit_states(seq, *plan);
        return *plan;
    }
    std::unique_ptr<KvPool> pool;
    int seq = -1;
};

TEST_F(KvCheckpointPlans, plain_steps_alternate_between_two_checkpoints) {
    const auto last_only = [](uint32_t) { return false; };
    EXPECT_EQ(run(5, last_only).write, (std::vector<int32_t>{-1, -1, -1, -1, 1})) << "a prompt chunk: its end only";
    std::set<int32_t> written;
    for (int step = 0; step < 20; ++step) {
        const StatePlan p = run(1);
        ASSERT_EQ(p.write.size(), 1u);
        EXPECT_NE(p.write[0], p.read);
        written.insert(p.write[0]);
    }
    EXPECT_EQ(written, (std::set<int32_t>{0, 1})) << "plain steps wrote other checkpoints of the pool";
    EXPECT_EQ(pool->state_length(seq), 25u);
    EXPECT_TRUE(pool->can_truncate(seq, 24)) << "the state before the last step";
}

TEST_F(KvCheckpointPlans, a_verify_writes_the_lowest_checkpoints_but_the_one_it_reads_and_rolls_back_to_any_of_its_rows) {
    run(3);  // prefill: checkpoints 1, 2, 3 (each row's logits read), the current one 3
    EXPECT_EQ(pool->state_length(seq), 3u);
    // a verify of 4 rows from checkpoint 3: 0, 1, 2, 4
    const StatePlan verify = run(4);
    EXPECT_EQ(verify.read, 3);
    EXPECT_EQ(verify.write, (std::vector<int32_t>{0, 1, 2, 4}));
    for (uint32_t len = 3; len <= 7; ++len) EXPECT_TRUE(pool->can_truncate(seq, len)) << len;
    // one draft accepted: back to the state after the verify's second row (checkpoint 1)
    ASSERT_TRUE(pool->truncate(seq, 5).ok());
    EXPECT_EQ(run(1).write, (std::vector<int32_t>{0}));
    EXPECT_EQ(pool->state_length(seq), 6u);
}

TEST_F(KvCheckpointPlans, a_batch_whose_checkpoints_do_not_fit_writes_its_last_row_only) {
    // 8 rows each wanting a checkpoint: 8 beside the one read is more than the pool's 8
    const StatePlan p = run(8);
    EXPECT_EQ(p.write, (std::vector<int32_t>{-1, -1, -1, -1, -1, -1, -1, 1}));
    // 7 fit beside it
    EXPECT_EQ(run(7).write, (std::vector<int32_t>{0, 2, 3, 4, 5, 6, 7}));
}

// A draft model drafts a token a pass and rolls back to any of them (draft_model.cpp): with the
// lowest checkpoints taken again by each one-row pass, only the last two lengths were left and
// a rejected first draft could not roll back at all. Kept from the round's first length on,
// each pass takes a checkpoint of its own.
TEST_F(KvCheckpointPlans, a_caller_keeping_its_lengths_rolls_back_to_any_of_its_passes) {
    run(3);
    for (bool keep : {false, true}) {
        const uint32_t from = pool->state_length(seq);
        if (keep) pool->keep_states_from(seq, from + 1);
        for (int pass = 0; pass < 4; ++pass) run(1);  // the catch-up row and three drafts
        bool all = true;
        for (uint32_t len = from + 1; len <= from + 4; ++len) all = all && pool->can_truncate(seq, len);
        EXPECT_EQ(all, keep) << (keep ? "a kept length was written over" : "the plans kept more than two lengths");
        if (keep) {
            ASSERT_TRUE(pool->truncate(seq, from + 1).ok()) << "the first draft rejected";
        }
        pool->release_states(seq);
        if (!keep) {
            ASSERT_TRUE(pool->truncate(seq, from + 3).ok()) << "the state before the last pass";
        }
    }
    // every checkpoint kept: the next pass has none to write, and says so
    ASSERT_TRUE(pool->truncate(seq, 0).ok());
    run(7);  // checkpoints 1..7 (0 holds the empty state)
    pool->keep_states_from(seq, 0);
    auto plan = pool->plan_states(seq, pool->state_length(seq), 1);
    ASSERT_FALSE(plan.ok());
    EXPECT_NE(plan.error().message().find("kept for a rollback"), std::string::npos) << plan.error().message();
}

}  // namespace
}  // namespace tdm
