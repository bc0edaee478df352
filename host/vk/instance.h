/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/instance.h: the Vulkan instance, with the Khronos validation layer
// switchable on (TANDEM_VALIDATE=1 or Options::validate). Validation messages
// are logged and counted so tests can assert that a run produced none; with
// TANDEM_VALIDATE=1 in the environment (what CI sets for the whole suite) an
// error or warning message also aborts the process, so that no test, CLI run or
// plugin can pass while the layer complains.
// Not here: physical-device choice and capabilities (device.h).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "vk/vk_api.h"

namespace tdm::vk {

class Instance {
public:
    struct Options {
        bool validate = false;  // also turned on by TANDEM_VALIDATE=1
    };

    static Result<std::unique_ptr<Instance>> create(const Options& options);
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    const GlobalFuncs& global() const { return *global_; }
    const InstanceFuncs& fn() const { return fn_; }
    uint32_t api_version() const { return api_version_; }

    Result<std::vector<VkPhysicalDevice>> physical_devices() const;

    bool validation_enabled() const { return validation_enabled_; }
    uint64_t validation_errors() const { return validation_errors_.load(); }
    uint64_t validation_warnings() const { return validation_warnings_.load(); }

private:
    Instance() = default;
    static VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(
        VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
        const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);

    const GlobalFuncs* global_ = nullptr;
    InstanceFuncs fn_{};
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    uint32_t api_version_ = VK_API_VERSION_1_1;
    bool validation_enabled_ = false;
    bool validation_fatal_ = false;  // TANDEM_VALIDATE set: abort on an error or warning
    std::atomic<uint64_t> validation_errors_{0};
    std::atomic<uint64_t> validation_warnings_{0};
};

// True when TANDEM_VALIDATE is set to a non-empty value other than "0".
bool validation_requested_by_env();

}  // namespace tdm::vk
