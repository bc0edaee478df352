// SPDX-License-Identifier: Apache-2.0
// tests/formats/mapped_file_test.cpp: MappedFile opens, wraps memory, reports errors
// with the path, and release_pages() really drops pages from the resident set (read
// from /proc/self/smaps, the only place Linux reports per-mapping RSS).
// To add a case: write a file under make_temp_dir() and map it.
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "formats/mapped_file.h"
#include "support/fixtures.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace tdm;
using tdm::test::fails_with;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

// Resident kB of the mapping that contains `p`, from /proc/self/smaps; -1 if not found.
long rss_kb_of_mapping(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool in_mapping = false;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    while (std::getline(smaps, line)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
            in_mapping = addr >= lo && addr < hi;
            continue;
        }
        long kb = 0;
        if (in_mapping && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) return kb;
    }
    return -1;
}

}  // namespace

TEST(MappedFile, maps_a_file_whole_and_read_only) {
    std::string path = tdm::test::make_temp_dir("mapped") + "/f.bin";
    write_bytes(path, std::string("hello\0world", 11));
    auto f = MappedFile::open(path);
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ((*f)->size(), 11u);
    EXPECT_EQ((*f)->path(), path);
    EXPECT_TRUE((*f)->is_mapped());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>((*f)->data()), 11), std::string("hello\0world", 11));
}

TEST(MappedFile, empty_files_map_to_zero_bytes) {
    std::string path = tdm::test::make_temp_dir("mapped-empty") + "/empty";
    write_bytes(path, "");
    auto f = MappedFile::open(path);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ((*f)->size(), 0u);
    (*f)->release_pages(0, 100);  // nothing to release, must not fault
}

TEST(MappedFile, errors_name_the_path_and_the_reason) {
    EXPECT_TRUE(fails_with(MappedFile::open("/nonexistent/x.gguf"),
                           {"/nonexistent/x.gguf", "cannot open", "No such file"}));
    std::string dir = tdm::test::make_temp_dir("mapped-dir");
    EXPECT_TRUE(fails_with(MappedFile::open(dir), {dir, "not a regular file"}));
}

TEST(MappedFile, from_bytes_owns_a_copy_and_ignores_release) {
    auto f = MappedFile::from_bytes("mem", std::string("abc"));
    EXPECT_EQ(f->path(), "mem");
    EXPECT_EQ(f->size(), 3u);
    EXPECT_FALSE(f->is_mapped());
    f->release_pages(0, 3);
    EXPECT_EQ(f->data()[2], 'c');
}

TEST(MappedFile, release_pages_drops_resident_pages_but_keeps_the_bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t size = 256 * page + 123;  // a partial last page too
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = char(i * 13 + (i >> 12));
    std::string path = tdm::test::make_temp_dir("mapped-rss") + "/big.bin";
    write_bytes(path, bytes);
    auto r = MappedFile::open(path);
    ASSERT_TRUE(r.ok());
    const MappedFile& f = **r;

    // Fault every page in; volatile so the reads are not optimised away.
    const volatile uint8_t* v = f.data();
    for (size_t i = 0; i < size; i += page) (void)v[i];
    long before = rss_kb_of_mapping(f.data());
    ASSERT_GE(before, long(200 * page / 1024)) << "pages did not become resident";

    // Partial pages at both ends of the range are kept (neighbours may share them).
    f.release_pages(page / 2, 10 * page);
    long after_small = rss_kb_of_mapping(f.data());
    EXPECT_EQ(before - after_small, long(9 * page / 1024));

    f.release_pages(0, size);  // everything, including the page holding the file's end
    long after = rss_kb_of_mapping(f.data());
    EXPECT_LT(after, before / 10) << "before " << before << " kB, after " << after << " kB";

    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), reinterpret_cast<const char*>(f.data())));
    f.release_pages(size + 5, 10);   // past the end: ignored
    f.release_pages(size - 1, 1000);  // clipped to the file
}
