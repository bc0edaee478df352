/* SPDX-License-Identifier: Apache-2.0 */
// host/bench/device_bandwidth.h: the device's own memory bandwidth, measured by copying
// one device-local buffer into another (vkCmdCopyBuffer). This is the ceiling a
// memory-bound kernel is compared with: a decode step that streams its weights once can
// at best read them at this rate. Not here: the host's read bandwidth (cmd_bench.cpp),
// which is the ceiling on CPU devices, where device memory is host memory.
#pragma once

#include <cstdint>

#include "vk/device.h"

namespace tdm {

struct DeviceCopyBandwidth {
    uint64_t buffer_bytes = 0;  // bytes of each copy
    double copy_ms = 0;         // one copy, marginal (the cost of one more copy in a batch)
    // Bytes moved per second: each copy reads and writes buffer_bytes (STREAM's
    // convention for copy), in GB/s (1e9).
    double gb_per_s = 0;
};

// Copies of `bytes` (clamped to the device's allocation limits) recorded in two command
// buffers, one with a single copy and one with `copies`, the same run several times; the
// difference of the medians over copies - 1 is one copy's time, free of submission and
// fence latency. Allocates two device buffers of `bytes` for the duration of the call.
Result<DeviceCopyBandwidth> measure_device_copy_bandwidth(vk::Device& device, uint64_t bytes = 256ull << 20,
                                                          int copies = 9);

}  // namespace tdm
