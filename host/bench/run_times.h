/* SPDX-License-Identifier: Apache-2.0 */
// host/bench/run_times.h: timing the runs of a compiled graph, for the benchmarks
// (op_bench.h) and the work-split tuner (matmul_tune.h).
#pragma once

#include "graph/executor.h"

namespace tdm {

struct RunTimes {
    double wall_s = 0;  // median, submit to fence
    double gpu_s = 0;   // mean of the dispatches' timestamps per run; 0 unless the device profiles (--profile)
};

// Two warm-up runs (JIT, first touch), then `iterations` timed ones; with `flush`, the CPU
// caches are flushed before each, so that weights stream from memory as in real decoding.
// The device timestamps these runs record are not left in the user's profile.
Result<RunTimes> time_runs(vk::Device& device, CompiledGraph& cg, int iterations, bool flush);

}  // namespace tdm
