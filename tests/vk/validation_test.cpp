// SPDX-License-Identifier: Apache-2.0
// tests/vk/validation_test.cpp: what a Vulkan validation message does. With TANDEM_VALIDATE
// set in the environment (CI sets it for the whole suite, .ci/run) the process aborts on the
// first error or warning, so that no test, CLI run or plugin passes while the layer complains;
// with validation asked for otherwise (--validate, device.validate) the message is counted
// and logged. The misuse: a buffer of size 0 (VUID-VkBufferCreateInfo-size-00912).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "vk/device.h"

namespace tdm {
namespace {

// Sets or unsets TANDEM_VALIDATE for a scope.
class ValidateEnv {
public:
    explicit ValidateEnv(const char* value) {
        if (const char* old = std::getenv("TANDEM_VALIDATE")) old_ = old;
        if (value)
            setenv("TANDEM_VALIDATE", value, 1);
        else
            unsetenv("TANDEM_VALIDATE");
    }
    ~ValidateEnv() {
        if (old_)
            setenv("TANDEM_VALIDATE", old_->c_str(), 1);
        else
            unsetenv("TANDEM_VALIDATE");
    }

private:
    std::optional<std::string> old_;
};

std::unique_ptr<vk::Device> validated_device() {
    vk::Device::Options o;
    o.validate = true;
    auto dev = vk::Device::create(o);
    if (!dev.ok()) {
        ADD_FAILURE() << dev.error().message();
        return nullptr;
    }
    return std::move(*dev);
}

void create_empty_buffer(vk::Device& dev) {
    VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = 0;  // invalid: must be greater than 0
    ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer b = VK_NULL_HANDLE;
    if (dev.fn().vkCreateBuffer(dev.handle(), &ci, nullptr, &b) == VK_SUCCESS && b)
        dev.fn().vkDestroyBuffer(dev.handle(), b, nullptr);
}

TEST(ValidationDeathTest, a_validation_error_aborts_the_process_when_TANDEM_VALIDATE_is_set) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            ValidateEnv env("1");
            auto dev = validated_device();
            if (dev) create_empty_buffer(*dev);
        },
        "Vulkan validation message with TANDEM_VALIDATE set, aborting: .*VUID-VkBufferCreateInfo-size-00912");
}

TEST(Validation, without_TANDEM_VALIDATE_a_validation_error_is_counted_and_the_run_goes_on) {
    ValidateEnv env(nullptr);
    auto dev = validated_device();
    ASSERT_TRUE(dev);
    ASSERT_TRUE(dev->instance().validation_enabled());
    const uint64_t before = dev->instance().validation_errors();
    create_empty_buffer(*dev);
    EXPECT_GT(dev->instance().validation_errors(), before);
}

}  // namespace
}  // namespace tdm
