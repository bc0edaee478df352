// SPDX-License-Identifier: Apache-2.0
// tests/support/device_fixture.cpp
#include "support/device_fixture.h"

#include <cstdlib>
#include <memory>

namespace tdm::test {
namespace {

struct Shared {
    std::unique_ptr<vk::Device> device;
    std::unique_ptr<vk::PipelineManager> pipelines;
};

Shared& shared() {
    static Shared s = [] {
        Shared out;
        vk::Device::Options o;
        const char* nv = std::getenv("TANDEM_TEST_NO_VALIDATE");
        o.validate = !(nv && *nv && nv[0] != '0');
        auto dev = vk::Device::create(o);
        if (!dev.ok()) {
            std::fprintf(stderr, "tests: cannot create a Vulkan device: %s\n", dev.error().message().c_str());
            std::abort();  // a test program without a device must fail loudly, not skip
        }
        out.device = std::move(dev).value();
        out.pipelines = std::make_unique<vk::PipelineManager>(*out.device);
        // The default work splits, whatever table `tandem tune` left in this user's cache: a
        // tuned table changes which matmuls split rows alike (so which of them group into one
        // dispatch, as the fused-op tests count), and never saved, so no test writes one.
        out.pipelines->work_splits() = vk::WorkSplits();
        return out;
    }();
    return s;
}

}  // namespace

vk::Device& test_device() { return *shared().device; }
vk::PipelineManager& test_pipelines() { return *shared().pipelines; }

void DeviceTest::SetUp() { errors_at_start_ = test_device().instance().validation_errors(); }

void DeviceTest::TearDown() {
    EXPECT_EQ(test_device().instance().validation_errors(), errors_at_start_)
        << "the Vulkan validation layer reported errors during this test (see the log above)";
}

}  // namespace tdm::test
