// SPDX-License-Identifier: Apache-2.0
// tests/ops/int8_matmul_test.cpp: the int8 activation path of Q8_0 matmuls
// (Graph::set_int8_matmul, host/ops/matmul_q8.cpp). quantize_q8 against a plain
// loop (llama.cpp's Q8_0 rule: d = max|x| / 127, round half away from zero);
// matmul_q8 against a double-accumulated product of the quantized rows; the graph
// rewrite (one quantize per input, other weight types untouched); and the error
// against the f32-activation path. Batch invariance: batch_invariance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/quant.h"
#include "ops/op_def.h"
#include "support/device_fixture.h"
#include "support/op_harness.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using test::OpHarness;

using test::randn;

// One quantized row as quantize_q8 writes it: K/4 words of int8, then K/32 f32 scales.
struct Q8Row {
    std::vector<int8_t> q;
    std::vector<float> d;
};

Q8Row unpack_row(const int32_t* words, int64_t K) {
    Q8Row r;
    r.q.resize(size_t(K));
    std::memcpy(r.q.data(), words, size_t(K));
    r.d.resize(size_t(K / 32));
    std::memcpy(r.d.data(), words + K / 4, size_t(K / 32) * 4);
    return r;
}

// Runs quantize_q8 alone on rows [K, n] of x; returns the rows.
std::vector<Q8Row> quantize_on_device(vk::Device& dev, vk::PipelineManager& pm, const std::vector<float>& x,
                                      int64_t K, int64_t n) {
    OpHarness h(dev, pm);
    OpDesc d;
    d.op = kOpInternalQuantizeQ8;
    d.in[0] = h.input_f32({K, n}, x);
    d.n_in = 1;
    auto q = h.graph().op(d);
    EXPECT_TRUE(q.ok()) << q.error().message();
    h.run({*q});
    const auto words = h.i32(*q);
    const size_t row_words = q8_row_words(K);
    EXPECT_EQ(words.size(), row_words * size_t(n));
    std::vector<Q8Row> rows;
    for (int64_t t = 0; t < n; ++t) rows.push_back(unpack_row(words.data() + size_t(t) * row_words, K));
    return rows;
}

class Int8Matmul : public test::DeviceTest {};

TEST_F(Int8Matmul, quantize_q8_follows_the_q8_0_rule_block_by_block) {
    const int64_t K = 96, n = 3;
    auto x = randn(size_t(K * n), 1);
    for (int j = 0; j < 32; ++j) x[size_t(32 + j)] = 0.0f;  // an all-zero block: d = 0, q = 0
    x[70] = 12.7f;                                           // a block whose max is exactly 127 * 0.1
    // a block scaled to d = 1 (max 127) holding 0.49999997: roundf gives 0, floor(v + 0.5) gives 1
    for (int j = 0; j < 32; ++j) x[size_t(K + j)] = float(j % 5);
    x[size_t(K)] = 127.0f;
    x[size_t(K + 1)] = 0.49999997f;
    const auto rows = quantize_on_device(device(), pipelines(), x, K, n);
    ASSERT_EQ(rows.size(), size_t(n));
    for (int64_t t = 0; t < n; ++t)
        for (int64_t b = 0; b < K / 32; ++b) {
            const float* xb = x.data() + t * K + b * 32;
            float amax = 0.0f;
            for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
            const float d = rows[size_t(t)].d[size_t(b)];
            EXPECT_NEAR(d, amax / 127.0f, 1e-6f * amax) << "row " << t << " block " << b;
            for (int j = 0; j < 32; ++j) {
                const int8_t q = rows[size_t(t)].q[size_t(b * 32 + j)];
                if (d == 0.0f) {
                    EXPECT_EQ(q, 0);
                    continue;
                }
                const double v = double(xb[j]) / double(d);
                // away from a rounding tie, the rounded value is unambiguous
                if (std::fabs(std::fabs(v) - std::floor(std::fabs(v)) - 0.5) > 1e-4) {
                    EXPECT_EQ(int(q), int(std::copysign(std::floor(std::fabs(v) + 0.5), v)))
                        << "row " << t << " element " << b * 32 + j;
                }
                EXPECT_LE(std::abs(int(q)), 127);
            }
        }
    EXPECT_EQ(rows[1].d[0], 1.0f);
    EXPECT_EQ(rows[1].q[1], 0) << "0.49999997 rounds to 0";
}

// y = sum over blocks of dW * dx * (integer dot of the block), accumulated in double.
std::vector<double> reference(const std::vector<uint8_t>& w, const std::vector<Q8Row>& xq, int64_t K, int64_t M) {
    std::vector<double> y;
    const size_t row_bytes = size_t(K / 32) * 34;
    for (const Q8Row& x : xq)
        for (int64_t r = 0; r < M; ++r) {
            double acc = 0;
            for (int64_t b = 0; b < K / 32; ++b) {
                const uint8_t* blk = w.data() + size_t(r) * row_bytes + size_t(b) * 34;
                float dw;
                dequantize_row(DType::F16, blk, &dw, 1);
                int64_t s = 0;
                for (int j = 0; j < 32; ++j) s += int64_t(int8_t(blk[2 + j])) * x.q[size_t(b * 32 + j)];
                acc += double(dw) * double(x.d[size_t(b)]) * double(s);
            }
            y.push_back(acc);
        }
    return y;
}

TEST_F(Int8Matmul, matmul_q8_equals_the_products_of_the_quantized_rows) {
    const int64_t K = 256, M = 150, n = 5;
    const auto wf = randn(size_t(K * M), 2, 0.05f);
    const auto wb = quantize_matrix(DType::Q8_0, wf.data(), M, K);
    const auto x = randn(size_t(K * n), 3);
    const auto add = randn(size_t(M * n), 4);
    const auto xq = quantize_on_device(device(), pipelines(), x, K, n);
    const auto want = reference(wb, xq, K, M);
    for (bool fuse_add : {false, true}) {
        OpHarness h(device(), pipelines());
        h.graph().set_int8_matmul(true);
        // small bindings: the weight in row chunks of one 64-row tile (256-byte rows)
        WeightUploadOptions wo;
        wo.max_binding_bytes = 64 * 256;
        const TensorId w = h.weight(DType::Q8_0, K, M, wb, wo);
        const TensorId xi = h.input_f32({K, n}, x);
        const TensorId y = fuse_add ? h.op(TDM_OP_MATMUL, {w, xi, h.input_f32({M, n}, add, "add")})
                                    : h.op(TDM_OP_MATMUL, {w, xi});
        EXPECT_EQ(h.graph().nodes().back().desc.op, kOpInternalMatmulQ8);
        h.run({y});
        const auto got = h.f32(y);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
            const double e = want[i] + (fuse_add ? add[i] : 0.0f);
            EXPECT_NEAR(got[i], e, 1e-5 * (1.0 + std::fabs(e))) << "element " << i << (fuse_add ? " (+add)" : "");
        }
    }
}

// An input that is a view (columns 32.. of wider rows: an offset and a row stride), and a
// block holding a NaN: the NaN reaches that token's results, as with f32 activations, and
// no other token's.
TEST_F(Int8Matmul, views_and_non_finite_inputs_behave_as_with_f32_activations) {
    const int64_t K = 128, M = 9, n = 3, wide = K + 64;
    const auto wf = randn(size_t(K * M), 9, 0.05f);
    const auto wb = quantize_matrix(DType::Q8_0, wf.data(), M, K);
    auto x = randn(size_t(wide * n), 10);
    std::vector<float> y[2];
    for (int int8 = 0; int8 < 2; ++int8) {
        OpHarness h(device(), pipelines());
        h.graph().set_int8_matmul(int8 == 1);
        const TensorId view = h.op(TDM_OP_VIEW_COLS, {h.input_f32({wide, n}, x)}, {32, int32_t(K)});
        const TensorId out = h.op(TDM_OP_MATMUL, {h.weight(DType::Q8_0, K, M, wb), view});
        if (int8) {
            EXPECT_EQ(h.graph().nodes().back().desc.op, kOpInternalMatmulQ8);
        }
        h.run({out});
        y[int8] = h.f32(out);
    }
    for (size_t i = 0; i < y[0].size(); ++i) EXPECT_NEAR(y[1][i], y[0][i], 2e-2 * (1.0 + std::fabs(y[0][i]))) << i;

    x[size_t(wide + 32 + 40)] = std::numeric_limits<float>::quiet_NaN();  // token 1, second block of the view
    x[size_t(2 * wide + 32 + 5)] = std::numeric_limits<float>::infinity();  // token 2
    OpHarness h(device(), pipelines());
    h.graph().set_int8_matmul(true);
    const TensorId view = h.op(TDM_OP_VIEW_COLS, {h.input_f32({wide, n}, x)}, {32, int32_t(K)});
    const TensorId out = h.op(TDM_OP_MATMUL, {h.weight(DType::Q8_0, K, M, wb), view});
    h.run({out});
    const auto got = h.f32(out);
    for (int64_t r = 0; r < M; ++r) {
        EXPECT_TRUE(std::isfinite(got[size_t(r)])) << "token 0 row " << r;
        EXPECT_TRUE(std::isnan(got[size_t(M + r)])) << "token 1 row " << r;
        EXPECT_FALSE(std::isfinite(got[size_t(2 * M + r)])) << "token 2 row " << r;
    }
}

TEST_F(Int8Matmul, the_graph_quantizes_each_input_once_and_leaves_other_weight_types_alone) {
    const int64_t K = 64, M = 8;
    const auto wf = randn(size_t(K * M), 5);
    OpHarness h(device(), pipelines());
    h.graph().set_int8_matmul(true);
    const TensorId wq = h.weight(DType::Q8_0, K, M, quantize_matrix(DType::Q8_0, wf.data(), M, K));
    const TensorId wk = h.weight(DType::Q8_0, K, M, quantize_matrix(DType::Q8_0, wf.data(), M, K));
    const TensorId wf16 = h.weight(DType::F16, K, M, quantize_matrix(DType::F16, wf.data(), M, K));
    const TensorId x = h.input_f32({K, 2}, randn(size_t(K * 2), 6));
    h.op(TDM_OP_MATMUL, {wq, x});
    h.op(TDM_OP_MATMUL, {wk, x});
    h.op(TDM_OP_MATMUL, {wf16, x});
    int quantizes = 0, int8 = 0, plain = 0;
    for (const Node& node : h.graph().nodes()) {
        quantizes += node.desc.op == kOpInternalQuantizeQ8;
        int8 += node.desc.op == kOpInternalMatmulQ8;
        plain += node.desc.op == TDM_OP_MATMUL;
    }
    EXPECT_EQ(quantizes, 1);
    EXPECT_EQ(int8, 2);
    EXPECT_EQ(plain, 1);
}

// What 8-bit activations cost in accuracy: the int8 path against the f32-activation path
// on the same Q8_0 weight (llama.cpp's CPU backend quantizes activations the same way).
TEST_F(Int8Matmul, error_against_the_f32_activation_path_is_that_of_8_bit_activations) {
    const int64_t K = 1024, M = 64, n = 4;
    const auto wf = randn(size_t(K * M), 7, 0.03f);
    const auto wb = quantize_matrix(DType::Q8_0, wf.data(), M, K);
    const auto x = randn(size_t(K * n), 8);
    std::vector<float> out[2];
    for (int int8 = 0; int8 < 2; ++int8) {
        OpHarness h(device(), pipelines());
        h.graph().set_int8_matmul(int8 == 1);
        const TensorId y = h.op(TDM_OP_MATMUL, {h.weight(DType::Q8_0, K, M, wb), h.input_f32({K, n}, x)});
        h.run({y});
        out[int8] = h.f32(y);
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < out[0].size(); ++i) {
        num += double(out[1][i] - out[0][i]) * double(out[1][i] - out[0][i]);
        den += double(out[0][i]) * double(out[0][i]);
    }
    const double rel = std::sqrt(num / den);
    EXPECT_GT(rel, 0.0) << "the int8 path did not run";
    EXPECT_LT(rel, 1e-2) << "relative RMS error " << rel;
}

}  // namespace
}  // namespace tdm
