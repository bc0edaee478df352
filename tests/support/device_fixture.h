/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/device_fixture.h: one Vulkan device for a whole test program,
// with the Khronos validation layer on (set TANDEM_TEST_NO_VALIDATE=1 to run
// without it). DeviceTest fails any test during which the layer reported an
// error. Tests never skip for want of a device: no device is a failure.
#pragma once

#include <gtest/gtest.h>

#include "vk/device.h"
#include "vk/pipeline.h"

namespace tdm::test {

vk::Device& test_device();
vk::PipelineManager& test_pipelines();

class DeviceTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;
    vk::Device& device() { return test_device(); }
    vk::PipelineManager& pipelines() { return test_pipelines(); }

private:
    uint64_t errors_at_start_ = 0;
};

}  // namespace tdm::test
