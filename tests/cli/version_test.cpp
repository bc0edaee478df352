// SPDX-License-Identifier: Apache-2.0
// tests/cli/version_test.cpp: `tandem --version` (and -v) prints the release, the plugin ABI
// range of this host and the commit, exits 0, and wins over a command's other work.
#include <gtest/gtest.h>

#include <regex>

#include "cli/cli_run.h"
#include "tandem/tandem.h"

namespace tdm {
namespace {

void expect_version_page(const CliRun& r) {
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("^tandem [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << r.out;
    EXPECT_NE(r.out.find("plugin ABI " + std::to_string(TDM_ABI_VERSION_MIN) + ".." +
                         std::to_string(TDM_ABI_VERSION) + "." + std::to_string(TDM_ABI_MINOR_VERSION) + "\n"),
              std::string::npos)
        << r.out;
    // a short hash (possibly "-modified") or "unknown" outside a git checkout
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\ncommit ([0-9a-f]{7,40}(-modified)?|unknown)\n$"))) << r.out;
}

TEST(Version, long_and_short_flags_print_the_version_abi_range_and_commit) {
    expect_version_page(tandem({"--version"}));
    expect_version_page(tandem({"-v"}));
}

TEST(Version, a_command_with_version_prints_it_and_runs_nothing) {
    const CliRun r = tandem({"run", "-m", "/nonexistent.gguf", "--version"});
    expect_version_page(r);
    EXPECT_EQ(r.err.find("nonexistent"), std::string::npos) << r.err;
}

TEST(Version, help_mentions_the_flag) {
    const CliRun r = tandem({"--help"});
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("--version"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tdm
