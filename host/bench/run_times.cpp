// SPDX-License-Identifier: Apache-2.0
// host/bench/run_times.cpp
#include "bench/run_times.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "vk/recorder.h"

namespace tdm {
namespace {

// Touching a buffer larger than the last-level cache evicts the weights.
void flush_caches() {
    static std::vector<uint8_t> junk(256u << 20);
    static uint8_t v = 0;
    std::memset(junk.data(), ++v, junk.size());
}

}  // namespace

Result<RunTimes> time_runs(vk::Device& device, CompiledGraph& cg, int iterations, bool flush) {
    for (int i = 0; i < 2; ++i) TDM_TRY(cg.run());  // warm-up: JIT, first-touch
    // On a GPU a small kernel's time is of the order of a submission's latency: the
    // timestamps around each dispatch say what the kernel itself took.
    if (device.profiling()) vk::global_profiler().reset();
    std::vector<double> t;
    for (int i = 0; i < iterations; ++i) {
        if (flush) flush_caches();
        const double t0 = steady_now_ms();
        TDM_TRY(cg.run());
        t.push_back((steady_now_ms() - t0) / 1e3);
    }
    std::sort(t.begin(), t.end());
    RunTimes r;
    r.wall_s = t[t.size() / 2];
    if (device.profiling()) {
        r.gpu_s = vk::global_profiler().total_ns() / 1e9 / iterations;
        vk::global_profiler().reset();  // the bench's own runs are not the user's profile
    }
    return r;
}

}  // namespace tdm
