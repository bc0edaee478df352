// SPDX-License-Identifier: Apache-2.0
// host/vk/vk_api.cpp: dlopen of the Vulkan loader and function-table filling.
#include "vk/vk_api.h"

#include <dlfcn.h>

#include <mutex>

namespace tdm::vk {

Result<const GlobalFuncs*> load_vulkan_loader() {
    static std::mutex mutex;
    static GlobalFuncs funcs;
    static bool loaded = false;
    static std::string failure;
    std::lock_guard<std::mutex> lock(mutex);
    if (loaded) return &funcs;
    if (!failure.empty()) return Error(failure);

    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        failure = fmt::format(
            "cannot load the Vulkan loader (libvulkan.so.1): {}. Install it with "
            "'apt install libvulkan1 mesa-vulkan-drivers' (mesa-vulkan-drivers provides a CPU "
            "device, lavapipe, when there is no GPU)",
            dlerror());
        return Error(failure);
    }
    funcs.vkGetInstanceProcAddr =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!funcs.vkGetInstanceProcAddr) {
        failure = "libvulkan.so.1 has no vkGetInstanceProcAddr: broken Vulkan loader";
        return Error(failure);
    }
#define TDM_VK_LOAD_GLOBAL(name) \
    funcs.name = reinterpret_cast<PFN_##name>(funcs.vkGetInstanceProcAddr(nullptr, #name));
    TDM_VK_GLOBAL_FUNCS(TDM_VK_LOAD_GLOBAL)
#undef TDM_VK_LOAD_GLOBAL
    if (!funcs.vkCreateInstance) {
        failure = "the Vulkan loader does not provide vkCreateInstance";
        return Error(failure);
    }
    loaded = true;
    return &funcs;
}

Result<void> load_instance_funcs(const GlobalFuncs& g, VkInstance instance, InstanceFuncs* out) {
#define TDM_VK_LOAD(name)                                                                  \
    out->name = reinterpret_cast<PFN_##name>(g.vkGetInstanceProcAddr(instance, #name));    \
    if (!out->name) return Error::format("Vulkan loader lacks instance function {}", #name);
    TDM_VK_INSTANCE_FUNCS(TDM_VK_LOAD)
#undef TDM_VK_LOAD
#define TDM_VK_LOAD_OPT(name) \
    out->name = reinterpret_cast<PFN_##name>(g.vkGetInstanceProcAddr(instance, #name));
    TDM_VK_INSTANCE_OPTIONAL_FUNCS(TDM_VK_LOAD_OPT)
#undef TDM_VK_LOAD_OPT
    return {};
}

Result<void> load_device_funcs(const InstanceFuncs& fi, VkDevice device, DeviceFuncs* out) {
#define TDM_VK_LOAD(name)                                                              \
    out->name = reinterpret_cast<PFN_##name>(fi.vkGetDeviceProcAddr(device, #name));   \
    if (!out->name) return Error::format("Vulkan driver lacks device function {}", #name);
    TDM_VK_DEVICE_FUNCS(TDM_VK_LOAD)
#undef TDM_VK_LOAD
#define TDM_VK_LOAD_OPT(name) \
    out->name = reinterpret_cast<PFN_##name>(fi.vkGetDeviceProcAddr(device, #name));
    TDM_VK_DEVICE_OPTIONAL_FUNCS(TDM_VK_LOAD_OPT)
#undef TDM_VK_LOAD_OPT
    return {};
}

const char* result_name(VkResult r) {
    switch (r) {
#define TDM_VK_CASE(x) case x: return #x;
        TDM_VK_CASE(VK_SUCCESS)
        TDM_VK_CASE(VK_NOT_READY)
        TDM_VK_CASE(VK_TIMEOUT)
        TDM_VK_CASE(VK_INCOMPLETE)
        TDM_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        TDM_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        TDM_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
        TDM_VK_CASE(VK_ERROR_DEVICE_LOST)
        TDM_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        TDM_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        TDM_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        TDM_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        TDM_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        TDM_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        TDM_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        TDM_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
        TDM_VK_CASE(VK_ERROR_UNKNOWN)
        TDM_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        TDM_VK_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        TDM_VK_CASE(VK_ERROR_FRAGMENTATION)
        TDM_VK_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        TDM_VK_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef TDM_VK_CASE
        default: return "VK_ERROR_(unrecognised)";
    }
}

}  // namespace tdm::vk
