/* SPDX-License-Identifier: Apache-2.0 */
// host/bench/op_bench.h: micro-benchmarks of the executor and the matmul kernels
// (`tandem bench ops`): dispatch overhead, matvec effective bandwidth for several
// weight types and batch widths, and the batch-N vs N x batch-1 ratio; optionally
// attention over activations (vision encoders) at given token counts.
// Wall-clock per run (submit to fence) with the CPU caches flushed before each
// timed run, so weights stream from memory as in real decoding. JSON out.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "vk/pipeline.h"

namespace tdm {

struct OpBenchOptions {
    int64_t rows = 4096, cols = 4096;
    std::vector<std::string> types = {"f16", "q8_0", "q4_K"};
    std::vector<int> batches = {1, 4, 8, 16};
    std::vector<int> attention_tokens;  // TDM_OP_ATTENTION_FULL at these token counts (none: skipped)
    int64_t attention_heads = 16, attention_head_dim = 64;
    int iterations = 9;
    bool flush_cache = true;
};

Result<nlohmann::json> run_op_bench(vk::Device& device, vk::PipelineManager& pipelines, const OpBenchOptions& opt);

}  // namespace tdm
