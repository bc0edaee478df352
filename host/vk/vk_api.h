/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/vk_api.h: the Vulkan loader, opened at run time, and per-instance /
// per-device function tables (volk's idea, without its process-wide globals).
// Opening libvulkan with dlopen instead of linking it lets a machine without a
// Vulkan loader get a clear error ("install libvulkan1") instead of a failed
// program start. Not here: device selection (device.h), validation (instance.h).
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

#include "common/error.h"

namespace tdm::vk {

#define TDM_VK_GLOBAL_FUNCS(X)                \
    X(vkCreateInstance)                       \
    X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceLayerProperties)     \
    X(vkEnumerateInstanceVersion)

#define TDM_VK_INSTANCE_FUNCS(X)                 \
    X(vkDestroyInstance)                         \
    X(vkEnumeratePhysicalDevices)                \
    X(vkGetPhysicalDeviceProperties)             \
    X(vkGetPhysicalDeviceProperties2)            \
    X(vkGetPhysicalDeviceFeatures2)              \
    X(vkGetPhysicalDeviceMemoryProperties)       \
    X(vkGetPhysicalDeviceQueueFamilyProperties)  \
    X(vkGetPhysicalDeviceFormatProperties)       \
    X(vkEnumerateDeviceExtensionProperties)      \
    X(vkCreateDevice)                            \
    X(vkGetDeviceProcAddr)

#define TDM_VK_INSTANCE_OPTIONAL_FUNCS(X) \
    X(vkCreateDebugUtilsMessengerEXT)     \
    X(vkDestroyDebugUtilsMessengerEXT)

#define TDM_VK_DEVICE_FUNCS(X)          \
    X(vkDestroyDevice)                  \
    X(vkGetDeviceQueue)                 \
    X(vkCreateBuffer)                   \
    X(vkDestroyBuffer)                  \
    X(vkGetBufferMemoryRequirements)    \
    X(vkAllocateMemory)                 \
    X(vkFreeMemory)                     \
    X(vkBindBufferMemory)               \
    X(vkMapMemory)                      \
    X(vkUnmapMemory)                    \
    X(vkFlushMappedMemoryRanges)        \
    X(vkInvalidateMappedMemoryRanges)   \
    X(vkCreateBufferView)               \
    X(vkDestroyBufferView)              \
    X(vkCreateShaderModule)             \
    X(vkDestroyShaderModule)            \
    X(vkCreateDescriptorSetLayout)      \
    X(vkDestroyDescriptorSetLayout)     \
    X(vkCreatePipelineLayout)           \
    X(vkDestroyPipelineLayout)          \
    X(vkCreateComputePipelines)         \
    X(vkDestroyPipeline)                \
    X(vkCreatePipelineCache)            \
    X(vkDestroyPipelineCache)           \
    X(vkGetPipelineCacheData)           \
    X(vkCreateCommandPool)              \
    X(vkDestroyCommandPool)             \
    X(vkAllocateCommandBuffers)         \
    X(vkFreeCommandBuffers)             \
    X(vkBeginCommandBuffer)             \
    X(vkEndCommandBuffer)               \
    X(vkResetCommandBuffer)             \
    X(vkCmdBindPipeline)                \
    X(vkCmdPushConstants)               \
    X(vkCmdPushDescriptorSetKHR)        \
    X(vkCmdDispatch)                    \
    X(vkCmdDispatchIndirect)            \
    X(vkCmdPipelineBarrier)             \
    X(vkCmdCopyBuffer)                  \
    X(vkCmdFillBuffer)                  \
    X(vkCmdUpdateBuffer)                \
    X(vkCmdWriteTimestamp)              \
    X(vkCmdResetQueryPool)              \
    X(vkCreateQueryPool)                \
    X(vkDestroyQueryPool)               \
    X(vkGetQueryPoolResults)            \
    X(vkQueueSubmit)                    \
    X(vkQueueWaitIdle)                  \
    X(vkCreateFence)                    \
    X(vkDestroyFence)                   \
    X(vkWaitForFences)                  \
    X(vkResetFences)                    \
    X(vkGetFenceStatus)                 \
    X(vkDeviceWaitIdle)

#define TDM_VK_DEVICE_OPTIONAL_FUNCS(X) X(vkGetMemoryHostPointerPropertiesEXT)

#define TDM_VK_DECLARE(name) PFN_##name name = nullptr;

struct GlobalFuncs {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    TDM_VK_GLOBAL_FUNCS(TDM_VK_DECLARE)
};
struct InstanceFuncs {
    TDM_VK_INSTANCE_FUNCS(TDM_VK_DECLARE)
    TDM_VK_INSTANCE_OPTIONAL_FUNCS(TDM_VK_DECLARE)
};
struct DeviceFuncs {
    TDM_VK_DEVICE_FUNCS(TDM_VK_DECLARE)
    TDM_VK_DEVICE_OPTIONAL_FUNCS(TDM_VK_DECLARE)
};

// Opens libvulkan.so.1 once per process (the library handle is shared; function
// tables are not). Error names the library and how to install it.
Result<const GlobalFuncs*> load_vulkan_loader();

Result<void> load_instance_funcs(const GlobalFuncs& g, VkInstance instance, InstanceFuncs* out);
Result<void> load_device_funcs(const InstanceFuncs& fi, VkDevice device, DeviceFuncs* out);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.
const char* result_name(VkResult r);

}  // namespace tdm::vk

// Runs a Vulkan call; on failure returns Error("<what>: VK_ERROR_...") from the
// enclosing Result-returning function.
#define TDM_VK_CHECK(call, what)                                                     \
    do {                                                                            \
        VkResult tdm_vk_r_ = (call);                                                \
        if (tdm_vk_r_ != VK_SUCCESS)                                                \
            return ::tdm::Error::format("{}: {}", what, ::tdm::vk::result_name(tdm_vk_r_)); \
    } while (0)
