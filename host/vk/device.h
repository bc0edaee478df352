/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/device.h: physical-device choice, capability probing (DeviceCaps),
// and the logical device with its compute queue.
//
// Choice: TANDEM_DEVICE (or Options) selects by index or by a case-insensitive
// name substring; otherwise the best device wins: discrete GPU, integrated GPU,
// virtual GPU, then a CPU device such as Mesa lavapipe.
// Not here: memory (memory.h), pipelines (pipeline.h), recording (recorder.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vk/instance.h"

namespace tdm::vk {

struct MemoryHeapInfo {
    uint64_t size = 0;
    bool device_local = false;
};

// Read-only capabilities of one physical device (ncnn's GpuInfo).
struct DeviceCaps {
    uint32_t index = 0;  // position in vkEnumeratePhysicalDevices order
    std::string name;
    std::string type_name;  // "discrete GPU", "CPU", ...
    VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    uint32_t vendor_id = 0, device_id = 0;
    uint32_t api_version = 0;
    std::string driver_name, driver_info;
    uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};

    // arithmetic and storage features
    bool support_fp16_arithmetic = false;   // shaderFloat16
    bool support_int8_arithmetic = false;   // shaderInt8
    bool support_int64 = false, support_fp64 = false;
    bool support_storage_16bit = false;     // storageBuffer16BitAccess
    bool support_storage_8bit = false;      // storageBuffer8BitAccess
    bool support_integer_dot_product = false;
    bool integer_dot_product_accelerated = false;  // any *Accelerated 8-bit property
    bool support_cooperative_matrix = false;       // VK_KHR_cooperative_matrix

    // subgroups
    uint32_t subgroup_size = 0, subgroup_min_size = 0, subgroup_max_size = 0;
    bool support_subgroup_basic = false, support_subgroup_arithmetic = false;
    bool support_subgroup_shuffle = false, support_subgroup_ballot = false;
    bool support_subgroup_size_control = false;
    uint32_t max_compute_workgroup_subgroups = 0;  // with a required subgroup size; 0: unknown
    // A compute pipeline can be made to run exactly subgroup_size lanes per subgroup, every
    // subgroup full (Vulkan 1.3's subgroup size control with compute among its
    // requiredSubgroupSizeStages). Without it a driver may pick another size per pipeline
    // (AMD wave32/64, Intel 8/16/32): kernels whose work split counts subgroups need it
    // (vk/pipeline.h, SubgroupShape).
    bool subgroup_size_fixable = false;

    // extensions we use
    bool support_push_descriptor = false;
    bool support_external_memory_host = false;
    uint64_t min_imported_host_pointer_alignment = 0;

    // limits
    uint64_t max_storage_buffer_range = 0;
    uint64_t max_texel_buffer_elements = 0;
    uint64_t max_memory_allocation_size = 0;
    uint64_t max_buffer_size = 0;
    uint32_t max_push_constants_size = 0;
    uint32_t max_compute_shared_memory = 0;
    uint32_t max_workgroup_invocations = 0;
    uint32_t max_workgroup_count[3] = {};
    uint64_t min_storage_buffer_offset_alignment = 0;
    uint64_t min_texel_buffer_offset_alignment = 0;
    uint64_t non_coherent_atom_size = 0;
    float timestamp_period_ns = 0;
    bool support_timestamps = false;

    std::vector<MemoryHeapInfo> heaps;
    bool unified_memory = false;  // a memory type that is device-local and host-visible

    // Weight-read access path. CPU devices (lavapipe) read weights through uniform
    // texel buffers, 3-5x faster there than storage-buffer loads (docs/lavapipe.md
    // §3-4); GPUs use storage buffers.
    bool prefer_texel_weights = false;
    bool is_cpu() const { return type == VK_PHYSICAL_DEVICE_TYPE_CPU; }

    // Why this device cannot run tandem; empty when it can.
    std::string unsuitable_reason;
};

class Device {
public:
    struct Options {
        std::string select;        // index ("1") or name substring ("llvmpipe"); "" = best
        bool validate = false;     // or TANDEM_VALIDATE=1
        bool profile = false;      // per-op timestamps; or TANDEM_PROFILE=1
        uint64_t memory_limit = 0; // refuse device allocations beyond this many bytes (0 = none)
    };

    static Result<std::unique_ptr<Device>> create(const Options& options);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    const DeviceCaps& caps() const { return caps_; }
    const DeviceFuncs& fn() const { return fn_; }
    const Instance& instance() const { return *instance_; }
    VkDevice handle() const { return device_; }
    VkPhysicalDevice physical() const { return physical_; }
    VkQueue queue() const { return queue_; }
    uint32_t queue_family() const { return queue_family_; }
    std::mutex& queue_mutex() { return queue_mutex_; }
    bool profiling() const { return profile_; }

    // Memory types: device-local for weights/activations/KV; host-visible for
    // staging and readback. On unified-memory devices they are the same type.
    uint32_t device_memory_type() const { return device_type_; }
    uint32_t host_memory_type() const { return host_type_; }
    bool device_memory_is_host_visible() const { return device_type_host_visible_; }

    // Accounting of live device allocations (see memory.cpp); enforces memory_limit.
    uint64_t allocated_bytes() const { return allocated_; }
    uint64_t peak_allocated_bytes() const { return peak_allocated_; }
    uint64_t memory_limit() const { return memory_limit_; }
    void note_alloc(int64_t delta);

private:
    Device() = default;

    std::unique_ptr<Instance> instance_;
    DeviceFuncs fn_{};
    DeviceCaps caps_;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    std::mutex queue_mutex_;
    uint32_t device_type_ = 0, host_type_ = 0;
    bool device_type_host_visible_ = false;
    bool profile_ = false;
    uint64_t memory_limit_ = 0;
    uint64_t allocated_ = 0, peak_allocated_ = 0;
};

// Probes every device (for `tandem devices`); unsuitable ones carry a reason.
Result<std::vector<DeviceCaps>> list_devices(const Instance& instance);
DeviceCaps probe_device(const Instance& instance, VkPhysicalDevice pd, uint32_t index);

// "1.3.230"
std::string version_string(uint32_t api_version);

}  // namespace tdm::vk
