/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/pipeline_cache_file.h: the persistent Vulkan pipeline cache on disk, one zstd
// frame per device (pipelines-<vendor>-<device>-<uuid>.zst under user_cache_dir()).
// The cache only saves compile time, so a missing, foreign, oversized or unreadable
// file is never fatal: loading reports why it was not used and the caller starts empty.
// Writes go to a temporary file unique to this process and call (pid + random), renamed
// over the cache, so concurrent runs never see or clobber half a file.
// Not here: the VkPipelineCache object and when to save (pipeline.h).
#pragma once

#include "common/error.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::vk {

// Bounds on what a cache file may hold (a full cache of every tandem pipeline is a few
// MiB; these only stop a wrong file from being read or inflated whole).
constexpr uint64_t kMaxPipelineCacheFileBytes = 256ull << 20;
constexpr uint64_t kMaxPipelineCacheBytes = 512ull << 20;

// The decompressed cache blob at `path`. An empty vector (no error) when the file does
// not exist; an error saying why when it exists but cannot be used (not a regular file,
// too large, not a zstd frame of a known size, unreadable).
Result<std::vector<uint8_t>> load_pipeline_cache_file(const std::string& path);

// Compresses `blob` and replaces the file at `path` atomically. Errors name the file
// and the system's reason (e.g. "Permission denied" for a read-only cache directory).
Status save_pipeline_cache_file(const std::string& path, const std::vector<uint8_t>& blob);

// Writes `bytes` to a temporary file beside `path` and renames it over `path`: readers see
// the old file or the new one, never half. `what` names the file in errors ("pipeline cache").
// The other per-device files under user_cache_dir() (work_splits.h) are written the same way.
Status replace_file_atomically(const std::string& path, std::span<const char> bytes, std::string_view what);

}  // namespace tdm::vk
