// SPDX-License-Identifier: Apache-2.0
// tests/ops/gather_ops_test.cpp: the op parameters behind a centroid-masked LM head (Gemma 4's
// assistant): get_rows reading an f32 weight in rows of i[0] elements, matmul_id with i[0] = 1
// (one weight row per id: a gather-matmul over candidate tokens), and cast to i32 (token ids
// held as exact f32 -> i32 ids). Each against plain loops, with the refusals that keep them
// honest (a regrouped get_rows on a quantized weight, a negative width).
//
// To add a case: build the inputs with OpHarness and compare with a loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/quant.h"
#include "graph/weight.h"
#include "support/device_fixture.h"
#include "support/op_harness.h"
#include "support/reference.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using test::OpHarness;

using test::randn;

class GatherOps : public test::DeviceTest {};

TEST_F(GatherOps, get_rows_reads_an_f32_weight_in_rows_of_i0_elements) {
    // a [64] table of token ids read as 8 clusters of 8: row c = elements 8c .. 8c+7
    std::vector<float> table(64);
    for (size_t i = 0; i < table.size(); ++i) table[i] = float((i * 37) % 64);
    OpHarness h(device(), pipelines());
    const TensorId w = h.weight(DType::F32, 64, 1, test::f32_bytes(table));
    const TensorId y = h.op(TDM_OP_GET_ROWS, {w, h.input_i32({3}, {5, 0, 7})}, {8});
    h.run({y});
    std::vector<float> want;
    for (int c : {5, 0, 7})
        for (int j = 0; j < 8; ++j) want.push_back(table[size_t(8 * c + j)]);
    EXPECT_EQ(h.f32(y), want);
}

TEST_F(GatherOps, get_rows_refuses_a_row_width_on_a_quantized_weight_or_one_that_does_not_divide) {
    const auto wf = randn(64 * 2, 3);
    const auto q = quantize_matrix(DType::Q8_0, wf.data(), 2, 64);
    for (auto [type, width, bytes] : {std::tuple{DType::Q8_0, 32, q}, std::tuple{DType::F32, 24, test::f32_bytes(wf)}}) {
        OpHarness h(device(), pipelines());
        OpDesc d;
        d.op = TDM_OP_GET_ROWS;
        d.in[0] = h.weight(type, 64, 2, bytes);
        d.in[1] = h.input_i32({1}, {0});
        d.n_in = 2;
        d.i[0] = width;
        auto r = h.graph().op(d);
        ASSERT_FALSE(r.ok()) << dtype_name(type) << " width " << width;
        EXPECT_NE(r.error().message().find("row width"), std::string::npos) << r.error().message();
    }
}

TEST_F(GatherOps, matmul_id_with_one_row_per_id_multiplies_by_the_rows_the_ids_name) {
    // the candidates' logits of an LM head: y[j] = W[ids[j]] . x, for every weight type
    for (const DType t : {DType::F32, DType::BF16, DType::Q8_0, DType::Q4_K}) {
        const int64_t K = 256, V = 40, n_cand = 12;
        const auto wf = randn(size_t(K * V), 4);
        const auto wb = quantize_matrix(t, wf.data(), V, K);
        const auto x = randn(size_t(K), 5);
        const std::vector<int32_t> ids = {3, 39, 0, 17, 17, 8, 21, 5, 33, 1, 38, 9};
        OpHarness h(device(), pipelines());
        const TensorId w = h.weight(t, K, V, wb);
        const TensorId y = h.op(TDM_OP_MATMUL_ID, {w, h.input_f32({K, 1}, x), h.input_i32({n_cand, 1}, ids)}, {1});
        const TensorId full = h.op(TDM_OP_MATMUL, {w, h.input_f32({K, 1}, x, "x2")});
        h.run({y, full});
        const auto all = h.f32(full), got = h.f32(y);
        ASSERT_EQ(got.size(), size_t(n_cand));
        const auto want_all = ref::matmul(x, t, wb, V, K);
        for (int64_t j = 0; j < n_cand; ++j) {
            const float want = want_all[size_t(ids[size_t(j)])];
            EXPECT_NEAR(got[size_t(j)], want, 1e-5f * (1.0f + std::fabs(want))) << dtype_name(t) << " slot " << j;
            // (the plain matmul may reduce in another layout: close, not bit-equal)
            EXPECT_NEAR(got[size_t(j)], all[size_t(ids[size_t(j)])], 1e-5f * (1.0f + std::fabs(want)));
        }
    }
}

// A table in host memory (tdm.host_rows) is read by the runner with host_row_f32 instead
// of get_rows on the device: the same rows, so a model reads the same values wherever the
// table lives (--host-rows on / off), for every type a table can have.
TEST_F(GatherOps, host_rows_of_a_table_in_host_memory_equal_get_rows_on_the_device) {
    const int64_t K = 512, V = 9;
    const std::vector<int32_t> ids = {8, 0, 3, 3, 7};
    for (const DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1,
                          DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
        const auto wf = randn(size_t(K * V), 11);
        const auto wb = quantize_matrix(t, wf.data(), V, K);
        OpHarness h(device(), pipelines());
        const TensorId y = h.op(TDM_OP_GET_ROWS, {h.weight(t, K, V, wb), h.input_i32({int64_t(ids.size())}, ids)});
        h.run({y});
        const auto got = h.f32(y);
        const int64_t ne[4] = {K, V, 1, 1};
        auto table = DeviceWeight::in_host_memory("table", t, ne, wb.data());
        ASSERT_TRUE(table.ok()) << table.error().message();
        std::vector<float> row(static_cast<size_t>(K));
        for (size_t j = 0; j < ids.size(); ++j) {
            (*table)->host_row_f32(ids[j], row.data());
            for (int64_t k = 0; k < K; ++k)
                ASSERT_EQ(row[size_t(k)], got[j * size_t(K) + size_t(k)])
                    << dtype_name(t) << " id " << ids[j] << " column " << k;
        }
    }
}

TEST_F(GatherOps, cast_to_i32_rounds_to_the_nearest_integer) {
    const std::vector<float> x = {0.0f, 3.0f, 262143.0f, -5.0f, 2.5f, 7.49f, 16777215.0f, 1.0f};
    OpHarness h(device(), pipelines());
    const TensorId y = h.op(TDM_OP_CAST, {h.input_f32({8}, x)}, {TDM_DTYPE_I32});
    h.run({y});
    EXPECT_EQ(h.i32(y), (std::vector<int32_t>{0, 3, 262143, -5, 2, 7, 16777215, 1}));
}

}  // namespace
}  // namespace tdm
