/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/profile_json.h: `--profile-json FILE`: every profiled run of a command buffer (a
// forward pass, a draft step) as one JSON line, node by node, so that a user sees which op of
// which layer took the time and how close it came to the bandwidth. Not here: the per-op
// table of --profile (vk/recorder.h, Profiler), which sums over the whole process.
//
// One line per run:
//   {"run": 7, "gpu_us": 5870.2, "nodes": [{"node": 12, "name": "blk.0.attn_q", "op": "matmul",
//    "shape": "'blk.0.attn_q' f32 [2048, 1]", "weight_type": "q8_0", "kernels": ["matmul_q8_0"],
//    "workgroups": [[16, 1, 1]], "bytes_read": 2236416, "us": 7.9, "gb_per_s": 283.1}, ...]}
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "common/error.h"
#include "vk/recorder.h"

namespace tdm::cli {

class ProfileJsonWriter {
public:
    // Creates (truncates) the file; the error names it.
    static Result<std::unique_ptr<ProfileJsonWriter>> open(const std::string& path);
    ~ProfileJsonWriter();
    ProfileJsonWriter(const ProfileJsonWriter&) = delete;
    ProfileJsonWriter& operator=(const ProfileJsonWriter&) = delete;

    // One run's dispatches, in recording order; consecutive dispatches of one node are one
    // entry. Thread-safe (the server waits for its passes on its engine thread).
    void write_run(std::span<const vk::ProfiledDispatch> run);

private:
    explicit ProfileJsonWriter(std::FILE* f) : file_(f) {}
    std::mutex mutex_;
    std::FILE* file_;
    uint64_t runs_ = 0;
};

}  // namespace tdm::cli
