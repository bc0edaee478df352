// SPDX-License-Identifier: Apache-2.0
// tests/ops/argmax_test.cpp: the two-pass argmax (host/ops/argmax.cpp: argmax_slices,
// then the argmax node that combines them) against the rule of the one-workgroup scan it
// replaced, bit for bit, on random rows with ties across slice borders, NaN, +inf and
// -inf, for widths below, at and above a slice and a 152k vocabulary; and its second
// output, the value at the argmax.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ops/op_def.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"

namespace tdm {
namespace {

using test::OpHarness;

// The one-pass kernel's rule: the first (lowest) index of the largest value above -inf;
// NaN never counts; 0 when no value is above -inf.
int32_t one_pass_argmax(const float* row, int64_t cols) {
    float best = -std::numeric_limits<float>::infinity();
    int32_t at = -1;
    for (int64_t c = 0; c < cols; ++c)
        if (row[c] > best) {
            best = row[c];
            at = int32_t(c);
        }
    return at < 0 ? 0 : at;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Random rows, with what the rule must get right planted in them: ties of the maximum in
// different slices and in one slice, NaN and infinities, rows with no value above -inf.
std::vector<float> awkward_rows(int64_t cols, int64_t rows, uint32_t seed) {
    std::vector<float> x = test::randn(size_t(cols * rows), seed, 3.0f);
    std::mt19937 rng(seed);
    auto col = [&] { return int64_t(rng() % uint32_t(cols)); };
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t r = 0; r < rows; ++r) {
        float* row = x.data() + r * cols;
        switch (r % 8) {
            case 0: break;  // plain random
            case 1:         // a tie of the maximum: the lower index wins, in any two slices
                row[col()] = row[col()] = 50.0f;
                break;
            case 2:  // NaN everywhere but a few values
                for (int64_t c = 0; c < cols; ++c)
                    if (rng() % 4) row[c] = nan;
                break;
            case 3:  // every value NaN: index 0
                for (int64_t c = 0; c < cols; ++c) row[c] = nan;
                break;
            case 4:  // every value -inf, some NaN: index 0
                for (int64_t c = 0; c < cols; ++c) row[c] = rng() % 3 ? -inf : nan;
                break;
            case 5:  // +inf twice: the first
                row[col()] = inf;
                row[col()] = inf;
                break;
            case 6:  // one finite value among -inf
                for (int64_t c = 0; c < cols; ++c) row[c] = -inf;
                row[col()] = -1e30f;
                break;
            case 7:  // the same value in every column: index 0
                for (int64_t c = 0; c < cols; ++c) row[c] = 0.25f;
                break;
        }
    }
    return x;
}

class Argmax : public test::DeviceTest {};

TEST_F(Argmax, two_passes_give_the_one_pass_rule_and_the_value_at_the_argmax) {
    const int64_t slice = kArgmaxSlice;
    for (const int64_t cols : {int64_t(1), int64_t(7), slice - 1, slice, slice + 1, 3 * slice + 5, int64_t(151936)}) {
        const int64_t rows = cols > 100000 ? 8 : 16;  // every kind of row of awkward_rows, at least once
        const auto x = awkward_rows(cols, rows, uint32_t(cols));
        OpHarness h(device(), pipelines());
        const TensorId ids = h.op(TDM_OP_ARGMAX, {h.input_f32({cols, rows}, x)});
        const TensorId values = h.graph().second_output(ids);
        ASSERT_NE(values, kNoTensor);
        h.run({ids, values});
        const auto got = h.i32(ids);
        const auto got_values = h.f32(values);
        ASSERT_EQ(got.size(), size_t(rows));
        for (int64_t r = 0; r < rows; ++r) {
            const float* row = x.data() + r * cols;
            const int32_t want = one_pass_argmax(row, cols);
            EXPECT_EQ(got[size_t(r)], want) << "cols " << cols << " row " << r << " (kind " << r % 8 << ")";
            EXPECT_EQ(bits(got_values[size_t(r)]), bits(row[want])) << "cols " << cols << " row " << r;
        }
    }
}

TEST_F(Argmax, runs_as_a_slices_node_then_a_combining_node) {
    OpHarness h(device(), pipelines());
    const int64_t cols = 5000;
    const TensorId ids = h.op(TDM_OP_ARGMAX, {h.input_f32({cols, 3}, test::randn(size_t(cols * 3), 9))});
    ASSERT_EQ(h.graph().nodes().size(), 2u);
    EXPECT_EQ(h.graph().nodes()[0].desc.op, kOpInternalArgmaxSlices);
    EXPECT_EQ(h.graph().nodes()[1].desc.op, TDM_OP_ARGMAX);
    // the slices' partials: a value and an index per slice and row
    EXPECT_EQ(h.graph().tensor(h.graph().nodes()[0].out).cols(), 2 * int64_t(argmax_slices(cols)));
    EXPECT_EQ(h.graph().nodes()[1].out, ids);
}

}  // namespace
}  // namespace tdm
