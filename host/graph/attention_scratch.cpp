// SPDX-License-Identifier: Apache-2.0
// host/graph/attention_scratch.cpp: the device's shared split attention partials
// (graph/attention_scratch.h).
#include "graph/attention_scratch.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace tdm {

std::shared_ptr<AttentionScratch> AttentionScratch::of(vk::Device& device) {
    // weak: the scratch lives as long as the graphs that use it, never past its device
    static std::mutex registry_mutex;
    static std::vector<std::pair<const vk::Device*, std::weak_ptr<AttentionScratch>>> registry;
    std::lock_guard<std::mutex> lock(registry_mutex);
    std::erase_if(registry, [](const auto& e) { return e.second.expired(); });
    for (const auto& [d, weak] : registry)
        if (d == &device)
            if (auto scratch = weak.lock()) return scratch;
    auto scratch = std::make_shared<AttentionScratch>(device);
    registry.emplace_back(&device, scratch);
    return scratch;
}

Result<AttentionScratch::Lease> AttentionScratch::reserve(uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t have = buffer_ ? buffer_->size() : 0;
    if (buffer_ && have >= bytes) return Lease{buffer_, generation_};
    // every pass binds the whole buffer
    const uint64_t limit = device_.caps().max_storage_buffer_range;
    if (limit && bytes > limit)
        return Error::format("split attention needs {} of partials at this context, more than the {} this device "
                             "binds at once (TANDEM_ATTENTION_LAYOUT=ks needs none)",
                             vk::format_bytes(bytes), vk::format_bytes(limit));
    const uint64_t want = std::max(bytes, have + have / 2);
    uint64_t size = std::max<uint64_t>(1, (want + kGranule - 1) / kGranule) * kGranule;
    if (limit) size = std::max(bytes, std::min(size, limit));
    std::unique_ptr<vk::Buffer> created =
        TDM_TRY(vk::Buffer::create(device_, size, vk::MemoryKind::device, "split attention partials"));
    *live_ += size;
    // the old buffer goes with the last graph in flight that holds it (graph/executor.h)
    buffer_ = std::shared_ptr<vk::Buffer>(created.release(), [live = live_, size](vk::Buffer* b) {
        *live -= size;
        delete b;
    });
    return Lease{buffer_, ++generation_};
}

uint64_t AttentionScratch::bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return buffer_ ? buffer_->size() : 0;
}

}  // namespace tdm
