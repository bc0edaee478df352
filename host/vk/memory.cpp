// SPDX-License-Identifier: Apache-2.0
// host/vk/memory.cpp
#include "vk/memory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "common/log.h"

namespace tdm::vk {

// On CPU devices an allocation beyond this would end in the kernel's OOM killer instead of
// an error (docs/lavapipe.md §2).
bool staged_io(const Device& device) {
    const char* e = std::getenv("TANDEM_STAGED_IO");
    return !device.device_memory_is_host_visible() || (e && std::string_view(e) == "1");
}

uint64_t host_memory_available() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t value = 0;
    std::string unit;
    while (in >> key >> value >> unit)
        if (key == "MemAvailable:") return value * 1024;
    return 0;
}

std::string format_bytes(uint64_t n) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(n);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, units[u]);
}

uint64_t binding_alignment(const DeviceCaps& caps) {
    return std::max<uint64_t>({16, caps.min_storage_buffer_offset_alignment,
                               caps.min_texel_buffer_offset_alignment});
}

Result<std::unique_ptr<Buffer>> Buffer::create(Device& device, uint64_t size, MemoryKind kind,
                                               std::string name) {
    TDM_ASSERT(size > 0);
    const DeviceCaps& caps = device.caps();
    auto oom = [&](const char* why) {
        return Error::format("out of device memory: cannot allocate {} for {} ({})", format_bytes(size),
                             name, why);
    };
    if (device.memory_limit() && device.allocated_bytes() + size > device.memory_limit())
        return oom(fmt::format("the configured device memory limit is {}, {} already in use",
                               format_bytes(device.memory_limit()), format_bytes(device.allocated_bytes()))
                       .c_str());
    if (caps.max_memory_allocation_size && size > caps.max_memory_allocation_size)
        return oom(fmt::format("larger than the device's maximum allocation of {}",
                               format_bytes(caps.max_memory_allocation_size))
                       .c_str());
    if (caps.is_cpu()) {
        const uint64_t avail = host_memory_available();
        if (avail && size > avail)
            return oom(fmt::format("only {} of host memory is available", format_bytes(avail)).c_str());
    }

    std::unique_ptr<Buffer> b(new Buffer());
    b->device_ = &device;
    b->size_ = size;
    b->kind_ = kind;
    b->name_ = std::move(name);
    const DeviceFuncs& f = device.fn();

    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    TDM_VK_CHECK(f.vkCreateBuffer(device.handle(), &bci, nullptr, &b->buffer_),
                 fmt::format("creating buffer for {} ({})", b->name_, format_bytes(size)));

    VkMemoryRequirements req{};
    f.vkGetBufferMemoryRequirements(device.handle(), b->buffer_, &req);
    const uint32_t type = kind == MemoryKind::device ? device.device_memory_type() : device.host_memory_type();
    if (!(req.memoryTypeBits & (1u << type)))
        return Error::format("buffer for {} cannot live in memory type {}", b->name_, type);

    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    VkResult r = f.vkAllocateMemory(device.handle(), &mai, nullptr, &b->memory_);
    if (r != VK_SUCCESS) return oom(result_name(r));
    device.note_alloc(int64_t(size));
    ::tdm::log(::tdm::LogLevel::trace, "vk", "buffer {} ({}, {} memory): {} allocated in all", b->name_, format_bytes(size),
               kind == MemoryKind::device ? "device" : "host", format_bytes(device.allocated_bytes()));
    TDM_VK_CHECK(f.vkBindBufferMemory(device.handle(), b->buffer_, b->memory_, 0), "binding buffer memory");

    const bool host_visible = kind == MemoryKind::host || device.device_memory_is_host_visible();
    if (host_visible) {
        void* p = nullptr;
        TDM_VK_CHECK(f.vkMapMemory(device.handle(), b->memory_, 0, VK_WHOLE_SIZE, 0, &p),
                     fmt::format("mapping {}", b->name_));
        b->mapped_ = static_cast<uint8_t*>(p);
    }
    return b;
}

Buffer::~Buffer() {
    if (!device_) return;
    const DeviceFuncs& f = device_->fn();
    if (mapped_) f.vkUnmapMemory(device_->handle(), memory_);
    if (buffer_) f.vkDestroyBuffer(device_->handle(), buffer_, nullptr);
    if (memory_) {
        f.vkFreeMemory(device_->handle(), memory_, nullptr);
        device_->note_alloc(-int64_t(size_));
    }
}

Arena::Arena(Device& device, MemoryKind kind, std::string name, uint64_t block_size)
    : device_(device), kind_(kind), name_(std::move(name)), block_size_(block_size) {}

Result<BufferSlice> Arena::allocate(uint64_t size, std::string_view what, uint64_t alignment) {
    if (size == 0) size = 4;  // zero-size tensors still need a valid binding
    alignment = std::max(alignment, binding_alignment(device_.caps()));
    if (current_) {
        const uint64_t off = (top_ + alignment - 1) / alignment * alignment;
        if (off + size <= current_->size()) {
            top_ = off + size;
            used_ += size;
            return BufferSlice{current_, off, size};
        }
    }
    if (current_ && size >= block_size_ / 4) {
        auto buf = TDM_TRY(Buffer::create(device_, size, kind_, fmt::format("{} ({})", what, name_)));
        blocks_.push_back(std::move(buf));
        used_ += size;
        return BufferSlice{blocks_.back().get(), 0, size};
    }
    auto buf = TDM_TRY(Buffer::create(device_, std::max(size, block_size_), kind_, fmt::format("{} ({})", what, name_)));
    blocks_.push_back(std::move(buf));
    current_ = blocks_.back().get();
    top_ = size;
    used_ += size;
    return BufferSlice{current_, 0, size};
}

uint64_t Arena::reserved_bytes() const {
    uint64_t n = 0;
    for (const auto& b : blocks_) n += b->size();
    return n;
}

void Arena::reset() {
    blocks_.clear();
    current_ = nullptr;
    top_ = 0;
    used_ = 0;
}

}  // namespace tdm::vk
