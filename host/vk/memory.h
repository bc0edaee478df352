/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/memory.h: device buffers and arenas.
//
// A Buffer owns one VkBuffer bound to its own VkDeviceMemory. An Arena hands out
// aligned slices of large Buffers (bump allocation, released all at once) for
// weights, activations and the KV pool. Every buffer can be bound as a storage
// buffer and viewed as a texel buffer, so each kernel can pick its access path.
// Out-of-memory names the allocation and its size.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vk/device.h"

namespace tdm::vk {

// Whether what the host writes for a graph (its inputs, the KV block tables) and reads back
// (its outputs) goes through host-memory staging copies recorded in the graph's command
// buffer, so that every dispatch binds device-local memory only: on a discrete GPU, where
// device memory is not host-visible, a shader reading host memory crosses PCIe. On devices
// whose device memory the host maps (lavapipe, integrated GPUs) the host writes and reads
// device memory directly and there are no copies. TANDEM_STAGED_IO=1 forces the copies
// anywhere (tests run the GPUs' path on lavapipe with it); read at each call.
bool staged_io(const Device& device);

// Bytes of host memory still available (MemAvailable of /proc/meminfo; 0 if unknown). On CPU
// devices (lavapipe) device memory is host memory, and the driver does not enforce its heap.
uint64_t host_memory_available();

enum class MemoryKind {
    device,  // weights, activations, KV: fastest for kernels
    host,    // staging uploads and readback: host-visible, cached when possible
};

class Buffer {
public:
    // name: shown in errors ("weights of model.gguf"). size > 0.
    static Result<std::unique_ptr<Buffer>> create(Device& device, uint64_t size, MemoryKind kind,
                                                  std::string name);
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    VkBuffer handle() const { return buffer_; }
    uint64_t size() const { return size_; }
    const std::string& name() const { return name_; }
    MemoryKind kind() const { return kind_; }
    // Host pointer to the whole buffer, or nullptr if its memory is not host-visible.
    uint8_t* mapped() const { return mapped_; }
    Device& device() const { return *device_; }

private:
    Buffer() = default;
    Device* device_ = nullptr;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    uint64_t size_ = 0;
    MemoryKind kind_ = MemoryKind::device;
    uint8_t* mapped_ = nullptr;
    std::string name_;
};

// A range of a Buffer. Cheap to copy; does not own.
struct BufferSlice {
    Buffer* buffer = nullptr;
    uint64_t offset = 0;
    uint64_t size = 0;

    explicit operator bool() const { return buffer != nullptr; }
    VkBuffer handle() const { return buffer->handle(); }
    uint8_t* mapped() const { return buffer && buffer->mapped() ? buffer->mapped() + offset : nullptr; }
    BufferSlice sub(uint64_t off, uint64_t len) const { return {buffer, offset + off, len}; }
};

class Arena {
public:
    // block_size: size of each underlying Buffer. A request goes into the open block when it
    // fits (the first opens one, of its own size if larger); one that does not and is a quarter
    // block or more gets a buffer of its own and leaves the block open for the small ones, so a model whose planes alternate large and small
    // (26B-A4B experts: 242 MiB, then 15 MiB) does not waste most of a block per tensor.
    Arena(Device& device, MemoryKind kind, std::string name, uint64_t block_size = 256ull << 20);
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    // `what` names the allocation in errors. Alignment is raised to the device's
    // storage/texel offset alignment.
    Result<BufferSlice> allocate(uint64_t size, std::string_view what, uint64_t alignment = 256);
    uint64_t used_bytes() const { return used_; }
    uint64_t reserved_bytes() const;
    void reset();  // frees every block

private:
    Device& device_;
    MemoryKind kind_;
    std::string name_;
    uint64_t block_size_;
    std::vector<std::unique_ptr<Buffer>> blocks_;
    Buffer* current_ = nullptr;  // the block small requests bump into
    uint64_t top_ = 0;           // bump offset in current_
    uint64_t used_ = 0;
};

// Human-readable byte count: "1.23 GiB".
std::string format_bytes(uint64_t n);

// Offset alignment that satisfies both storage-buffer and texel-buffer bindings.
uint64_t binding_alignment(const DeviceCaps& caps);

}  // namespace tdm::vk
