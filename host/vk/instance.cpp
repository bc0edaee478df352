// SPDX-License-Identifier: Apache-2.0
// host/vk/instance.cpp
#include "vk/instance.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/log.h"

namespace tdm::vk {
namespace {
constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
}

bool validation_requested_by_env() {
    const char* v = std::getenv("TANDEM_VALIDATE");
    return v && *v && std::strcmp(v, "0") != 0;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::debug_callback(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    auto* self = static_cast<Instance*>(user);
    const char* msg = data && data->pMessage ? data->pMessage : "(no message)";
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        self->validation_errors_++;
        log(LogLevel::error, "vulkan", "validation: {}", msg);
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        self->validation_warnings_++;
        log(LogLevel::warn, "vulkan", "validation: {}", msg);
    } else {
        return VK_FALSE;
    }
    if (self->validation_fatal_) {
        // Straight to stderr: the message above may be filtered by the log level.
        std::fprintf(stderr, "tandem: Vulkan validation message with TANDEM_VALIDATE set, aborting: %s\n", msg);
        std::abort();
    }
    return VK_FALSE;
}

Result<std::unique_ptr<Instance>> Instance::create(const Options& options) {
    const GlobalFuncs* g = TDM_TRY(load_vulkan_loader());
    std::unique_ptr<Instance> inst(new Instance());
    inst->global_ = g;

    uint32_t loader_version = VK_API_VERSION_1_0;
    if (g->vkEnumerateInstanceVersion) g->vkEnumerateInstanceVersion(&loader_version);
    if (loader_version < VK_API_VERSION_1_1)
        return Error::format("the Vulkan loader supports only Vulkan {}.{}; tandem needs 1.1 or newer",
                             VK_API_VERSION_MAJOR(loader_version), VK_API_VERSION_MINOR(loader_version));
    inst->api_version_ = loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : loader_version;

    const bool want_validation = options.validate || validation_requested_by_env();
    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    if (want_validation) {
        uint32_t n = 0;
        g->vkEnumerateInstanceLayerProperties(&n, nullptr);
        std::vector<VkLayerProperties> props(n);
        g->vkEnumerateInstanceLayerProperties(&n, props.data());
        bool found = false;
        for (const auto& p : props) found |= std::strcmp(p.layerName, kValidationLayer) == 0;
        if (!found)
            return Error::format("validation was requested (TANDEM_VALIDATE) but {} is not installed; "
                                 "install it with 'apt install vulkan-validationlayers'",
                                 kValidationLayer);
        layers.push_back(kValidationLayer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }

    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "tandem";
    app.pEngineName = "tandem";
    app.apiVersion = inst->api_version_;

    VkDebugUtilsMessengerCreateInfoEXT dbg{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    dbg.pfnUserCallback = &Instance::debug_callback;
    dbg.pUserData = inst.get();

    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    ci.enabledLayerCount = uint32_t(layers.size());
    ci.ppEnabledLayerNames = layers.data();
    ci.enabledExtensionCount = uint32_t(extensions.size());
    ci.ppEnabledExtensionNames = extensions.data();
    if (want_validation) ci.pNext = &dbg;  // also reports problems during vkCreateInstance
    VkResult r = g->vkCreateInstance(&ci, nullptr, &inst->instance_);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)  // the loader found no driver at all
        return Error("no Vulkan device found: the Vulkan loader found no driver "
                     "(VK_ERROR_INCOMPATIBLE_DRIVER). Install one: 'apt install mesa-vulkan-drivers' provides "
                     "lavapipe, a CPU device that works without a GPU (check with 'vulkaninfo --summary')");
    if (r != VK_SUCCESS)
        return Error::format("vkCreateInstance failed: {} (is a Vulkan driver installed? "
                             "'apt install mesa-vulkan-drivers' provides a CPU device)",
                             result_name(r));
    TDM_TRY(load_instance_funcs(*g, inst->instance_, &inst->fn_));
    if (want_validation) {
        if (!inst->fn_.vkCreateDebugUtilsMessengerEXT)
            return Error("validation layer loaded but VK_EXT_debug_utils is unavailable");
        TDM_VK_CHECK(inst->fn_.vkCreateDebugUtilsMessengerEXT(inst->instance_, &dbg, nullptr,
                                                             &inst->messenger_),
                     "creating the validation messenger");
        inst->validation_enabled_ = true;
        inst->validation_fatal_ = validation_requested_by_env();
        TDM_LOG_INFO("vulkan", "validation layer enabled");
    }
    return inst;
}

Instance::~Instance() {
    if (messenger_ && fn_.vkDestroyDebugUtilsMessengerEXT)
        fn_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
    if (instance_ && fn_.vkDestroyInstance) fn_.vkDestroyInstance(instance_, nullptr);
}

Result<std::vector<VkPhysicalDevice>> Instance::physical_devices() const {
    uint32_t n = 0;
    TDM_VK_CHECK(fn_.vkEnumeratePhysicalDevices(instance_, &n, nullptr), "enumerating Vulkan devices");
    std::vector<VkPhysicalDevice> devs(n);
    if (n) TDM_VK_CHECK(fn_.vkEnumeratePhysicalDevices(instance_, &n, devs.data()),
                        "enumerating Vulkan devices");
    devs.resize(n);
    return devs;
}

}  // namespace tdm::vk
