// SPDX-License-Identifier: Apache-2.0
// tests/ops/add_rms_norm_test.cpp: TDM_OP_ADD_RMS_NORM (host/ops/add_rms_norm.cpp)
// against a plain C++ reference, and bit for bit against TDM_OP_ADD followed by
// TDM_OP_RMS_NORM, which it replaces in pre-norm layers: the sum, then the norm,
// for each weight mode (weight or activation), row widths around the workgroup
// size and batches of 1 to 16 rows, on column views as well.
#include <gtest/gtest.h>
#include <tandem/tandem.h>

#include <cmath>
#include <cstring>

#include "graph/graph.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::randn;

// The reference: s = a + b in f32 (the sum an f32 add gives), then
// y = s / sqrt(mean(s^2) + eps) * W in double per row.
struct AddRmsNormReference {
    std::vector<float> sum;
    std::vector<double> norm;
};
AddRmsNormReference add_rms_norm_reference(const std::vector<float>& a, const std::vector<float>& b,
                                           const std::vector<float>& w, int64_t cols, float eps, int mode) {
    AddRmsNormReference r;
    r.sum.resize(a.size());
    r.norm.resize(a.size());
    for (size_t k = 0; k < a.size(); ++k) r.sum[k] = a[k] + b[k];
    for (size_t row = 0; row < a.size() / size_t(cols); ++row) {
        const float* s = &r.sum[row * size_t(cols)];
        double ss = 0;
        for (int64_t c = 0; c < cols; ++c) ss += double(s[c]) * double(s[c]);
        const double scale = 1.0 / std::sqrt(ss / double(cols) + double(eps));
        for (int64_t c = 0; c < cols; ++c) {
            const double weight = mode == TDM_NORM_WEIGHT ? double(w[size_t(c)])
                                  : mode == TDM_NORM_WEIGHT_PLUS_ONE ? 1.0 + double(w[size_t(c)])
                                                                     : 1.0;
            r.norm[row * size_t(cols) + size_t(c)] = double(s[c]) * scale * weight;
        }
    }
    return r;
}

double worst_relative_add_rms_norm(const std::vector<float>& got, const std::vector<double>& want) {
    double worst = 0;
    for (size_t k = 0; k < got.size(); ++k)
        worst = std::max(worst, std::abs(double(got[k]) - want[k]) / (1e-3 + std::abs(want[k])));
    return worst;
}

bool same_bits_add_rms_norm(const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

class AddRmsNorm : public test::DeviceTest {};

TEST_F(AddRmsNorm, matches_the_reference_in_every_weight_mode) {
    const int64_t C = 96, R = 7;
    const auto a = randn(size_t(C * R), 40, 2.0f), b = randn(size_t(C * R), 41), w = randn(size_t(C), 42);
    for (int mode : {TDM_NORM_NO_WEIGHT, TDM_NORM_WEIGHT, TDM_NORM_WEIGHT_PLUS_ONE}) {
        OpHarness h(device(), pipelines());
        std::vector<TensorId> in = {h.input_f32({C, R}, a, "a"), h.input_f32({C, R}, b, "b")};
        if (mode != TDM_NORM_NO_WEIGHT) in.push_back(h.input_f32({C}, w, "w"));
        const TensorId s = h.op(TDM_OP_ADD_RMS_NORM, in, {mode}, {1e-6f});
        const TensorId y = h.graph().second_output(s);
        ASSERT_NE(y, kNoTensor);
        h.run({s, y});
        const auto ref = add_rms_norm_reference(a, b, w, C, 1e-6f, mode);
        EXPECT_TRUE(same_bits_add_rms_norm(h.f32(s), ref.sum)) << "mode " << mode << ": the sum is an f32 add";
        EXPECT_LT(worst_relative_add_rms_norm(h.f32(y), ref.norm), 1e-5) << "mode " << mode;
    }
}

TEST_F(AddRmsNorm, equals_add_then_rms_norm_bit_for_bit) {
    for (int64_t C : {96, 1000, 2048, 4100})
    for (int64_t R : {1, 3, 16})
    for (int mode : {TDM_NORM_WEIGHT, TDM_NORM_WEIGHT_PLUS_ONE, TDM_NORM_NO_WEIGHT})
    for (bool weight_tensor : {true, false}) {
        if (mode == TDM_NORM_NO_WEIGHT && weight_tensor) continue;
        const uint32_t seed = uint32_t(C * 7 + R * 3 + mode);
        const auto a = randn(size_t(C * R), seed, 3.0f), b = randn(size_t(C * R), seed + 1);
        const auto w = randn(size_t(C), seed + 2, 0.5f);
        OpHarness h(device(), pipelines());
        const TensorId ta = h.input_f32({C, R}, a, "a"), tb = h.input_f32({C, R}, b, "b");
        std::vector<TensorId> weight;
        if (mode != TDM_NORM_NO_WEIGHT) {
            std::vector<uint8_t> bytes(w.size() * sizeof(float));
            std::memcpy(bytes.data(), w.data(), bytes.size());
            weight.push_back(weight_tensor ? h.weight(DType::F32, C, 1, bytes) : h.input_f32({C}, w, "w"));
        }
        const TensorId sum = h.op(TDM_OP_ADD, {ta, tb});
        std::vector<TensorId> norm_in = {sum};
        norm_in.insert(norm_in.end(), weight.begin(), weight.end());
        const TensorId norm = h.op(TDM_OP_RMS_NORM, norm_in, {mode}, {1e-6f});
        std::vector<TensorId> fused_in = {ta, tb};
        fused_in.insert(fused_in.end(), weight.begin(), weight.end());
        const TensorId fused = h.op(TDM_OP_ADD_RMS_NORM, fused_in, {mode}, {1e-6f});
        const TensorId fused_norm = h.graph().second_output(fused);
        h.run({sum, norm, fused, fused_norm});
        const std::string where = fmt::format("{} x {}, mode {}, weight {}", C, R, mode, weight_tensor);
        EXPECT_TRUE(same_bits_add_rms_norm(h.f32(fused), h.f32(sum))) << where;
        EXPECT_TRUE(same_bits_add_rms_norm(h.f32(fused_norm), h.f32(norm))) << where;
    }
}

TEST_F(AddRmsNorm, reads_column_views_and_each_row_is_independent_of_the_batch) {
    // a and b as the left half of wider rows; one row alone equals that row in a batch
    const int64_t C = 256, W = 2 * C, R = 5;
    const auto a = randn(size_t(W * R), 50), b = randn(size_t(W * R), 51), w = randn(size_t(C), 52);
    OpHarness h(device(), pipelines());
    const TensorId ta = h.op(TDM_OP_VIEW_COLS, {h.input_f32({W, R}, a, "a")}, {0, int32_t(C)});
    const TensorId tb = h.op(TDM_OP_VIEW_COLS, {h.input_f32({W, R}, b, "b")}, {int32_t(C), int32_t(C)});
    const TensorId tw = h.input_f32({C}, w, "w");
    const TensorId fused = h.op(TDM_OP_ADD_RMS_NORM, {ta, tb, tw}, {TDM_NORM_WEIGHT}, {1e-5f});
    const TensorId y = h.graph().second_output(fused);
    const TensorId sum = h.op(TDM_OP_ADD, {ta, tb});
    const TensorId norm = h.op(TDM_OP_RMS_NORM, {sum, tw}, {TDM_NORM_WEIGHT}, {1e-5f});
    h.run({fused, y, sum, norm});
    EXPECT_TRUE(same_bits_add_rms_norm(h.f32(fused), h.f32(sum)));
    EXPECT_TRUE(same_bits_add_rms_norm(h.f32(y), h.f32(norm)));
    const std::vector<float> batch = h.f32(y);
    for (int64_t r = 0; r < R; ++r) {
        OpHarness one(device(), pipelines());
        std::vector<float> ar(a.begin() + r * W, a.begin() + r * W + C), br(b.begin() + r * W + C, b.begin() + (r + 1) * W);
        const TensorId f = one.op(TDM_OP_ADD_RMS_NORM,
                                  {one.input_f32({C, 1}, ar, "a"), one.input_f32({C, 1}, br, "b"),
                                   one.input_f32({C}, w, "w")},
                                  {TDM_NORM_WEIGHT}, {1e-5f});
        const TensorId yr = one.graph().second_output(f);
        one.run({f, yr});
        const std::vector<float> alone = one.f32(yr);
        EXPECT_EQ(std::memcmp(alone.data(), batch.data() + r * C, size_t(C) * sizeof(float)), 0) << "row " << r;
    }
}

TEST_F(AddRmsNorm, refuses_mismatched_shapes_a_missing_weight_and_unknown_modes) {
    OpHarness h(device(), pipelines());
    Graph& g = h.graph();
    const TensorId a = g.input(DType::F32, {8, 2}, "a"), b = g.input(DType::F32, {8, 3}, "b");
    const TensorId w = g.input(DType::F32, {8}, "w");
    auto refuse = [&](std::vector<TensorId> in, int32_t mode, float eps = 1e-6f) {
        OpDesc d;
        d.op = TDM_OP_ADD_RMS_NORM;
        for (size_t k = 0; k < in.size(); ++k) d.in[k] = in[k];
        d.n_in = int(in.size());
        d.i[0] = mode;
        d.f[0] = eps;
        auto r = g.op(d);
        return r.ok() ? Error("accepted") : r.error();
    };
    EXPECT_EQ(refuse({a, b, w}, TDM_NORM_WEIGHT).code(), int(TDM_ERR_SHAPE));
    EXPECT_EQ(refuse({a, a}, TDM_NORM_WEIGHT).code(), int(TDM_ERR_INVALID_ARGUMENT));
    EXPECT_EQ(refuse({a, a, w}, TDM_NORM_NO_WEIGHT).code(), int(TDM_ERR_INVALID_ARGUMENT));
    const Error mode = refuse({a, a, w}, 3);
    EXPECT_EQ(mode.code(), int(TDM_ERR_UNSUPPORTED));
    EXPECT_NE(mode.message().find("add_rms_norm: unknown weight mode 3"), std::string::npos) << mode.message();
    EXPECT_EQ(refuse({a, a}, TDM_NORM_NO_WEIGHT, -1.0f).code(), int(TDM_ERR_UNSUPPORTED));
}

}  // namespace
}  // namespace tdm
