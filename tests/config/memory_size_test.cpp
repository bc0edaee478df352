// SPDX-License-Identifier: Apache-2.0
// tests/config/memory_size_test.cpp: memory size strings -> bytes, and rejections.
// To add a case: a row in the table of accepted spellings or a rejection with its needle.
#include "config/memory_size.h"

#include "formats/expect_error.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

TEST(MemorySize, accepts_byte_counts_and_binary_and_decimal_units) {
    const struct {
        const char* text;
        uint64_t bytes;
    } cases[] = {
        {"4096", 4096},
        {"0", 0},
        {"100B", 100},
        {"512MiB", 512ull << 20},
        {"8GiB", 8ull << 30},
        {"8 GiB", 8ull << 30},
        {"  2gib ", 2ull << 30},
        {"1.5G", 3ull << 29},
        {"1.5g", 3ull << 29},
        {"64k", 64ull << 10},
        {"64Ki", 64ull << 10},
        {"2T", 2ull << 40},
        {"1TiB", 1ull << 40},
        {"1KB", 1000},
        {"3MB", 3000000},
        {"8GB", 8000000000ull},
        {"1TB", 1000000000000ull},
        {".5KiB", 512},
        {"0.1K", 102},  // rounds down to whole bytes
    };
    for (const auto& c : cases) {
        auto r = parse_memory_size(c.text);
        ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message();
        EXPECT_EQ(*r, c.bytes) << c.text;
    }
}

TEST(MemorySize, accepts_the_largest_size_and_rejects_one_byte_more) {
    EXPECT_EQ(*parse_memory_size("18446744073709551615"), UINT64_MAX);
    EXPECT_TRUE(fails_with(parse_memory_size("18446744073709551616"), "too large"));
    EXPECT_TRUE(fails_with(parse_memory_size("16777216TiB"), "too large"));  // 2^64 bytes
}

TEST(MemorySize, rejects_malformed_sizes_quoting_them) {
    EXPECT_TRUE(fails_with(parse_memory_size(""), "empty memory size"));
    EXPECT_TRUE(fails_with(parse_memory_size("   "), "empty memory size"));
    EXPECT_TRUE(fails_with(parse_memory_size("lots"), "'lots' is not a memory size"));
    EXPECT_TRUE(fails_with(parse_memory_size("GiB"), "is not a memory size"));
    EXPECT_TRUE(fails_with(parse_memory_size("-1GiB"), "'-1GiB': a memory size cannot be negative"));
    EXPECT_TRUE(fails_with(parse_memory_size("8XB"), {"'8XB': unknown unit 'XB'", "KiB"}));
    EXPECT_TRUE(fails_with(parse_memory_size("16EiB"), "unknown unit 'EiB'"));
    EXPECT_TRUE(fails_with(parse_memory_size("1.5"), "'1.5': a byte count must be a whole number"));
    EXPECT_TRUE(fails_with(parse_memory_size("1.5B"), "whole number"));
    EXPECT_TRUE(fails_with(parse_memory_size("1e9"), "unknown unit 'e9'"));
    EXPECT_TRUE(fails_with(parse_memory_size("8 GiB extra"), "unknown unit"));
}

TEST(MemorySize, format_picks_the_largest_binary_unit) {
    EXPECT_EQ(format_memory_size(0), "0 B");
    EXPECT_EQ(format_memory_size(1023), "1023 B");
    EXPECT_EQ(format_memory_size(1024), "1 KiB");
    EXPECT_EQ(format_memory_size(8ull << 30), "8 GiB");
    EXPECT_EQ(format_memory_size(3ull << 29), "1.5 GiB");
    EXPECT_EQ(format_memory_size((1ull << 30) + (1ull << 30) / 4), "1.25 GiB");
    EXPECT_EQ(format_memory_size(UINT64_MAX), "15.99 EiB");  // rounded down, never up
}

TEST(MemorySize, formatted_sizes_parse_back_to_within_the_printed_precision) {
    for (uint64_t b : {1ull << 20, 3ull << 29, 999ull}) EXPECT_EQ(*parse_memory_size(format_memory_size(b)), b);
    // Two decimals of GiB: 12345 MiB prints as 12.05 GiB, a little under the real size.
    const uint64_t b = 12345ull << 20;
    const uint64_t back = *parse_memory_size(format_memory_size(b));
    EXPECT_LE(back, b);
    EXPECT_GE(back, b - b / 100);
}

}  // namespace
}  // namespace tdm::test
