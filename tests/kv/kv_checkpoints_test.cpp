// SPDX-License-Identifier: Apache-2.0
// tests/kv/kv_checkpoints_test.cpp: how many recurrent-state checkpoints per sequence fit one
// binding (kv/kv_pool.h, checkpoints_that_fit): what a speculative pool of many sequences
// takes when a checkpoint for every row of the longest verify would not fit.
#include <gtest/gtest.h>

#include "kv/kv_pool.h"

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

}  // namespace
}  // namespace tdm
