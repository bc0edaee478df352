// SPDX-License-Identifier: Apache-2.0
// tests/ops/moe_ops_test.cpp: the mixture-of-experts ops against the plain-C++
// reference (tests/support/reference_recurrent.h): matmul_id for every weight type
// (shared and per-slot x, experts spread over several row chunks, ids out of
// range), its batch invariance (each token bit-identical alone or in a batch of
// 1..17), the upload rule that keeps experts whole inside a chunk, and moe_sum.
//
// To add a case: quantize an [E][M][K] stack with quantize_matrix (E * M rows),
// upload it with OpHarness::weight_nd({K, M, E}), build the op, compare with
// ref::matmul_id by nmse. Tolerances: nmse 1e-9 as for MATMUL (f32 sums of K
// products in a different order than the double reference); bit equality for
// invariance.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/quant.h"
#include "graph/weight_layout.h"
#include "support/device_fixture.h"
#include "support/op_harness.h"
#include "support/reference_recurrent.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using test::OpHarness;

using test::randn;

std::vector<int32_t> random_ids(size_t n, int32_t E, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> d(0, E - 1);
    std::vector<int32_t> v(n);
    for (int32_t& x : v) x = d(rng);
    return v;
}

bool same_bits_moe_ops(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

const DType kWeightTypesMoeOps[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                              DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

class MatmulId : public test::DeviceTest, public ::testing::WithParamInterface<DType> {};

TEST_P(MatmulId, matches_reference_for_shared_and_per_slot_x_across_row_chunks) {
    const DType t = GetParam();
    const int64_t K = 256, M = 48, E = 7, n_used = 3, n = 5;  // M: experts begin inside row tiles
    const auto wf = randn(size_t(K * M * E), 1, 0.1f);
    const auto wb = quantize_matrix(t, wf.data(), M * E, K);
    auto ids = random_ids(size_t(n * n_used), int32_t(E), 2);
    ids[4] = ids[3];  // the same expert twice for one token
    const auto x = randn(size_t(K * n), 3);
    const auto xs = randn(size_t(K * n_used * n), 4);
    for (bool chunked : {false, true}) {
        OpHarness h(device(), pipelines());
        WeightUploadOptions o;
        // 136 rows per binding: 128 in whole row tiles (weight_layout.h), so chunks of 2 experts
        // (row_group defaults to M for 3-D weights), the second beginning mid-tile. Counted in
        // the main plane, the larger one where a type splits its blocks.
        if (chunked) o.max_binding_bytes = 136 * weight_layout(t, K, 1)->main_row_bytes;
        const TensorId w = h.weight_nd(t, {K, M, E}, wb, o);
        if (chunked) {
            ASSERT_EQ(h.graph().tensor(w).weight->chunks().size(), 4u);
        }
        const TensorId ti = h.input_i32({n_used, n}, ids);
        const TensorId y = h.op(TDM_OP_MATMUL_ID, {w, h.input_f32({K, n}, x), ti});
        const TensorId ys = h.op(TDM_OP_MATMUL_ID, {w, h.input_f32({K, n_used, n}, xs, "xs"), ti});
        h.run({y, ys});
        EXPECT_LT(ref::nmse(h.f32(y), ref::matmul_id(x, t, wb, K, M, E, ids, n_used)), 1e-9)
            << dtype_name(t) << (chunked ? " chunked" : "");
        EXPECT_LT(ref::nmse(h.f32(ys), ref::matmul_id(xs, t, wb, K, M, E, ids, n_used)), 1e-9)
            << dtype_name(t) << (chunked ? " chunked" : "") << ", x per slot";
    }
}

TEST_P(MatmulId, each_token_of_a_batch_of_1_to_17_equals_it_computed_alone) {
    const DType t = GetParam();
    const int64_t K = 512, M = 45, E = 6, n_used = 4;  // M: not a multiple of the rows per workgroup
    const int max_n = 17;
    const auto wf = randn(size_t(K * M * E), 10, 0.1f);
    const auto wb = quantize_matrix(t, wf.data(), M * E, K);
    const auto ids = random_ids(size_t(n_used * max_n), int32_t(E), 11);
    const auto x = randn(size_t(K * max_n), 12);
    const size_t tok = size_t(M * n_used);  // outputs per token

    std::vector<std::vector<float>> alone(max_n);
    {
        OpHarness h(device(), pipelines());
        const TensorId xi = h.input_f32({K, 1}, std::vector<float>(x.begin(), x.begin() + K));
        const TensorId ii = h.input_i32({n_used, 1}, std::vector<int32_t>(ids.begin(), ids.begin() + n_used));
        const TensorId y = h.op(TDM_OP_MATMUL_ID, {h.weight_nd(t, {K, M, E}, wb), xi, ii});
        h.run({y});
        for (int i = 0; i < max_n; ++i) {
            std::memcpy(h.compiled().input_data(xi), x.data() + i * K, size_t(K) * 4);
            std::memcpy(h.compiled().input_data(ii), ids.data() + i * n_used, size_t(n_used) * 4);
            h.rerun();
            alone[size_t(i)] = h.f32(y);
        }
    }
    for (int n = 1; n <= max_n; ++n) {
        OpHarness h(device(), pipelines());
        const TensorId y = h.op(TDM_OP_MATMUL_ID,
                                {h.weight_nd(t, {K, M, E}, wb),
                                 h.input_f32({K, n}, std::vector<float>(x.begin(), x.begin() + n * K)),
                                 h.input_i32({n_used, n}, std::vector<int32_t>(ids.begin(), ids.begin() + n * n_used))});
        h.run({y});
        const auto out = h.f32(y);
        for (int i = 0; i < n; ++i)
            EXPECT_TRUE(same_bits_moe_ops(out.data() + size_t(i) * tok, alone[size_t(i)].data(), tok))
                << dtype_name(t) << ": token " << i << " of a batch of " << n << " differs from decode";
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulId, ::testing::ValuesIn(kWeightTypesMoeOps),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

class Moe : public test::DeviceTest {};

TEST_F(Moe, matmul_id_reads_plain_rows_that_end_in_a_partial_32_element_unit) {
    // F32/F16/BF16 expert rows need only be 16 bytes long: K = 40 ends part-way through a unit.
    for (const DType t : {DType::F32, DType::F16, DType::BF16}) {
        const int64_t K = 40, M = 12, E = 4, n_used = 2, n = 3;
        const auto wf = randn(size_t(K * M * E), 70, 0.3f);
        const auto wb = quantize_matrix(t, wf.data(), M * E, K);
        const auto ids = random_ids(size_t(n * n_used), int32_t(E), 71);
        const auto x = randn(size_t(K * n), 72);
        OpHarness h(device(), pipelines());
        const TensorId y = h.op(TDM_OP_MATMUL_ID, {h.weight_nd(t, {K, M, E}, wb), h.input_f32({K, n}, x),
                                                   h.input_i32({n_used, n}, ids)});
        h.run({y});
        EXPECT_LT(ref::nmse(h.f32(y), ref::matmul_id(x, t, wb, K, M, E, ids, n_used)), 1e-12) << dtype_name(t);
    }
}

TEST_F(Moe, matmul_id_gives_zero_rows_for_ids_out_of_range) {
    const int64_t K = 64, M = 10, E = 3, n_used = 4, n = 2;
    const auto wf = randn(size_t(K * M * E), 20, 0.1f);
    const auto wb = quantize_matrix(DType::F32, wf.data(), M * E, K);
    const std::vector<int32_t> ids = {0, -1, 3, 2, 1000, 1, 2, -7};
    const auto x = randn(size_t(K * n), 21);
    for (bool chunked : {false, true}) {
        OpHarness h(device(), pipelines());
        WeightUploadOptions o;
        if (chunked) o.max_binding_bytes = M * row_bytes(DType::F32, K);  // one expert per chunk
        const TensorId y = h.op(TDM_OP_MATMUL_ID, {h.weight_nd(DType::F32, {K, M, E}, wb, o), h.input_f32({K, n}, x),
                                                   h.input_i32({n_used, n}, ids)});
        h.run({y});
        const auto got = h.f32(y);
        const auto ref = ref::matmul_id(x, DType::F32, wb, K, M, E, ids, n_used);
        EXPECT_LT(ref::nmse(got, ref), 1e-12);
        for (size_t s = 0; s < ids.size(); ++s) {
            if (ids[s] >= 0 && ids[s] < E) continue;
            for (int64_t r = 0; r < M; ++r) EXPECT_EQ(got[s * size_t(M) + size_t(r)], 0.0f) << "slot " << s;
        }
    }
}

TEST_F(Moe, weight_upload_keeps_each_expert_inside_one_row_chunk) {
    const int64_t K = 32, M = 6, E = 5;
    const auto wb = quantize_matrix(DType::F32, randn(size_t(K * M * E), 30).data(), M * E, K);
    vk::Arena arena(device(), vk::MemoryKind::device, "test", 1 << 20);
    const int64_t ne[4] = {K, M, E, 1};
    WeightUploadOptions o;
    o.max_binding_bytes = 14 * row_bytes(DType::F32, K);  // 14 rows fit: 2 experts (12 rows) per chunk
    auto w = DeviceWeight::upload(device(), arena, "experts", DType::F32, ne, wb.data(), o);
    ASSERT_TRUE(w.ok()) << w.error().message();
    ASSERT_EQ((*w)->chunks().size(), 3u);
    for (const WeightChunk& c : (*w)->chunks()) {
        EXPECT_EQ(c.row_begin % M, 0);
        EXPECT_EQ(c.n_rows % M, 0);
    }
    // a 2-D weight is still cut at the binding limit, whatever its shape
    const int64_t ne2[4] = {K, M * E, 1, 1};
    auto w2 = DeviceWeight::upload(device(), arena, "matrix", DType::F32, ne2, wb.data(), o);
    ASSERT_TRUE(w2.ok());
    EXPECT_EQ((*w2)->chunks()[0].n_rows, 14);
    // an expert larger than one binding is an error naming the weight
    o.max_binding_bytes = 4 * row_bytes(DType::F32, K);
    auto w3 = DeviceWeight::upload(device(), arena, "too_big", DType::F32, ne, wb.data(), o);
    ASSERT_FALSE(w3.ok());
    EXPECT_NE(w3.error().message().find("too_big"), std::string::npos) << w3.error().message();
}

TEST_F(Moe, moe_sum_matches_reference) {
    const int64_t M = 70, n_used = 5, n = 6;
    const auto y = randn(size_t(M * n_used * n), 40), w = randn(size_t(n_used * n), 41);
    OpHarness h(device(), pipelines());
    const TensorId out = h.op(TDM_OP_MOE_SUM, {h.input_f32({M, n_used, n}, y), h.input_f32({n_used, n}, w, "w")});
    h.run({out});
    EXPECT_LT(ref::nmse(h.f32(out), ref::moe_sum(y, w, M, n_used)), 1e-13);
}

TEST_F(Moe, moe_sum_with_per_expert_scales_weighs_each_slot_by_its_experts_scale) {
    // Gemma 4's router: slot weight w[t][j] * scale[ids[t][j]]; an id outside the
    // experts weighs nothing. Scales from a weight and from an activation.
    const int64_t M = 70, n_used = 3, n = 4, E = 6;
    const auto y = randn(size_t(M * n_used * n), 42), w = randn(size_t(n_used * n), 43), sc = randn(size_t(E), 44);
    const std::vector<int32_t> ids = {0, 5, 2, 1, 1, 4, 3, 0, 7, 5, -1, 2};
    std::vector<uint8_t> sb(size_t(E) * 4);
    std::memcpy(sb.data(), sc.data(), sb.size());
    OpHarness h(device(), pipelines());
    const TensorId ty = h.input_f32({M, n_used, n}, y), tw = h.input_f32({n_used, n}, w, "w"),
                   ti = h.input_i32({n_used, n}, ids);
    const TensorId from_weight = h.op(TDM_OP_MOE_SUM, {ty, tw, ti, h.weight(DType::F32, E, 1, sb)});
    const TensorId from_act = h.op(TDM_OP_MOE_SUM, {ty, tw, ti, h.input_f32({E}, sc, "scale")});
    h.run({from_weight, from_act});
    std::vector<float> ws(w.size());
    for (size_t k = 0; k < w.size(); ++k) ws[k] = ids[k] >= 0 && ids[k] < E ? w[k] * sc[size_t(ids[k])] : 0.0f;
    const auto want = ref::moe_sum(y, ws, M, n_used);
    EXPECT_LT(ref::nmse(h.f32(from_weight), want), 1e-13);
    EXPECT_LT(ref::nmse(h.f32(from_act), want), 1e-13);
    // ids without scales (3 inputs) are refused when the op is added
    OpHarness h3(device(), pipelines());
    OpDesc d;
    d.op = TDM_OP_MOE_SUM;
    d.in[0] = h3.input_f32({M, n_used, n}, y);
    d.in[1] = h3.input_f32({n_used, n}, w, "w");
    d.in[2] = h3.input_i32({n_used, n}, ids);
    d.n_in = 3;
    auto bad = h3.graph().op(d);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("both the ids and the scales"), std::string::npos) << bad.error().message();
}

TEST_F(Moe, routed_experts_then_moe_sum_match_the_reference_expert_mix) {
    // The MoE FFN's shape: gate/up through matmul_id, SwiGLU, down through matmul_id
    // with per-slot inputs, weighted sum over the slots.
    const int64_t H = 64, I = 32, E = 8, n_used = 2, n = 3;
    const DType t = DType::Q8_0;
    const auto gate = quantize_matrix(t, randn(size_t(H * I * E), 50, 0.1f).data(), I * E, H);
    const auto up = quantize_matrix(t, randn(size_t(H * I * E), 51, 0.1f).data(), I * E, H);
    const auto down = quantize_matrix(t, randn(size_t(I * H * E), 52, 0.1f).data(), H * E, I);
    const auto x = randn(size_t(H * n), 53);
    const auto ids = random_ids(size_t(n_used * n), int32_t(E), 54);
    const auto wts = randn(size_t(n_used * n), 55);
    OpHarness h(device(), pipelines());
    const TensorId tx = h.input_f32({H, n}, x), ti = h.input_i32({n_used, n}, ids);
    const TensorId g = h.op(TDM_OP_MATMUL_ID, {h.weight_nd(t, {H, I, E}, gate), tx, ti});
    const TensorId u = h.op(TDM_OP_MATMUL_ID, {h.weight_nd(t, {H, I, E}, up), tx, ti});
    const TensorId a = h.op(TDM_OP_GLU, {g, u}, {TDM_GLU_SWIGLU});
    const TensorId d = h.op(TDM_OP_MATMUL_ID, {h.weight_nd(t, {I, H, E}, down), a, ti});
    const TensorId out = h.op(TDM_OP_MOE_SUM, {d, h.input_f32({n_used, n}, wts, "w")});
    h.run({out});
    const auto rg = ref::matmul_id(x, t, gate, H, I, E, ids, n_used);
    const auto ru = ref::matmul_id(x, t, up, H, I, E, ids, n_used);
    const auto rd = ref::matmul_id(ref::swiglu(rg, ru), t, down, I, H, E, ids, n_used);
    EXPECT_LT(ref::nmse(h.f32(out), ref::moe_sum(rd, wts, H, n_used)), 1e-9);
}

}  // namespace
}  // namespace tdm
