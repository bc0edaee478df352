// SPDX-License-Identifier: Apache-2.0
// tests/common/file_read_test.cpp: read_regular_file refuses FIFOs, devices and
// directories before reading (a FIFO would otherwise block the open forever, and
// /dev/zero would be read until memory runs out), and holds files to a size limit.
// To add a case: make the path under make_temp_dir() and check the message.
#include <gtest/gtest.h>

#include "common/file_read.h"
#include "formats/expect_error.h"
#include "support/fixtures.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

using namespace tdm;
using tdm::test::fails_with;

namespace {

std::string write_file(const std::string& dir, const std::string& name, const std::string& bytes) {
    const std::string p = dir + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
}

}  // namespace

TEST(FileRead, reads_a_regular_file_whole) {
    const std::string dir = test::make_temp_dir("file-read");
    const std::string p = write_file(dir, "a.txt", std::string("hello\0world", 11));
    auto r = read_regular_file(p, 1024, "prompt file");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, std::string("hello\0world", 11));
}

TEST(FileRead, a_fifo_is_refused_without_blocking) {
    // No writer ever opens this FIFO: a blocking open would hang the test.
    const std::string fifo = test::make_temp_dir("file-read-fifo") + "/pipe";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_TRUE(fails_with(read_regular_file(fifo, 1024, "config.json"),
                           {"config.json " + fifo + " is a FIFO, not a regular file"}));
    EXPECT_TRUE(fails_with(open_regular_file(fifo, "model file"), {"is a FIFO"}));
}

TEST(FileRead, a_directory_and_a_device_behind_a_symlink_are_refused) {
    const std::string dir = test::make_temp_dir("file-read-kinds");
    EXPECT_TRUE(fails_with(read_regular_file(dir, 1024, "prompt file"),
                           {"prompt file " + dir + " is a directory, not a regular file"}));
    const std::string link = dir + "/zero";
    ASSERT_EQ(::symlink("/dev/zero", link.c_str()), 0);
    EXPECT_TRUE(fails_with(read_regular_file(link, 1024, "pipeline cache"),
                           {"pipeline cache " + link + " is a character device, not a regular file"}));
}

TEST(FileRead, missing_files_and_files_over_the_limit_are_named) {
    const std::string dir = test::make_temp_dir("file-read-limit");
    EXPECT_TRUE(fails_with(read_regular_file(dir + "/nope", 1024, "tokenizer file"),
                           {"cannot open tokenizer file " + dir + "/nope", "No such file"}));
    const std::string big = write_file(dir, "big.json", std::string(2048, 'x'));
    EXPECT_TRUE(fails_with(read_regular_file(big, 1024, "model config"),
                           {"model config " + big + " is 2 KiB, more than the 1 KiB"}));
    auto exact = read_regular_file(big, 2048, "model config");
    ASSERT_TRUE(exact.ok()) << exact.error().message();
    EXPECT_EQ(exact->size(), 2048u);
}

TEST(FileRead, byte_sizes_read_naturally) {
    EXPECT_EQ(byte_size_text(17), "17 bytes");
    EXPECT_EQ(byte_size_text(1536), "1.5 KiB");
    EXPECT_EQ(byte_size_text(256ull << 20), "256 MiB");
}
