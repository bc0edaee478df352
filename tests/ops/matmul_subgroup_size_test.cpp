// SPDX-License-Identifier: Apache-2.0
// tests/ops/matmul_subgroup_size_test.cpp: the matmul layouts that count subgroups ("mv",
// "ks": a workgroup's rows are subgroups x R, a row's units are strided over a subgroup's
// lanes) run with the device's reported subgroup size fixed in full subgroups
// (vk/pipeline.h, SubgroupShape), so that a driver free to pick another size (AMD
// wave32/64, Intel 8/16/32) cannot skip rows or change a row's order of sums; a device
// that cannot fix it runs "rl", whose rows do not depend on subgroups, and a layout forced
// there fails with a message naming the device. Fake capabilities stand in for the GPUs
// lavapipe is not (lavapipe: subgroup size 8, min = max = 8, size control and full
// subgroups for compute, docs/lavapipe.md); on lavapipe itself the pipelines are created
// fixed, which the validation layer checks against the limits (the op tests of "mv" and
// "ks" run them).
#include <gtest/gtest.h>

#include "ops/matmul_split.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const DType kSomeTypes[] = {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q6_K};

vk::DeviceCaps fake_gpu(bool fixable) {
    vk::DeviceCaps gpu;
    gpu.name = "Fake GPU 9000";
    gpu.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    gpu.subgroup_size = 32;
    gpu.subgroup_min_size = 16;
    gpu.subgroup_max_size = 64;
    gpu.max_workgroup_invocations = 1024;
    gpu.max_compute_workgroup_subgroups = 32;
    gpu.subgroup_size_fixable = fixable;
    return gpu;
}

TEST(MatmulSubgroupSize, a_gpu_that_cannot_fix_its_subgroup_size_runs_the_layout_that_does_not_count_subgroups) {
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "");  // the device decides
    const vk::DeviceCaps fixed = fake_gpu(true), free = fake_gpu(false);
    for (const DType t : kSomeTypes) {
        EXPECT_EQ(matmul_layout(fixed, t), MatmulLayout::mv) << dtype_name(t);
        EXPECT_EQ(default_matmul_split(fixed, t).subgroup_shape(), vk::SubgroupShape::device_size) << dtype_name(t);
        EXPECT_EQ(matmul_layout(free, t), MatmulLayout::rl) << dtype_name(t);
        for (const MatmulSplit& s : matmul_split_candidates(free, t)) {
            EXPECT_EQ(s.layout, MatmulLayout::rl) << dtype_name(t) << " " << s.to_string();
            EXPECT_EQ(s.subgroup_shape(), vk::SubgroupShape::any) << dtype_name(t) << " " << s.to_string();
        }
    }
}

TEST(MatmulSubgroupSize, a_pipeline_that_counts_subgroups_asks_for_the_reported_size_in_whole_subgroups) {
    vk::DeviceCaps gpu = fake_gpu(true);
    EXPECT_EQ(*vk::required_subgroup_size(gpu, vk::SubgroupShape::any, 64, "matmul_rl_q8_0_buf"), 0u);
    EXPECT_EQ(*vk::required_subgroup_size(gpu, vk::SubgroupShape::device_size, 64, "matmul_mv_q8_0_buf"), 32u);
    EXPECT_FALSE(vk::required_subgroup_size(gpu, vk::SubgroupShape::device_size, 48, "matmul_mv_q8_0_buf").ok())
        << "48 lanes are not whole subgroups of 32";

    // a fixed size bounds a workgroup's subgroups: the splits that would exceed it are not tuned
    gpu.max_compute_workgroup_subgroups = 4;
    const auto too_many = vk::required_subgroup_size(gpu, vk::SubgroupShape::device_size, 256, "matmul_q8_0_buf");
    ASSERT_FALSE(too_many.ok());
    EXPECT_NE(too_many.error().message().find("Fake GPU 9000"), std::string::npos) << too_many.error().message();
    {
        const test::ScopedEnv ks("TANDEM_MATMUL_LAYOUT", "ks");
        EXPECT_FALSE(matmul_split_fits(gpu, {MatmulLayout::ks, 8, 8, 1}));
        EXPECT_TRUE(matmul_split_fits(gpu, {MatmulLayout::ks, 8, 4, 1}));
        EXPECT_EQ(default_matmul_split(gpu, DType::Q8_0), (MatmulSplit{MatmulLayout::ks, 8, 4, 1}));
        for (const MatmulSplit& s : matmul_split_candidates(gpu, DType::Q8_0))
            EXPECT_LE(s.subgroups, 4u) << s.to_string();
    }

    // a device that cannot fix it refuses the pipeline, naming itself and the kernel
    const vk::DeviceCaps free = fake_gpu(false);
    const auto refused = vk::required_subgroup_size(free, vk::SubgroupShape::device_size, 64, "matmul_mv_q8_0_buf");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message().find("Fake GPU 9000"), std::string::npos) << refused.error().message();
    EXPECT_NE(refused.error().message().find("matmul_mv_q8_0_buf"), std::string::npos) << refused.error().message();
    EXPECT_EQ(*vk::required_subgroup_size(free, vk::SubgroupShape::any, 64, "matmul_rl_q8_0_buf"), 0u);
}

class MatmulSubgroupPipelines : public test::DeviceTest {};

// The pipelines the matmul op records (ops/matmul.cpp and matmul_group.cpp get them from
// matmul_pipeline), at a decode's and a verify's tokens per pass: "mv" and "ks" fixed at the
// device's size, "rl" left to the driver.
TEST_F(MatmulSubgroupPipelines, mv_and_ks_fix_the_devices_subgroup_size_and_rl_leaves_it_to_the_driver) {
    const vk::DeviceCaps& caps = device().caps();
    ASSERT_TRUE(caps.subgroup_size_fixable) << caps.name << ": lavapipe fixes its subgroup size (docs/lavapipe.md)";
    for (const char* forced : {"mv", "ks", "rl"}) {
        const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", forced);
        const MatmulSplit s = default_matmul_split(caps, DType::Q8_0);
        const uint32_t want = s.layout == MatmulLayout::rl ? 0u : caps.subgroup_size;
        for (const bool group : {false, true}) {
            for (const uint32_t nt : {1u, 4u}) {
                auto p = matmul_pipeline(pipelines(), caps, s, DType::Q8_0, caps.prefer_texel_weights, group, nt);
                ASSERT_TRUE(p.ok()) << forced << ": " << p.error().message();
                EXPECT_EQ((*p)->required_subgroup_size(), want) << forced << (group ? " group" : "") << " nt " << nt;
            }
        }
    }
}

}  // namespace
}  // namespace tdm
