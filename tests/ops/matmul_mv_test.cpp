// SPDX-License-Identifier: Apache-2.0
// tests/ops/matmul_mv_test.cpp: the "mv" matmul layout (shaders/matmul_mv.comp, the GPUs'
// mat-vec kernel), forced on the test device with TANDEM_MATMUL_LAYOUT=mv: every weight
// type against the double-precision reference, with and without the fused residual add;
// each token of a batch bit-identical to it computed alone (DESIGN invariant 1); and the
// workgroup count that keeps a GPU's SMs busy. Its splits are checked bit for bit in
// matmul_split_test.cpp, its grouped form in fused_ops_test.cpp.
#include <gtest/gtest.h>

#include <cstring>

#include "common/quant.h"
#include "ops/matmul_split.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::randn;

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                        DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

class MatmulMv : public test::DeviceTest, public ::testing::WithParamInterface<DType> {};

// Batch widths: decode, the smallest verify, a tree width, a full pass of 8 tokens, and
// 17 = two full passes and one token more. Five widths rather than every one up to 17:
// the mechanism (a token's code never depends on N or the tokens per pass) is the same.
TEST_P(MatmulMv, matches_the_reference_and_each_token_of_a_batch_equals_it_alone) {
    const DType t = GetParam();
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    ASSERT_EQ(matmul_layout(device().caps(), t), MatmulLayout::mv) << dtype_name(t);
    const bool plain = t == DType::F32 || t == DType::F16 || t == DType::BF16;
    // K: 3 super-blocks, so lanes run out of units part-way through an unrolled step; plain
    // types end in a partial 32-element unit. M: not a multiple of the rows per workgroup.
    const int64_t K = plain ? 776 : 768, M = 45;
    const auto wf = randn(size_t(K * M), 31, 0.1f);
    const auto wb = quantize_matrix(t, wf.data(), M, K);
    const int max_n = 17;
    const auto x = randn(size_t(K * max_n), 32);

    std::vector<std::vector<float>> alone(max_n);
    {
        OpHarness h(device(), pipelines());
        const TensorId xi = h.input_f32({K, 1}, std::vector<float>(x.begin(), x.begin() + K));
        const TensorId y = h.op(TDM_OP_MATMUL, {h.weight(t, K, M, wb), xi});
        h.run({y});
        for (int tok = 0; tok < max_n; ++tok) {
            std::memcpy(h.compiled().input_data(xi), x.data() + tok * K, K * sizeof(float));
            h.rerun();
            alone[size_t(tok)] = h.f32(y);
        }
    }
    for (const int n : {1, 2, 5, 8, 17}) {
        OpHarness h(device(), pipelines());
        const std::vector<float> xs(x.begin(), x.begin() + n * K);
        const auto a = randn(size_t(M * n), 40 + uint32_t(n));
        const TensorId w = h.weight(t, K, M, wb);
        const TensorId xi = h.input_f32({K, n}, xs);
        const TensorId y = h.op(TDM_OP_MATMUL, {w, xi});
        const TensorId ya = h.op(TDM_OP_MATMUL, {w, xi, h.input_f32({M, n}, a, "add")});
        h.run({y, ya});
        const auto out = h.f32(y);
        for (int tok = 0; tok < n; ++tok)
            EXPECT_EQ(std::memcmp(out.data() + tok * M, alone[size_t(tok)].data(), size_t(M) * sizeof(float)), 0)
                << dtype_name(t) << ": token " << tok << " of a batch of " << n << " differs from decode";
        const auto ref = ref::matmul(xs, t, wb, M, K);
        EXPECT_LT(ref::nmse(out, ref), 1e-9) << dtype_name(t) << " n=" << n;
        EXPECT_LT(ref::nmse(h.f32(ya), ref::add(ref, a, M)), 1e-9) << dtype_name(t) << " n=" << n << ", fused add";
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulMv, ::testing::ValuesIn(kTypes),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

// The count is deterministic (the dispatch is ceil(rows / rows per workgroup) workgroups,
// host/ops/matmul.cpp), so it is a test, not a timing: with the default split (2 rows per
// subgroup, 2 subgroups) a 1024-row Q8_0 matrix runs in 256 workgroups, where "ks"'s 8 x 8
// ran 16 on 132 SMs.
TEST(MatmulMvSplit, is_a_gpus_default_and_runs_a_1024_row_matrix_in_256_workgroups) {
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "");  // the device decides
    vk::DeviceCaps gpu;
    gpu.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    gpu.subgroup_size = 32;
    gpu.subgroup_size_fixable = true;  // as every Vulkan 1.3 GPU (matmul_subgroup_size_test.cpp)
    gpu.max_workgroup_invocations = 1024;
    for (const DType t : {DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::F16}) {
        const MatmulSplit s = default_matmul_split(gpu, t);
        EXPECT_EQ(s.layout, MatmulLayout::mv) << dtype_name(t);
        EXPECT_EQ((1024 + s.rows_per_workgroup(32) - 1) / s.rows_per_workgroup(32), 256u) << dtype_name(t);
        EXPECT_EQ(s.spec(32, 1), (std::vector<uint32_t>{64, 1, 2, 2})) << "workgroup size, tokens, rows, unroll";
    }
    vk::DeviceCaps cpu = gpu;
    cpu.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
    EXPECT_EQ(matmul_layout(cpu, DType::Q8_0), MatmulLayout::rl);
}

}  // namespace
}  // namespace tdm
