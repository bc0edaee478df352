/* SPDX-License-Identifier: Apache-2.0 */
// host/bench/matmul_tune.h: measuring the fastest matmul work split per weight shape on
// this device (`tandem tune`, and at a model's first load on a GPU).
//
// For every shape, each candidate split (ops/matmul_split.h) runs a batch-1 matmul over
// enough copies of a random matrix of that type and shape that one run streams
// `bytes_per_run` from device memory (so the split is chosen for weights read from DRAM,
// not from a cache, and a submission's latency is spread over many dispatches). The
// kernels' own time comes from device timestamps when the device profiles, else the
// median wall time of a run. Every candidate's output must equal the default split's bit
// for bit, or tuning stops with an error: a split that changed a result would break the
// promise that decode and verify compute the same numbers. The winner goes into the
// device's work-split table (vk/work_splits.h), saved at the end.
// Not here: which split a matmul uses (ops/matmul_split.h).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "graph/weight.h"
#include "ops/matmul_split.h"
#include "vk/pipeline.h"

namespace tdm {

struct MatmulShape {
    DType type = DType::F32;
    int64_t rows = 0, cols = 0;  // W is [rows, cols]: rows outputs, cols inputs
    bool operator<(const MatmulShape& o) const;
    bool operator==(const MatmulShape& o) const = default;
};

struct MatmulTuneOptions {
    uint64_t bytes_per_run = 256ull << 20;  // weight bytes one timed run reads
    uint32_t max_copies = 256;              // copies of the matrix at most
    int iterations = 7;                     // timed runs per candidate (the median counts)
    // rows x subgroups [x unroll, 0: the layout's default], applied to each shape's layout; empty:
    // matmul_split_candidates(device, type)
    std::vector<MatmulSplit> candidates;
    bool retune = false;                    // measure shapes the table already has
    std::function<void(size_t done, size_t total)> progress;  // after each shape
};

// The distinct shapes of a model's weights that TDM_OP_MATMUL reads whole.
std::vector<MatmulShape> matmul_shapes(std::span<const DeviceWeight* const> weights);

// Tunes `shapes`, saves the table, and returns {"device", "shapes": [{"key", "type", "rows",
// "cols", "status": "tuned"|"cached", "split", "default_split", "us", "default_us",
// "speedup", "candidates": [{"split", "us"}]}]} (timings only for tuned shapes).
Result<nlohmann::json> tune_matmuls(vk::Device& device, vk::PipelineManager& pipelines,
                                    std::span<const MatmulShape> shapes, const MatmulTuneOptions& opt);

}  // namespace tdm
