// SPDX-License-Identifier: Apache-2.0
// host/vk/device.cpp
#include "vk/device.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace tdm::vk {
namespace {

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
        default: return "other";
    }
}

int type_score(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
        default: return 0;
    }
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    for (const auto& e : exts)
        if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

std::string version_string(uint32_t v) {
    return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                       VK_API_VERSION_PATCH(v));
}

DeviceCaps probe_device(const Instance& instance, VkPhysicalDevice pd, uint32_t index) {
    const InstanceFuncs& f = instance.fn();
    DeviceCaps c;
    c.index = index;

    uint32_t n_ext = 0;
    f.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, nullptr);
    std::vector<VkExtensionProperties> exts(n_ext);
    f.vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, exts.data());
    c.support_push_descriptor = has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    c.support_external_memory_host = has_extension(exts, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    c.support_cooperative_matrix = has_extension(exts, "VK_KHR_cooperative_matrix");
    const bool has_idp_ext = has_extension(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);

    VkPhysicalDeviceProperties base{};
    f.vkGetPhysicalDeviceProperties(pd, &base);
    const bool v13 = base.apiVersion >= VK_API_VERSION_1_3 && instance.api_version() >= VK_API_VERSION_1_3;
    const bool v12 = base.apiVersion >= VK_API_VERSION_1_2 && instance.api_version() >= VK_API_VERSION_1_2;

    // properties chain
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceSubgroupSizeControlProperties sgc{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceMaintenance4Properties m4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
    VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceShaderIntegerDotProductProperties idp{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT emh{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    void** next = &p2.pNext;
    auto chain = [&next](auto* s) {
        *next = s;
        next = &s->pNext;
    };
    chain(&sg);
    chain(&m3);
    if (v13) chain(&sgc), chain(&m4);
    if (v12) chain(&drv);
    if (v13 || has_idp_ext) chain(&idp);
    if (c.support_external_memory_host) chain(&emh);
    f.vkGetPhysicalDeviceProperties2(pd, &p2);
    const VkPhysicalDeviceProperties& p = p2.properties;

    c.name = p.deviceName;
    c.type = p.deviceType;
    c.type_name = type_name(p.deviceType);
    c.vendor_id = p.vendorID;
    c.device_id = p.deviceID;
    c.api_version = p.apiVersion;
    std::memcpy(c.pipeline_cache_uuid, p.pipelineCacheUUID, VK_UUID_SIZE);
    if (v12) {
        c.driver_name = drv.driverName;
        c.driver_info = drv.driverInfo;
    }
    c.subgroup_size = sg.subgroupSize;
    c.subgroup_min_size = v13 ? sgc.minSubgroupSize : sg.subgroupSize;
    c.subgroup_max_size = v13 ? sgc.maxSubgroupSize : sg.subgroupSize;
    const bool sg_compute = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    c.support_subgroup_basic = sg_compute && (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
    c.support_subgroup_arithmetic = sg_compute && (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    c.support_subgroup_shuffle = sg_compute && (sg.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    c.support_subgroup_ballot = sg_compute && (sg.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);
    if (v13 || has_idp_ext)
        c.integer_dot_product_accelerated =
            idp.integerDotProduct8BitSignedAccelerated || idp.integerDotProduct4x8BitPackedSignedAccelerated ||
            idp.integerDotProduct8BitMixedSignednessAccelerated;
    c.min_imported_host_pointer_alignment = c.support_external_memory_host ? emh.minImportedHostPointerAlignment : 0;

    c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
    c.max_texel_buffer_elements = p.limits.maxTexelBufferElements;
    c.max_memory_allocation_size = m3.maxMemoryAllocationSize;
    c.max_buffer_size = v13 ? m4.maxBufferSize : m3.maxMemoryAllocationSize;
    c.max_push_constants_size = p.limits.maxPushConstantsSize;
    c.max_compute_shared_memory = p.limits.maxComputeSharedMemorySize;
    c.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) c.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
    c.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
    c.min_texel_buffer_offset_alignment = p.limits.minTexelBufferOffsetAlignment;
    c.non_coherent_atom_size = p.limits.nonCoherentAtomSize;
    c.timestamp_period_ns = p.limits.timestampPeriod;

    // features chain
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    if (v12) {
        f2.pNext = &f11;
        f11.pNext = &f12;
        if (v13) f12.pNext = &f13;
    }
    f.vkGetPhysicalDeviceFeatures2(pd, &f2);
    c.support_int64 = f2.features.shaderInt64;
    c.support_fp64 = f2.features.shaderFloat64;
    if (v12) {
        c.support_fp16_arithmetic = f12.shaderFloat16;
        c.support_int8_arithmetic = f12.shaderInt8;
        c.support_storage_16bit = f11.storageBuffer16BitAccess;
        c.support_storage_8bit = f12.storageBuffer8BitAccess;
    }
    if (v13) {
        c.support_integer_dot_product = f13.shaderIntegerDotProduct;
        c.support_subgroup_size_control = f13.subgroupSizeControl && f13.computeFullSubgroups;
        c.max_compute_workgroup_subgroups = sgc.maxComputeWorkgroupSubgroups;
        const uint32_t n = c.subgroup_size;
        c.subgroup_size_fixable = c.support_subgroup_size_control &&
                                  (sgc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 && n > 0 &&
                                  (n & (n - 1)) == 0 && n >= c.subgroup_min_size && n <= c.subgroup_max_size;
    }

    // queue with compute and timestamps
    uint32_t nq = 0;
    f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf.data());
    bool has_compute = false;
    for (const auto& q : qf) {
        if (q.queueFlags & VK_QUEUE_COMPUTE_BIT) {
            has_compute = true;
            c.support_timestamps = q.timestampValidBits > 0;
            break;
        }
    }

    VkPhysicalDeviceMemoryProperties mp{};
    f.vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
        c.heaps.push_back({mp.memoryHeaps[i].size,
                           (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
        const auto fl = mp.memoryTypes[i].propertyFlags;
        if ((fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
            c.unified_memory = c.unified_memory || c.is_cpu() ||
                               p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
    }
    c.prefer_texel_weights = c.is_cpu();
    if (const char* env = std::getenv("TANDEM_WEIGHT_PATH")) {  // "texel" | "storage", for experiments
        if (std::strcmp(env, "texel") == 0) c.prefer_texel_weights = true;
        if (std::strcmp(env, "storage") == 0) c.prefer_texel_weights = false;
    }

    if (p.apiVersion < VK_API_VERSION_1_1)
        c.unsuitable_reason = "supports only Vulkan " + version_string(p.apiVersion) + " (1.1 needed)";
    else if (!has_compute)
        c.unsuitable_reason = "has no compute queue";
    else if (!c.support_push_descriptor)
        c.unsuitable_reason = "lacks VK_KHR_push_descriptor";
    else if (!c.support_subgroup_arithmetic)
        c.unsuitable_reason = "lacks subgroup arithmetic in compute shaders";
    return c;
}

Result<std::vector<DeviceCaps>> list_devices(const Instance& instance) {
    auto pds = TDM_TRY(instance.physical_devices());
    std::vector<DeviceCaps> out;
    for (uint32_t i = 0; i < pds.size(); ++i) out.push_back(probe_device(instance, pds[i], i));
    return out;
}

void Device::note_alloc(int64_t delta) {
    allocated_ = uint64_t(int64_t(allocated_) + delta);
    peak_allocated_ = std::max(peak_allocated_, allocated_);
}

Result<std::unique_ptr<Device>> Device::create(const Options& options) {
    std::unique_ptr<Device> dev(new Device());
    Instance::Options io;
    io.validate = options.validate;
    dev->instance_ = TDM_TRY(Instance::create(io));
    const Instance& inst = *dev->instance_;
    auto pds = TDM_TRY(inst.physical_devices());
    if (pds.empty())
        return Error("no Vulkan device found. Install a Vulkan driver: 'apt install "
                     "mesa-vulkan-drivers' provides lavapipe, a CPU device that works without a "
                     "GPU (check with 'vulkaninfo --summary')");

    std::vector<DeviceCaps> all;
    for (uint32_t i = 0; i < pds.size(); ++i) all.push_back(probe_device(inst, pds[i], i));

    std::string select = options.select;
    if (select.empty())
        if (const char* env = std::getenv("TANDEM_DEVICE")) select = env;

    auto describe_all = [&] {
        std::string s;
        for (const auto& c : all)
            s += fmt::format("\n  [{}] {} ({}){}", c.index, c.name, c.type_name,
                             c.unsuitable_reason.empty() ? "" : ": unsuitable, " + c.unsuitable_reason);
        return s;
    };

    int chosen = -1;
    if (!select.empty()) {
        char* end = nullptr;
        long idx = std::strtol(select.c_str(), &end, 10);
        if (end && *end == '\0') {
            if (idx < 0 || idx >= long(all.size()))
                return Error::format("device index {} out of range; devices:{}", select, describe_all());
            chosen = int(idx);
        } else {
            for (const auto& c : all)
                if (lower(c.name).find(lower(select)) != std::string::npos) {
                    chosen = int(c.index);
                    break;
                }
            if (chosen < 0)
                return Error::format("no Vulkan device matches '{}'; devices:{}", select, describe_all());
        }
        if (!all[chosen].unsuitable_reason.empty())
            return Error::format("device [{}] {} {}", chosen, all[chosen].name, all[chosen].unsuitable_reason);
    } else {
        int best_score = -1;
        for (const auto& c : all) {
            if (!c.unsuitable_reason.empty()) continue;
            if (type_score(c.type) > best_score) {
                best_score = type_score(c.type);
                chosen = int(c.index);
            }
        }
        if (chosen < 0)
            return Error::format("no suitable Vulkan device; found:{}", describe_all());
    }

    dev->caps_ = all[chosen];
    dev->physical_ = pds[chosen];
    dev->profile_ = options.profile;
    if (const char* p = std::getenv("TANDEM_PROFILE"); p && *p && std::strcmp(p, "0") != 0)
        dev->profile_ = true;
    dev->profile_ = dev->profile_ && dev->caps_.support_timestamps;
    dev->memory_limit_ = options.memory_limit;
    const InstanceFuncs& f = inst.fn();

    // queue family
    uint32_t nq = 0;
    f.vkGetPhysicalDeviceQueueFamilyProperties(dev->physical_, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    f.vkGetPhysicalDeviceQueueFamilyProperties(dev->physical_, &nq, qf.data());
    for (uint32_t i = 0; i < nq; ++i) {
        // prefer a compute-only family (async compute on GPUs), else any compute family
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
            dev->queue_family_ = i;
            goto found;
        }
    }
    for (uint32_t i = 0; i < nq; ++i)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            dev->queue_family_ = i;
            break;
        }
found:
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = dev->queue_family_;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;

    std::vector<const char*> exts = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    const DeviceCaps& c = dev->caps_;
    const bool v12 = c.api_version >= VK_API_VERSION_1_2 && inst.api_version() >= VK_API_VERSION_1_2;
    const bool v13 = c.api_version >= VK_API_VERSION_1_3 && inst.api_version() >= VK_API_VERSION_1_3;

    // Enable the optional features shaders may use when present.
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    f2.features.shaderInt64 = c.support_int64;
    if (v12) {
        f2.pNext = &f11;
        f11.pNext = &f12;
        f11.storageBuffer16BitAccess = c.support_storage_16bit;
        f12.shaderFloat16 = c.support_fp16_arithmetic;
        f12.shaderInt8 = c.support_int8_arithmetic;
        f12.storageBuffer8BitAccess = c.support_storage_8bit;
        if (v13) {
            f12.pNext = &f13;
            f13.subgroupSizeControl = c.support_subgroup_size_control;
            f13.computeFullSubgroups = c.support_subgroup_size_control;
            f13.shaderIntegerDotProduct = c.support_integer_dot_product;
            f13.maintenance4 = VK_TRUE;
        }
    }

    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f2;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = uint32_t(exts.size());
    dci.ppEnabledExtensionNames = exts.data();
    VkResult r = f.vkCreateDevice(dev->physical_, &dci, nullptr, &dev->device_);
    if (r != VK_SUCCESS)
        return Error::format("creating the Vulkan device on {} failed: {}", c.name, result_name(r));
    TDM_TRY(load_device_funcs(f, dev->device_, &dev->fn_));
    dev->fn_.vkGetDeviceQueue(dev->device_, dev->queue_family_, 0, &dev->queue_);

    // memory types
    VkPhysicalDeviceMemoryProperties mp{};
    f.vkGetPhysicalDeviceMemoryProperties(dev->physical_, &mp);
    int dev_type = -1, host_type = -1, host_cached = -1;
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
        const auto fl = mp.memoryTypes[i].propertyFlags;
        if ((fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && dev_type < 0) dev_type = int(i);
        const bool hv = (fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        if (hv && host_type < 0) host_type = int(i);
        if (hv && (fl & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) && host_cached < 0) host_cached = int(i);
    }
    if (host_cached >= 0) host_type = host_cached;  // readback is much faster from cached memory
    if (host_type < 0) return Error::format("device {} has no host-visible coherent memory", c.name);
    if (dev_type < 0) dev_type = host_type;
    // Unified memory: if the first device-local type is not host-visible but a
    // device-local host-visible one exists (integrated GPUs, lavapipe), prefer it so
    // uploads are plain memcpy.
    for (uint32_t i = 0; i < mp.memoryTypeCount && c.unified_memory; ++i) {
        const auto fl = mp.memoryTypes[i].propertyFlags;
        if ((fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
            (fl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
            dev_type = int(i);
            break;
        }
    }
    dev->device_type_ = uint32_t(dev_type);
    dev->host_type_ = uint32_t(host_type);
    const auto dfl = mp.memoryTypes[dev_type].propertyFlags;
    dev->device_type_host_visible_ = (dfl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
                                     (dfl & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);

    TDM_LOG_INFO("vulkan", "device [{}] {} ({}, Vulkan {}, subgroup {}, weights via {})", c.index, c.name,
                 c.type_name, version_string(c.api_version), c.subgroup_size,
                 c.prefer_texel_weights ? "texel buffers" : "storage buffers");
    return dev;
}

Device::~Device() {
    if (device_) {
        fn_.vkDeviceWaitIdle(device_);
        fn_.vkDestroyDevice(device_, nullptr);
    }
}

}  // namespace tdm::vk
