// SPDX-License-Identifier: Apache-2.0
// tests/vk/pipeline_cache_file_test.cpp: the on-disk pipeline cache is only a cache:
// a FIFO, a device, an oversized or corrupt file at its path is reported (with the
// path and the reason) and skipped, never read without end or waited on; saves go
// through a unique temporary file and leave none behind.
// To add a case: put something at a path under make_temp_dir() and load it.
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "vk/pipeline_cache_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace tdm;
using tdm::test::fails_with;
namespace fs = std::filesystem;

TEST(PipelineCacheFile, saves_and_loads_back_and_leaves_no_temporary_files) {
    const std::string dir = test::make_temp_dir("pcache");
    const std::string path = dir + "/pipelines.zst";
    auto none = vk::load_pipeline_cache_file(path);
    ASSERT_TRUE(none.ok()) << none.error().message();
    EXPECT_TRUE(none->empty());

    const std::vector<uint8_t> blob = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ASSERT_TRUE(vk::save_pipeline_cache_file(path, blob).ok());
    ASSERT_TRUE(vk::save_pipeline_cache_file(path, blob).ok());  // replaces, does not append
    auto back = vk::load_pipeline_cache_file(path);
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(*back, blob);
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.path().filename() == "pipelines.zst" ? 0 : 1;
    EXPECT_EQ(files, 0u) << "a temporary file was left behind";
}

TEST(PipelineCacheFile, a_fifo_or_dev_zero_at_the_cache_path_is_reported_not_read) {
    const std::string dir = test::make_temp_dir("pcache-kinds");
    const std::string fifo = dir + "/fifo.zst";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_TRUE(fails_with(vk::load_pipeline_cache_file(fifo), {"pipeline cache " + fifo + " is a FIFO"}));
    const std::string zero = dir + "/zero.zst";
    ASSERT_EQ(::symlink("/dev/zero", zero.c_str()), 0);
    EXPECT_TRUE(fails_with(vk::load_pipeline_cache_file(zero),
                           {"pipeline cache " + zero + " is a character device, not a regular file"}));
}

TEST(PipelineCacheFile, corrupt_or_oversized_content_is_reported) {
    const std::string dir = test::make_temp_dir("pcache-bad");
    const std::string junk = dir + "/junk.zst";
    std::ofstream(junk, std::ios::binary) << "not zstd at all";
    EXPECT_TRUE(fails_with(vk::load_pipeline_cache_file(junk), {junk, "not a zstd frame"}));
    // A frame header that claims more than the limit: refused before allocating it.
    const std::string huge = dir + "/huge.zst";
    {
        // Magic, then a frame header descriptor with an 8-byte content size and a single
        // segment (0xE0), then the claimed size: enough for ZSTD_getFrameContentSize.
        std::string frame;
        const uint32_t magic = 0xFD2FB528u;
        frame.append(reinterpret_cast<const char*>(&magic), 4);
        frame.push_back(char(0xE0));
        const uint64_t claimed = 4ull << 30;
        frame.append(reinterpret_cast<const char*>(&claimed), 8);
        std::ofstream(huge, std::ios::binary) << frame;
    }
    EXPECT_TRUE(fails_with(vk::load_pipeline_cache_file(huge), {huge, "would inflate to 4 GiB, more than the 512 MiB"}));
}

TEST(PipelineCacheFile, write_errors_give_the_path_and_the_system_s_reason) {
    const std::string dir = test::make_temp_dir("pcache-ro");
    const std::string not_a_dir = dir + "/file";
    std::ofstream(not_a_dir) << "x";
    const std::string path = not_a_dir + "/pipelines.zst";
    EXPECT_TRUE(fails_with(vk::save_pipeline_cache_file(path, {1, 2, 3}),
                           {"cannot write pipeline cache " + path, "Not a directory"}));
}

class PipelineCacheDevice : public test::DeviceTest {};

TEST_F(PipelineCacheDevice, a_manager_whose_cache_path_is_dev_zero_starts_empty_and_replaces_it) {
    const std::string home = test::make_temp_dir("pcache-home");
    test::ScopedEnv xdg("XDG_CACHE_HOME", home.c_str());
    test::ScopedEnv keep("TANDEM_NO_PIPELINE_CACHE", "");  // restores any setting afterwards
    ::unsetenv("TANDEM_NO_PIPELINE_CACHE");                  // the cache is what is tested
    std::string path;
    {
        vk::PipelineManager probe(device());
        path = probe.cache_path();
    }
    ASSERT_FALSE(path.empty());
    fs::remove(path);
    ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0);
    {
        vk::PipelineManager m(device());  // used to read /dev/zero until std::bad_alloc
        EXPECT_EQ(m.cache_path(), path);
    }
    // The save on destruction replaced the link with a real cache file.
    EXPECT_FALSE(fs::is_symlink(path));
    auto loaded = vk::load_pipeline_cache_file(path);
    EXPECT_TRUE(loaded.ok()) << loaded.error().message();
}
