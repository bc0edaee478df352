/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/work_splits.h: the work splits measured on this device (`tandem tune`), kept
// beside the pipeline cache as splits-<vendor>-<device>-<uuid>.txt.
//
// A work split is how a kernel divides its work among lanes, subgroups and workgroups
// (for a matmul: rows per subgroup and subgroups per workgroup), never the order in which
// one output is summed: every split of a kernel gives the same bits, so a table measured
// on one run may serve any later run, any batch width and any model. Keys name a kernel,
// its variant and the matrix shape ("matmul_q8_0_buf 1024x4096"); values are that
// kernel's specialization constants. An entry only says which split is fastest here; a
// missing, stale or unreadable file costs speed, never results, so reading one that is
// not ours logs why and starts empty.
// Not here: measuring (bench/matmul_tune.h) and using an entry (ops/matmul.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace tdm::vk {

class WorkSplits {
public:
    // An empty table that saves to `path` ("" = never saved).
    explicit WorkSplits(std::string path = {});
    // The table in `path`: empty (no error) when the file does not exist; an error saying
    // which line is wrong when it exists but is not a table this version wrote.
    static Result<WorkSplits> load(const std::string& path);

    std::optional<std::vector<uint32_t>> find(const std::string& key) const;
    void set(const std::string& key, std::vector<uint32_t> values);
    void erase(const std::string& key);
    size_t size() const;
    std::map<std::string, std::vector<uint32_t>> entries() const;

    // Writes the table when it changed since it was loaded or saved.
    Status save();
    const std::string& path() const { return path_; }

    WorkSplits(WorkSplits&& o) noexcept;
    WorkSplits& operator=(WorkSplits&& o) noexcept;

private:
    std::string path_;
    mutable std::mutex mutex_;
    std::map<std::string, std::vector<uint32_t>> entries_;
    bool dirty_ = false;
};

// The file's first line; a table with any other first line is not read.
inline constexpr const char* kWorkSplitsHeader = "tandem-work-splits 1";
// Keys are at most this long and hold no white space; at most this many values each.
inline constexpr size_t kMaxWorkSplitKey = 128;
inline constexpr size_t kMaxWorkSplitValues = 8;

}  // namespace tdm::vk
