// SPDX-License-Identifier: Apache-2.0
// host/cli/cpu_device_threads.cpp: LP_NUM_THREADS for lavapipe when tandem's executable
// starts the Vulkan device (see the header for why one thread more than the CPUs).
#include "cli/cpu_device_threads.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/log.h"

namespace tdm::cli {

std::optional<unsigned> lavapipe_threads_to_set(const char* lp_num_threads, unsigned cpus) {
    if (lp_num_threads || cpus == 0) return std::nullopt;
    return cpus + 1;
}

unsigned usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return unsigned(n);
    }
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? unsigned(online) : 0;
}

void set_lavapipe_threads() {
    const char* current = std::getenv("LP_NUM_THREADS");
    const unsigned cpus = usable_cpus();
    const std::optional<unsigned> n = lavapipe_threads_to_set(current, cpus);
    if (!n) {
        if (current) TDM_LOG_DEBUG("device", "lavapipe worker threads: LP_NUM_THREADS={} as set", current);
        else TDM_LOG_DEBUG("device", "lavapipe worker threads: the driver's default (the CPU count is unknown)");
        return;
    }
    // overwrite = 0: a value set since the getenv above still wins
    setenv("LP_NUM_THREADS", std::to_string(*n).c_str(), 0);
    TDM_LOG_DEBUG("device", "lavapipe worker threads: LP_NUM_THREADS={} ({} CPUs + 1)", *n, cpus);
}

}  // namespace tdm::cli
