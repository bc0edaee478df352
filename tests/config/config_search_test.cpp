// SPDX-License-Identifier: Apache-2.0
// tests/config/config_search_test.cpp: the config file search order (explicit path, XDG,
// ~/.config, the system directory) on temporary directories, never the real ones.
#include "config/config.h"

#include "formats/expect_error.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tdm::test {
namespace {

namespace fs = std::filesystem;

class ConfigSearch : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("tandem-config-search-" + std::to_string(::getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
        where_.xdg_config_home = (root_ / "xdg").string();
        where_.home = (root_ / "home").string();
        where_.sysconf_dir = (root_ / "etc" / "tandem").string();
    }
    void TearDown() override { fs::remove_all(root_); }

    std::string write(const fs::path& rel, std::string_view text) {
        const fs::path p = root_ / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
        return p.string();
    }

    fs::path root_;
    ConfigSearchPaths where_;
};

TEST_F(ConfigSearch, finds_nothing_when_no_file_exists) {
    auto found = find_config(std::nullopt, where_);
    ASSERT_TRUE(found.ok()) << found.error().message();
    EXPECT_FALSE(found->has_value());
    auto cfg = load_config(std::nullopt, where_);
    ASSERT_TRUE(cfg.ok());
    EXPECT_EQ(*cfg, Config{});
}

TEST_F(ConfigSearch, prefers_the_user_file_over_the_system_file) {
    const std::string sys = write("etc/tandem/tandem.toml", "[sampling]\ntop_k = 1\n");
    EXPECT_EQ(**find_config(std::nullopt, where_), sys);
    const std::string user = write("xdg/tandem/tandem.toml", "[sampling]\ntop_k = 2\n");
    EXPECT_EQ(**find_config(std::nullopt, where_), user);
    EXPECT_EQ(load_config(std::nullopt, where_)->sampling.top_k, 2);  // files are not merged
}

TEST_F(ConfigSearch, uses_home_dot_config_when_xdg_config_home_is_unset_or_relative) {
    const std::string home_file = write("home/.config/tandem/tandem.toml", "");
    write("xdg/tandem/tandem.toml", "");
    where_.xdg_config_home = "";
    EXPECT_EQ(**find_config(std::nullopt, where_), home_file);
    where_.xdg_config_home = "relative/dir";
    EXPECT_EQ(**find_config(std::nullopt, where_), home_file);
}

TEST_F(ConfigSearch, an_explicit_path_wins_and_must_exist) {
    write("xdg/tandem/tandem.toml", "");
    const std::string mine = write("mine.toml", "[log]\nlevel = \"debug\"\n");
    EXPECT_EQ(**find_config(mine, where_), mine);
    EXPECT_EQ(load_config(mine, where_)->log.level, "debug");
    const std::string missing = (root_ / "missing.toml").string();
    EXPECT_TRUE(fails_with(find_config(missing, where_), {"config file '", "missing.toml' does not exist"}));
    EXPECT_TRUE(fails_with(find_config(std::string(), where_), "empty file name"));
}

TEST_F(ConfigSearch, rejects_a_directory_where_a_file_should_be) {
    fs::create_directories(root_ / "dir.toml");
    EXPECT_TRUE(fails_with(find_config((root_ / "dir.toml").string(), where_), "is not a regular file"));
    fs::create_directories(root_ / "xdg" / "tandem" / "tandem.toml");
    EXPECT_TRUE(fails_with(find_config(std::nullopt, where_), "is not a regular file"));
    EXPECT_TRUE(fails_with(load_config_file((root_ / "dir.toml").string()), "is a directory"));
}

TEST_F(ConfigSearch, a_fifo_or_an_oversized_file_is_refused_without_reading_it) {
    const std::string fifo = (root_ / "fifo.toml").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_TRUE(fails_with(load_config_file(fifo), {"config file " + fifo + " is a FIFO, not a regular file"}));
    const std::string big = write("big.toml", std::string(5u << 20, '#'));
    EXPECT_TRUE(fails_with(load_config_file(big), {"config file " + big + " is 5 MiB, more than the 4 MiB"}));
}

TEST_F(ConfigSearch, load_errors_name_the_file) {
    const std::string bad = write("bad.toml", "[sampling]\ntop_k = \"x\"\n");
    EXPECT_TRUE(fails_with(load_config(bad, where_), bad + ": key 'sampling.top_k' at line 2"));
    EXPECT_TRUE(fails_with(load_config_file((root_ / "nope.toml").string()), "cannot open config file"));
}

TEST_F(ConfigSearch, candidates_are_listed_most_specific_first) {
    EXPECT_EQ(config_search_candidates(where_),
              (std::vector<std::string>{(root_ / "xdg/tandem/tandem.toml").string(),
                                        (root_ / "etc/tandem/tandem.toml").string()}));
    const ConfigSearchPaths env = ConfigSearchPaths::from_environment();
    EXPECT_FALSE(env.sysconf_dir.empty());
}

}  // namespace
}  // namespace tdm::test
