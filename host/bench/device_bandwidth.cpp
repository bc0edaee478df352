// SPDX-License-Identifier: Apache-2.0
// host/bench/device_bandwidth.cpp
#include "bench/device_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "vk/memory.h"
#include "vk/recorder.h"

namespace tdm {
namespace {

Result<double> median_seconds(vk::CommandBuffer& cb, int runs) {
    TDM_TRY(cb.submit_and_wait());  // warm-up: first touch of the pages
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        TDM_TRY(cb.submit_and_wait());
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

}  // namespace

Result<DeviceCopyBandwidth> measure_device_copy_bandwidth(vk::Device& device, uint64_t bytes, int copies) {
    const vk::DeviceCaps& caps = device.caps();
    if (caps.max_memory_allocation_size) bytes = std::min(bytes, caps.max_memory_allocation_size);
    bytes = std::max<uint64_t>(bytes / 256 * 256, 256);
    copies = std::max(copies, 2);
    auto src = TDM_TRY(vk::Buffer::create(device, bytes, vk::MemoryKind::device, "bandwidth probe source"));
    auto dst = TDM_TRY(vk::Buffer::create(device, bytes, vk::MemoryKind::device, "bandwidth probe destination"));
    const vk::BufferSlice s{src.get(), 0, bytes}, d{dst.get(), 0, bytes};

    auto record = [&](int n) -> Result<std::unique_ptr<vk::CommandBuffer>> {
        auto cb = TDM_TRY(vk::CommandBuffer::create(device));
        TDM_TRY(cb->begin());
        cb->record_fill(s, 0x3f800000u);  // 1.0f: the source holds data, not untouched pages
        cb->record_barrier();
        for (int i = 0; i < n; ++i) {
            if (i) cb->record_barrier();  // each copy waits for the last: no overlap to flatter the rate
            cb->record_copy(s, d, bytes);
        }
        TDM_TRY(cb->end());
        return cb;
    };
    auto one = TDM_TRY(record(1));
    auto many = TDM_TRY(record(copies));
    const int runs = 5;
    const double t1 = TDM_TRY(median_seconds(*one, runs));
    const double tn = TDM_TRY(median_seconds(*many, runs));
    DeviceCopyBandwidth r;
    r.buffer_bytes = bytes;
    const double per_copy = std::max(tn - t1, 1e-9) / double(copies - 1);
    r.copy_ms = per_copy * 1e3;
    r.gb_per_s = 2.0 * double(bytes) / per_copy / 1e9;
    return r;
}

}  // namespace tdm
