/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/cpu_device_threads.h: how many worker threads lavapipe (Mesa's software Vulkan
// device) runs dispatches on when tandem's own executable starts it. Lavapipe reads
// LP_NUM_THREADS when the Vulkan device is enumerated and defaults to one thread per CPU;
// tandem asks for one more, unless the user set LP_NUM_THREADS. Why: a dispatch ends when
// its last workgroup does, and with exactly one thread per CPU the CPU whose thread finished
// first idles until then; a thread more gives the scheduler something to put there. On 2
// cores this made decoding of the 0.6B Q8_0 shape 6-14% faster and cut the speculative TPOT
// at A = 1, k = 3 by 8-20%, with prefill unchanged (docs/perf-notes/lavapipe-threads.md).
// Other Vulkan drivers ignore the variable.
// The library (libtandem) never sets it: an embedding program owns its environment.
#pragma once

#include <optional>

namespace tdm::cli {

// The LP_NUM_THREADS value to set, given the variable's current value (nullptr: unset) and
// the CPUs this process may run on; nothing when the user chose a value (even an empty one)
// or the CPU count is unknown (0).
std::optional<unsigned> lavapipe_threads_to_set(const char* lp_num_threads, unsigned cpus);

// The CPUs this process may run on (its affinity mask, which taskset and cgroup cpusets
// narrow), else the online CPUs; 0 when neither is known.
unsigned usable_cpus();

// Sets LP_NUM_THREADS for lavapipe as above, before any Vulkan call; logs what it chose.
void set_lavapipe_threads();

}  // namespace tdm::cli
