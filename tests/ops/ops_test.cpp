// SPDX-License-Identifier: Apache-2.0
// tests/ops/ops_test.cpp: the ops of the library that have no test file of their own
// (<op>_test.cpp beside this one: rope, layer_norm, add_rms_norm, ...) against the
// plain-C++ reference (tests/support/reference.h, double accumulation), on the test
// device with the validation layer on.
//
// To add a case: build the op with OpHarness, run, and compare with the reference
// using nmse (normalized mean squared error) or exact equality for integer ops.
// Tolerances: 1e-10 for plain f32 arithmetic, looser where the device's exp/sin
// or f16 storage legitimately differ from double (said at each use).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/quant.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;

using test::randn;

class Ops : public test::DeviceTest {
protected:
    OpHarness h{device(), pipelines()};
};

// ----------------------------------------------------------------------------- weights

const DType kWeightTypesOps[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                              DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

class WeightOps : public test::DeviceTest, public ::testing::WithParamInterface<DType> {};

TEST_P(WeightOps, matmul_matches_reference_for_batches_and_fused_add) {
    const DType t = GetParam();
    const int64_t K = 512, M = 37;
    const auto wf = randn(size_t(K * M), 1, 0.1f);
    const auto wb = quantize_matrix(t, wf.data(), M, K);
    for (const char* layout : {"ks", "rl"})
    for (int64_t n : {1, 3, 16}) {
        const test::ScopedEnv env("TANDEM_MATMUL_LAYOUT", layout);
        OpHarness h(device(), pipelines());
        const auto x = randn(size_t(K * n), 2 + uint32_t(n));
        const auto a = randn(size_t(M * n), 50 + uint32_t(n));
        const TensorId w = h.weight(t, K, M, wb);
        const TensorId xi = h.input_f32({K, n}, x);
        const TensorId y = h.op(TDM_OP_MATMUL, {w, xi});
        const TensorId ya = h.op(TDM_OP_MATMUL, {w, xi, h.input_f32({M, n}, a, "add")});
        h.run({y, ya});
        const auto ref = ref::matmul(x, t, wb, M, K);
        EXPECT_LT(ref::nmse(h.f32(y), ref), 1e-9) << dtype_name(t) << " n=" << n << " " << layout;
        EXPECT_LT(ref::nmse(h.f32(ya), ref::add(ref, a, M)), 1e-9) << dtype_name(t) << " n=" << n << " " << layout;
    }
}

TEST(PlainWeightOps, matmul_reads_rows_that_end_in_a_partial_32_element_unit) {
    // Plain-type rows need only be 16 bytes long (F32 K % 4, F16/BF16 K % 8), so K may
    // end part-way through the kernels' 32-element units (Gemma 4's tiny PLE width 16,
    // a 5-layer PLE of 80): the last columns must count, in both layouts, batch-invariantly.
    for (const DType t : {DType::F32, DType::F16, DType::BF16})
    for (const int64_t K : {int64_t(8), int64_t(16), int64_t(40), int64_t(80)})
    for (const char* layout : {"ks", "rl"}) {
        const test::ScopedEnv env("TANDEM_MATMUL_LAYOUT", layout);
        const int64_t M = 21;
        const auto wf = randn(size_t(K * M), 60, 0.3f);
        const auto wb = quantize_matrix(t, wf.data(), M, K);
        const auto x = randn(size_t(K * 5), 61);
        OpHarness h(test::test_device(), test::test_pipelines());
        const TensorId w = h.weight(t, K, M, wb);
        const TensorId y5 = h.op(TDM_OP_MATMUL, {w, h.input_f32({K, 5}, x)});
        const TensorId y1 = h.op(TDM_OP_MATMUL, {w, h.input_f32({K, 1}, std::vector<float>(x.begin(), x.begin() + K), "x1")});
        h.run({y5, y1});
        const auto got = h.f32(y5);
        EXPECT_LT(ref::nmse(got, ref::matmul(x, t, wb, M, K)), 1e-12) << dtype_name(t) << " K=" << K << " " << layout;
        EXPECT_EQ(h.f32(y1), std::vector<float>(got.begin(), got.begin() + M)) << dtype_name(t) << " K=" << K;
    }
}

TEST_P(WeightOps, matmul_over_row_chunks_equals_single_binding) {
    // Weights larger than a binding are split in row chunks; force small ones. Quantized
    // types on the texel path are stored in tiles of 64 rows (weight_layout.h), so a chunk
    // holds at least one tile: 64 rows each, the last one partial.
    const DType t = GetParam();
    const int64_t K = 256, M = 150;
    const auto wf = randn(size_t(K * M), 3, 0.1f);
    const auto wb = quantize_matrix(t, wf.data(), M, K);
    const auto x = randn(size_t(K * 2), 4);
    std::vector<float> outs[2];
    for (int chunked = 0; chunked < 2; ++chunked) {
        OpHarness h(device(), pipelines());
        WeightUploadOptions o;
        if (chunked) o.max_binding_bytes = 64 * row_bytes(t, K);  // 64 rows per chunk
        const TensorId y = h.op(TDM_OP_MATMUL, {h.weight(t, K, M, wb, o), h.input_f32({K, 2}, x)});
        h.run({y});
        outs[chunked] = h.f32(y);
    }
    EXPECT_EQ(outs[0], outs[1]);
}

TEST_P(WeightOps, get_rows_matches_reference_dequantization) {
    const DType t = GetParam();
    const int64_t K = 512, M = 160;
    const auto wf = randn(size_t(K * M), 5, 0.5f);
    const auto wb = quantize_matrix(t, wf.data(), M, K);
    const std::vector<int32_t> ids = {3, 0, 159, 70, 70, 130};
    const auto ref = ref::get_rows(t, wb, K, ids);
    for (bool chunked : {false, true}) {
        WeightUploadOptions o;
        // chunked: the ids fall in chunks of 64, 64 and 32 rows; else in three row tiles of one
        if (chunked) o.max_binding_bytes = 64 * row_bytes(t, K);
        OpHarness h(device(), pipelines());
        const TensorId y = h.op(TDM_OP_GET_ROWS, {h.weight(t, K, M, wb, o), h.input_i32({6}, ids)});
        h.run({y});
        const auto got = h.f32(y);
        ASSERT_EQ(got.size(), ref.size());
        for (size_t i = 0; i < ref.size(); ++i)
            EXPECT_NEAR(got[i], ref[i], 1e-6f * (1.0f + std::fabs(ref[i])))
                << dtype_name(t) << " at " << i << (chunked ? " chunked" : "");
    }
}

TEST_P(WeightOps, odd_block_counts_read_their_last_block_whole) {
    // 3 blocks per row and 5 rows: the split-off 16-bit scale planes (Q4_0 d, Q5_0 d + qh)
    // hold an odd number of fields, so the last one ends half-way through a 32-bit word.
    const DType t = GetParam();
    const int64_t K = 3 * std::max<int64_t>(traits(t).block_size, 32), M = 5;
    const auto wf = randn(size_t(K * M), 6, 0.5f);
    const auto wb = quantize_matrix(t, wf.data(), M, K);
    const auto x = randn(size_t(K * 2), 7);
    const std::vector<int32_t> ids = {4, 0, 4};
    OpHarness h(device(), pipelines());
    const TensorId w = h.weight(t, K, M, wb);
    const TensorId y = h.op(TDM_OP_MATMUL, {w, h.input_f32({K, 2}, x)});
    const TensorId e = h.op(TDM_OP_GET_ROWS, {w, h.input_i32({3}, ids)});
    h.run({y, e});
    EXPECT_LT(ref::nmse(h.f32(y), ref::matmul(x, t, wb, M, K)), 1e-9) << dtype_name(t);
    const auto want = ref::get_rows(t, wb, K, ids);
    const auto got = h.f32(e);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-6f * (1.0f + std::fabs(want[i]))) << dtype_name(t) << " at " << i;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, WeightOps, ::testing::ValuesIn(kWeightTypesOps),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

// ----------------------------------------------------------------------------- elementwise

TEST_F(Ops, binary_ops_match_reference_with_and_without_broadcast) {
    const int64_t C = 37, R = 5;
    const auto a = randn(size_t(C * R), 10), b = randn(size_t(C * R), 11), b1 = randn(size_t(C), 12);
    const TensorId ta = h.input_f32({C, R}, a), tb = h.input_f32({C, R}, b), tb1 = h.input_f32({C, 1}, b1);
    const TensorId add = h.op(TDM_OP_ADD, {ta, tb}), mul = h.op(TDM_OP_MUL, {ta, tb}),
                   sub = h.op(TDM_OP_SUB, {ta, tb}), addb = h.op(TDM_OP_ADD, {ta, tb1}),
                   mulb = h.op(TDM_OP_MUL, {ta, tb1});
    h.run({add, mul, sub, addb, mulb});
    EXPECT_EQ(h.f32(add), ref::add(a, b, C));
    EXPECT_EQ(h.f32(mul), ref::mul(a, b, C));
    EXPECT_EQ(h.f32(sub), ref::sub(a, b, C));
    EXPECT_EQ(h.f32(addb), ref::add(a, b1, C));
    EXPECT_EQ(h.f32(mulb), ref::mul(a, b1, C));
}

TEST_F(Ops, binary_ops_broadcast_one_column_and_read_f32_weights) {
    // b as one column [1, rows] (a per-token scalar gate), here a column view of a
    // wider tensor, and b as an f32 weight: full shape, one row, one column.
    const int64_t C = 37, R = 5;
    const auto a = randn(size_t(C * R), 13), g4 = randn(size_t(4 * R), 14), wf = randn(size_t(C * R), 15);
    const std::vector<float> gate = ref::view_cols(g4, 4, 2, 1), w1(wf.begin(), wf.begin() + C),
                             wc(wf.begin(), wf.begin() + R);
    const TensorId ta = h.input_f32({C, R}, a);
    const TensorId tg = h.op(TDM_OP_VIEW_COLS, {h.input_f32({4, R}, g4, "g4")}, {2, 1});
    const TensorId wfull = h.weight(DType::F32, C, R, test::f32_bytes(wf)),
                   wrow = h.weight(DType::F32, C, 1, test::f32_bytes(w1)),
                   wcol = h.weight(DType::F32, 1, R, test::f32_bytes(wc));
    const TensorId addc = h.op(TDM_OP_ADD, {ta, tg}), mulc = h.op(TDM_OP_MUL, {ta, tg}), subc = h.op(TDM_OP_SUB, {ta, tg}),
                   addw = h.op(TDM_OP_ADD, {ta, wfull}), mulw = h.op(TDM_OP_MUL, {ta, wrow}),
                   subw = h.op(TDM_OP_SUB, {ta, wcol});
    h.run({addc, mulc, subc, addw, mulw, subw});
    EXPECT_EQ(h.f32(addc), ref::add_col(a, gate, C));
    EXPECT_EQ(h.f32(mulc), ref::mul_col(a, gate, C));
    EXPECT_EQ(h.f32(subc), ref::sub_col(a, gate, C));
    EXPECT_EQ(h.f32(addw), ref::add(a, wf, C));
    EXPECT_EQ(h.f32(mulw), ref::mul(a, w1, C));
    EXPECT_EQ(h.f32(subw), ref::sub_col(a, wc, C));
}

TEST_F(Ops, binary_ops_broadcast_one_element_over_everything) {
    // b as a single element (Gemma 4's learned layer scalar, a [1] weight), from a
    // weight and from an activation.
    const int64_t C = 37, R = 5;
    const auto a = randn(size_t(C * R), 16), s = randn(1, 17);
    std::vector<uint8_t> sb(4);
    std::memcpy(sb.data(), s.data(), 4);
    const TensorId ta = h.input_f32({C, R}, a);
    const TensorId mulw = h.op(TDM_OP_MUL, {ta, h.weight(DType::F32, 1, 1, sb)}),
                   addi = h.op(TDM_OP_ADD, {ta, h.input_f32({1, 1}, s, "s")});
    h.run({mulw, addi});
    std::vector<float> want_mul(a.size()), want_add(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        want_mul[i] = a[i] * s[0];
        want_add[i] = a[i] + s[0];
    }
    EXPECT_EQ(h.f32(mulw), want_mul);
    EXPECT_EQ(h.f32(addi), want_add);
}

TEST_F(Ops, unary_and_glu_ops_match_reference) {
    const int64_t C = 64, R = 3;
    const auto a = randn(size_t(C * R), 20, 3.0f), b = randn(size_t(C * R), 21);
    const TensorId ta = h.input_f32({C, R}, a), tb = h.input_f32({C, R}, b);
    struct Case { TensorId t; std::vector<float> ref; const char* name; };
    std::vector<Case> cases = {
        {h.op(TDM_OP_SCALE, {ta}, {}, {0.37f}), ref::scale(a, 0.37f), "scale"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_SILU}), ref::silu(a), "silu"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_GELU_TANH}), ref::gelu_tanh(a), "gelu_tanh"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_SIGMOID}), ref::sigmoid(a), "sigmoid"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_SOFTPLUS}), ref::softplus(a), "softplus"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_EXP}), ref::exp(a), "exp"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_NEG}), ref::neg(a), "neg"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_SOFTCAP}, {2.5f}), ref::softcap(a, 2.5f), "softcap"},
        {h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_ADD_SCALAR}, {-1.25f}), ref::add_scalar(a, -1.25f), "add_scalar"},
        {h.op(TDM_OP_GLU, {ta, tb}, {TDM_GLU_SWIGLU}), ref::swiglu(a, b), "swiglu"},
        {h.op(TDM_OP_GLU, {ta, tb}, {TDM_GLU_GEGLU}), ref::geglu(a, b), "geglu"},
    };
    std::vector<TensorId> outs;
    for (auto& c : cases) outs.push_back(c.t);
    h.run(outs);
    // exp/tanh on the device are accurate to a few ulp, not to double
    for (auto& c : cases) EXPECT_LT(ref::nmse(h.f32(c.t), c.ref), 1e-11) << c.name;
}

// ----------------------------------------------------------------------------- norms

TEST_F(Ops, rms_norm_in_all_weight_modes_and_l2_norm_match_reference) {
    const int64_t C = 96, R = 7;
    const auto x = randn(size_t(C * R), 30, 2.0f), w = randn(size_t(C), 31);
    const TensorId tx = h.input_f32({C, R}, x), tw = h.input_f32({C}, w, "w");
    const TensorId n0 = h.op(TDM_OP_RMS_NORM, {tx}, {TDM_NORM_NO_WEIGHT}, {1e-6f});
    const TensorId n1 = h.op(TDM_OP_RMS_NORM, {tx, tw}, {TDM_NORM_WEIGHT}, {1e-6f});
    const TensorId n2 = h.op(TDM_OP_RMS_NORM, {tx, tw}, {TDM_NORM_WEIGHT_PLUS_ONE}, {1e-5f});
    const TensorId l2 = h.op(TDM_OP_L2_NORM, {tx}, {}, {1e-6f});
    h.run({n0, n1, n2, l2});
    EXPECT_LT(ref::nmse(h.f32(n0), ref::rms_norm(x, C, 1e-6f, ref::NormWeight::None)), 1e-12);
    EXPECT_LT(ref::nmse(h.f32(n1), ref::rms_norm(x, C, 1e-6f, ref::NormWeight::Plain, w)), 1e-12);
    EXPECT_LT(ref::nmse(h.f32(n2), ref::rms_norm(x, C, 1e-5f, ref::NormWeight::OnePlus, w)), 1e-12);
    EXPECT_LT(ref::nmse(h.f32(l2), ref::l2_norm(x, C, 1e-6f)), 1e-12);
}

TEST_F(Ops, norm_over_head_rows_of_a_column_view_matches_reference) {
    // q|gate interleaved per head (Qwen3.5): view the q half of each head row.
    const int64_t D = 32, H = 3, N = 2;
    const auto qg = randn(size_t(2 * D * H * N), 33);
    const auto w = randn(size_t(D), 34);
    const TensorId t = h.input_f32({2 * D * H, N}, qg);
    const TensorId rows = h.op(TDM_OP_RESHAPE, {t}, {int32_t(2 * D), int32_t(H * N)});
    const TensorId q = h.op(TDM_OP_VIEW_COLS, {rows}, {0, int32_t(D)});
    const TensorId y = h.op(TDM_OP_RMS_NORM, {q, h.input_f32({D}, w, "w")}, {TDM_NORM_WEIGHT}, {1e-6f});
    h.run({y});
    const auto qv = ref::view_cols(qg, 2 * D, 0, D);
    EXPECT_LT(ref::nmse(h.f32(y), ref::rms_norm(qv, D, 1e-6f, ref::NormWeight::Plain, w)), 1e-12);
}

TEST_F(Ops, gated_rms_norm_matches_reference) {
    const int64_t D = 64, R = 6;
    const auto o = randn(size_t(D * R), 35), z = randn(size_t(D * R), 36), w = randn(size_t(D), 37);
    const TensorId y =
        h.op(TDM_OP_GATED_RMS_NORM, {h.input_f32({D, R}, o), h.input_f32({D}, w, "w"), h.input_f32({D, R}, z, "z")}, {},
             {1e-6f});
    h.run({y});
    EXPECT_LT(ref::nmse(h.f32(y), ref::gated_rms_norm(o, z, D, D, w, 1e-6f)), 1e-11);
}

// ----------------------------------------------------------------------------- softmax, selection

TEST_F(Ops, softmax_matches_reference) {
    const int64_t C = 300, R = 4;
    const auto x = randn(size_t(C * R), 50, 4.0f);
    const TensorId y = h.op(TDM_OP_SOFTMAX, {h.input_f32({C, R}, x)}, {}, {0.5f});
    h.run({y});
    EXPECT_LT(ref::nmse(h.f32(y), ref::softmax(x, C, 0.5f)), 1e-11);
}

TEST_F(Ops, argmax_and_top_k_match_reference_including_ties) {
    const int64_t C = 1000, R = 3;
    auto x = randn(size_t(C * R), 60);
    x[5] = x[700] = 9.0f;           // row 0: tie at the maximum -> lowest index
    x[C + 10] = x[C + 11] = 5.0f;   // row 1: tie inside the top-k
    x[C + 999] = 6.0f;
    const TensorId tx = h.input_f32({C, R}, x);
    const TensorId am = h.op(TDM_OP_ARGMAX, {tx});
    const TensorId tk = h.op(TDM_OP_TOP_K, {tx}, {7});
    const TensorId tv = h.graph().second_output(tk);
    h.run({am, tk, tv});
    EXPECT_EQ(h.i32(am), ref::argmax(x, C));
    const auto ids = h.i32(tk);
    EXPECT_EQ(ids, ref::top_k(x, C, 7));
    const auto vals = h.f32(tv);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(vals[i], x[(i / 7) * C + size_t(ids[i])]);
}

// ----------------------------------------------------------------------------- layout ops

TEST_F(Ops, concat_copy_cast_select_rows_and_views_match_reference) {
    const int64_t A = 12, B = 20, R = 5;
    const auto a = randn(size_t(A * R), 70), b = randn(size_t(B * R), 71);
    const TensorId ta = h.input_f32({A, R}, a), tb = h.input_f32({B, R}, b);
    const TensorId cat = h.op(TDM_OP_CONCAT, {ta, tb});
    const TensorId view = h.op(TDM_OP_VIEW_COLS, {cat}, {4, 16});
    const TensorId cp = h.op(TDM_OP_COPY, {view});
    const TensorId f16 = h.op(TDM_OP_CAST, {ta}, {TDM_DTYPE_F16});
    const TensorId bf16 = h.op(TDM_OP_CAST, {ta}, {TDM_DTYPE_BF16});
    const TensorId sel = h.op(TDM_OP_SELECT_ROWS, {cat, h.input_i32({3}, {4, 0, 2})});
    h.run({cat, cp, f16, bf16, sel});
    const auto rcat = ref::concat(a, A, b, B);
    EXPECT_EQ(h.f32(cat), rcat);
    EXPECT_EQ(h.f32(cp), ref::view_cols(rcat, A + B, 4, 16));
    EXPECT_EQ(h.f32(f16), ref::cast_round(a, DType::F16));
    EXPECT_EQ(h.f32(bf16), ref::cast_round(a, DType::BF16));
    const std::vector<int32_t> ids = {4, 0, 2};
    EXPECT_EQ(h.f32(sel), ref::select_rows(rcat, A + B, ids));
}

// ----------------------------------------------------------------------------- KV and attention

struct AttnCase {
    const char* name;
    int n_head, n_kv_head, dk, dv;
    int window;
    float softcap;
    bool f16;
};

class AttentionOps : public test::DeviceTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(AttentionOps, paged_attention_after_kv_store_matches_reference) {
    const AttnCase c = GetParam();
    const int block = 16;
    const int kv_len = 300;  // two 256-key chunks (ks) or splits (split), many (rl)
    const int n_q = 4;       // the last 4 positions are queried (a verify batch)
    // two sequences with interleaved, non-contiguous blocks; we use sequence 1
    const int nb = (kv_len + block - 1) / block;
    std::vector<std::vector<int32_t>> lists(2);
    for (int b = 0; b < nb; ++b) {
        lists[0].push_back(2 * b);
        lists[1].push_back(2 * (nb - 1 - b) + 1);
    }
    auto kv = test::make_test_kv(device(), uint32_t(c.n_kv_head), uint32_t(c.dk), uint32_t(c.dv), block,
                                 uint32_t(2 * nb), lists, c.f16);
    const auto k = randn(size_t(kv_len * c.n_kv_head * c.dk), 80);
    const auto v = randn(size_t(kv_len * c.n_kv_head * c.dv), 81);
    const auto q = randn(size_t(n_q * c.n_head * c.dk), 82);
    const float scale = 1.0f / std::sqrt(float(c.dk)) * 1.3f;

    // 1) store all K/V of sequence 1 (one batch of kv_len tokens)
    {
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos(kv_len), seq(kv_len, 1);
        for (int i = 0; i < kv_len; ++i) pos[i] = i;
        h.batch(pos, seq);
        const TensorId st = h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv->binding), h.input_f32({c.dk, c.n_kv_head, kv_len}, k, "k"),
                                                   h.input_f32({c.dv, c.n_kv_head, kv_len}, v, "v")});
        (void)st;
        h.run({});
    }
    // 2) attend from the last n_q positions, in each layout (host/ops/attention_layout.h)
    const auto kr = c.f16 ? ref::cast_round(k, DType::F16) : k;
    const auto vr = c.f16 ? ref::cast_round(v, DType::F16) : v;
    ref::AttnParams p;
    p.n_head = c.n_head;
    p.n_head_kv = c.n_kv_head;
    p.head_dim = c.dk;
    p.head_dim_v = c.dv;
    p.scale = scale;
    p.softcap = c.softcap;
    p.window = c.window;
    for (const char* layout : {"ks", "rl", "split"}) {
        const test::ScopedEnv env("TANDEM_ATTENTION_LAYOUT", layout);
        OpHarness h(device(), pipelines());
        std::vector<int32_t> qpos, seq(n_q, 1);
        for (int i = 0; i < n_q; ++i) qpos.push_back(kv_len - n_q + i);
        h.batch(qpos, seq);
        const TensorId o = h.op(TDM_OP_ATTENTION, {h.input_f32({c.dk, c.n_head, n_q}, q, "q"), h.graph().kv(&kv->binding)},
                                {c.window}, {scale, c.softcap});
        h.run({o});
        EXPECT_LT(ref::nmse(h.f32(o), ref::attention(q, qpos, kr, vr, {}, p)), 1e-10) << c.name << ", layout " << layout;
    }
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionOps,
                         ::testing::Values(AttnCase{"mha_f16", 4, 4, 64, 64, 0, 0, true},
                                           AttnCase{"gqa_f16", 8, 2, 64, 64, 0, 0, true},
                                           AttnCase{"gqa_f32", 6, 2, 32, 32, 0, 0, false},
                                           AttnCase{"window", 4, 2, 64, 64, 37, 0, true},
                                           AttnCase{"softcap", 4, 1, 64, 64, 0, 20.0f, true},
                                           AttnCase{"dv_differs", 4, 2, 64, 128, 0, 0, true},
                                           AttnCase{"head_dim_256", 2, 1, 256, 256, 0, 0, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// ----------------------------------------------------------------------------- validation

TEST_F(Ops, shape_errors_name_the_op_and_the_shapes) {
    const TensorId a = h.input_f32({8, 2}, std::vector<float>(16)), b = h.input_f32({9, 2}, std::vector<float>(18));
    OpDesc d;
    d.op = TDM_OP_ADD;
    d.in[0] = a;
    d.in[1] = b;
    d.n_in = 2;
    auto r = h.graph().op(d);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("add: shapes differ"), std::string::npos) << r.error().message();
    d.op = TDM_OP_ROPE;
    d.f[0] = 10000.0f;
    auto r2 = h.graph().op(d);
    ASSERT_FALSE(r2.ok());
    EXPECT_NE(r2.error().message().find("rope"), std::string::npos) << r2.error().message();
}

}  // namespace
}  // namespace tdm
