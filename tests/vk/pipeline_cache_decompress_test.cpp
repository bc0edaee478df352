// SPDX-License-Identifier: Apache-2.0
// tests/vk/pipeline_cache_decompress_test.cpp: vk::decompress_pipeline_cache on good,
// truncated, padded and lying zstd frames.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <zstd.h>

#include <string>
#include <vector>

#include "vk/pipeline.h"

using namespace tdm;

namespace {

std::string compress(const std::vector<uint8_t>& raw) {
    std::string z(ZSTD_compressBound(raw.size()), '\0');
    const size_t n = ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 3);
    EXPECT_FALSE(ZSTD_isError(n));
    z.resize(n);
    return z;
}

std::vector<uint8_t> pattern(size_t n) {
    std::vector<uint8_t> v(n);
    uint32_t x = 12345;
    for (uint8_t& b : v) {
        x = x * 1103515245u + 12345u;
        b = uint8_t(x >> 24);
    }
    return v;
}

// Runs of one byte value: compresses far beyond the ratio up to which the reader trusts a
// frame's claimed size, so it goes through the reader's growing-output path.
std::vector<uint8_t> runs(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i / 4096);
    return v;
}

}  // namespace

TEST(PipelineCacheDecompress, round_trips_small_and_multi_chunk_contents) {
    for (size_t n : {size_t(1), size_t(1000), size_t(3) << 20}) {
        for (const std::vector<uint8_t>& raw : {pattern(n), runs(n)}) {
            const std::string z = compress(raw);
            EXPECT_EQ(vk::decompress_pipeline_cache(z), raw) << n << " bytes, " << z.size() << " compressed";
        }
    }
    EXPECT_GT(runs(3 << 20).size(), 64 * compress(runs(3 << 20)).size()) << "runs() no longer tests the growing path";
}

TEST(PipelineCacheDecompress, truncated_padded_or_lying_frames_give_nothing) {
    for (const std::string& z : {compress(pattern(300000)), compress(runs(300000))}) {
        EXPECT_TRUE(vk::decompress_pipeline_cache(z.substr(0, z.size() / 2)).empty());
        EXPECT_TRUE(vk::decompress_pipeline_cache(z.substr(0, z.size() - 1)).empty());
        EXPECT_TRUE(vk::decompress_pipeline_cache(z + "x").empty());
        EXPECT_TRUE(vk::decompress_pipeline_cache(z + z).empty());
        EXPECT_TRUE(vk::decompress_pipeline_cache(z + compress({})).empty());  // an empty second frame
    }
    EXPECT_TRUE(vk::decompress_pipeline_cache("").empty());
    // Found by the pipeline_cache fuzzer: a 9-byte frame header claiming a 512 MiB content
    // used to allocate (and zero) all of it before decompression failed.
    const auto peak_kib = [] {
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        return u.ru_maxrss;
    };
    const long before = peak_kib();
    const std::string liar("\x28\xb5\x2f\xfd\xb0\x23\x00\xff\x1f", 9);
    EXPECT_TRUE(vk::decompress_pipeline_cache(liar).empty());
    EXPECT_LT(peak_kib() - before, 64 * 1024) << "the process's peak memory grew by more than 64 MiB";
}
