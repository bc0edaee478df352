// SPDX-License-Identifier: Apache-2.0
// host/vk/pipeline_cache_file.cpp: reading and writing the zstd pipeline-cache file.
#include "vk/pipeline_cache_file.h"

#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/file_read.h"

namespace tdm::vk {

Result<std::vector<uint8_t>> load_pipeline_cache_file(const std::string& path) {
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::vector<uint8_t>{};
    const std::string z = TDM_TRY(read_regular_file(path, kMaxPipelineCacheFileBytes, "pipeline cache"));
    const unsigned long long n = ZSTD_getFrameContentSize(z.data(), z.size());
    if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN)
        return Error::format("pipeline cache {} is not a zstd frame of known size", path);
    if (n > kMaxPipelineCacheBytes)
        return Error::format("pipeline cache {} would inflate to {}, more than the {} limit", path, byte_size_text(n),
                             byte_size_text(kMaxPipelineCacheBytes));
    std::vector<uint8_t> out(n);
    const size_t got = ZSTD_decompress(out.data(), out.size(), z.data(), z.size());
    if (ZSTD_isError(got) || got != n)
        return Error::format("pipeline cache {} is corrupt: {}", path,
                             ZSTD_isError(got) ? ZSTD_getErrorName(got) : "shorter than its header says");
    return out;
}

namespace {

// pid alone is not enough: two PipelineManagers of one process may save at once.
std::string unique_temp_name(const std::string& path) {
    std::random_device rd;
    return fmt::format("{}.tmp.{}.{:08x}{:08x}", path, ::getpid(), rd(), rd());
}

}  // namespace

Status replace_file_atomically(const std::string& path, std::span<const char> bytes, std::string_view what) {
    const std::string tmp = unique_temp_name(path);
    std::FILE* f = std::fopen(tmp.c_str(), "wbx");  // x: never write through someone else's file or link
    if (!f) return Error::format("cannot write {} {} (creating {}): {}", what, path, tmp, std::strerror(errno));
    const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    const int write_errno = errno;
    const bool closed = std::fclose(f) == 0;
    if (!wrote || !closed) {
        const int e = !wrote ? write_errno : errno;
        std::remove(tmp.c_str());
        return Error::format("cannot write {} {} (writing {}): {}", what, path, tmp, std::strerror(e));
    }
    // rename is atomic: a concurrent reader sees the old file or the new one, never half.
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        std::remove(tmp.c_str());
        return Error::format("cannot write {} {} (renaming {} over it): {}", what, path, tmp, std::strerror(e));
    }
    return {};
}

Status save_pipeline_cache_file(const std::string& path, const std::vector<uint8_t>& blob) {
    std::vector<char> z(ZSTD_compressBound(blob.size()));
    const size_t zn = ZSTD_compress(z.data(), z.size(), blob.data(), blob.size(), 3);
    if (ZSTD_isError(zn)) return Error::format("compressing the pipeline cache failed: {}", ZSTD_getErrorName(zn));
    return replace_file_atomically(path, std::span<const char>(z.data(), zn), "pipeline cache");
}

}  // namespace tdm::vk
