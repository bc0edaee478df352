// SPDX-License-Identifier: Apache-2.0
// tests/cli/cpu_device_threads_test.cpp: the LP_NUM_THREADS tandem's executable gives lavapipe
// (one thread more than its CPUs, unless the user set the variable): the rule in process, and
// what the built `tandem` does with and without the variable in its environment.
#include "cli/cpu_device_threads.h"
#include "cli_run.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace tdm::test {
namespace {

TEST(LavapipeThreads, one_more_than_the_cpus_when_unset) {
    EXPECT_EQ(cli::lavapipe_threads_to_set(nullptr, 1), 2u);
    EXPECT_EQ(cli::lavapipe_threads_to_set(nullptr, 2), 3u);
    EXPECT_EQ(cli::lavapipe_threads_to_set(nullptr, 64), 65u);
}

TEST(LavapipeThreads, a_value_the_user_set_is_kept_even_zero_or_empty) {
    EXPECT_FALSE(cli::lavapipe_threads_to_set("0", 2));
    EXPECT_FALSE(cli::lavapipe_threads_to_set("2", 2));
    EXPECT_FALSE(cli::lavapipe_threads_to_set("", 2));
}

TEST(LavapipeThreads, nothing_when_the_cpu_count_is_unknown) { EXPECT_FALSE(cli::lavapipe_threads_to_set(nullptr, 0)); }

TEST(LavapipeThreads, usable_cpus_are_at_least_one_and_at_most_those_configured) {
    const unsigned n = cli::usable_cpus();
    EXPECT_GE(n, 1u);
    EXPECT_LE(long(n), sysconf(_SC_NPROCESSORS_CONF));
}

TEST(LavapipeThreads, the_executable_sets_the_variable_only_when_it_is_unset) {
    const std::string want = "LP_NUM_THREADS=" + std::to_string(cli::usable_cpus() + 1) + " (";
    CliRun unset = tandem({"--log-level", "debug", "devices"}, "env -u LP_NUM_THREADS");
    EXPECT_EQ(unset.status, 0) << unset.err;
    EXPECT_TRUE(unset.has(want)) << unset.err;

    CliRun set = tandem({"--log-level", "debug", "devices"}, "LP_NUM_THREADS=0");
    EXPECT_EQ(set.status, 0) << set.err;
    EXPECT_TRUE(set.has("LP_NUM_THREADS=0 as set")) << set.err;
    EXPECT_FALSE(set.has(want)) << set.err;
}

}  // namespace
}  // namespace tdm::test
