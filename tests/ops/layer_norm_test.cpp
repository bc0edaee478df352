// SPDX-License-Identifier: Apache-2.0
// tests/ops/layer_norm_test.cpp: TDM_OP_LAYER_NORM (host/ops/norm.cpp) against the
// double-precision reference (tests/support/reference.h, ref::layer_norm): without weight,
// with a weight, with weight and bias (as weights and as activations), and the bias width check.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/op_def.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::f32_bytes;
using test::randn;

class LayerNormOps : public test::DeviceTest {
protected:
    OpHarness h{device(), pipelines()};
};

TEST_F(LayerNormOps, layer_norm_with_and_without_weight_and_bias_matches_reference) {
    const int64_t C = 1536, R = 5;
    std::vector<float> x = randn(size_t(C * R), 41, 2.0f);
    for (int64_t c = 0; c < C; ++c) x[size_t(C + c)] += 300.0f;  // a row with a large mean
    const auto w = randn(size_t(C), 42), b = randn(size_t(C), 43);
    const TensorId tx = h.input_f32({C, R}, x);
    const TensorId ww = h.weight(DType::F32, C, 1, f32_bytes(w)), bw = h.weight(DType::F32, C, 1, f32_bytes(b));
    const TensorId wa = h.input_f32({C}, w, "w"), ba = h.input_f32({C}, b, "b");
    const TensorId plain = h.op(TDM_OP_LAYER_NORM, {tx}, {}, {1e-5f});
    const TensorId weighted = h.op(TDM_OP_LAYER_NORM, {tx, ww}, {}, {1e-6f});
    const TensorId biased = h.op(TDM_OP_LAYER_NORM, {tx, ww, bw}, {}, {1e-5f});
    const TensorId from_acts = h.op(TDM_OP_LAYER_NORM, {tx, wa, ba}, {}, {1e-5f});
    h.run({plain, weighted, biased, from_acts});
    // The row with mean 300 costs float's resolution there (its mean is summed in float).
    EXPECT_LT(ref::nmse(h.f32(plain), ref::layer_norm(x, C, 1e-5f)), 1e-11);
    EXPECT_LT(ref::nmse(h.f32(weighted), ref::layer_norm(x, C, 1e-6f, w)), 1e-11);
    const auto want = ref::layer_norm(x, C, 1e-5f, w, b);
    EXPECT_LT(ref::nmse(h.f32(biased), want), 1e-11);
    EXPECT_EQ(h.f32(from_acts), h.f32(biased));
}

TEST_F(LayerNormOps, layer_norm_refuses_a_bias_of_the_wrong_width) {
    const TensorId tx = h.input_f32({64, 2}, randn(128, 44));
    const TensorId w = h.input_f32({64}, randn(64, 45), "w"), b = h.input_f32({32}, randn(32, 46), "b");
    OpDesc d;
    d.op = TDM_OP_LAYER_NORM;
    d.in[0] = tx, d.in[1] = w, d.in[2] = b;
    d.n_in = 3;
    d.f[0] = 1e-5f;
    auto r = h.graph().op(d);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), TDM_ERR_SHAPE);
    EXPECT_NE(r.error().message().find("bias"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tdm
