// SPDX-License-Identifier: Apache-2.0
// tests/model/logits_check_test.cpp: NaN or infinite logits read back from a forward
// pass are an error naming the position, not a token 0 to print; with the per-op probes
// of TANDEM_CHECK_NAN=1 the error also says what the probes found.
// To add a case: fill a [rows][n_vocab] buffer and an argmax per row.
#include <gtest/gtest.h>

#include "model/logits_check.h"
#include "support/device_fixture.h"
#include "support/op_harness.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace tdm;

namespace {

constexpr uint32_t kVocab = 8;

ForwardOutput output_of(const std::vector<float>& logits, const std::vector<int32_t>& argmax) {
    ForwardOutput out;
    out.n_outputs = uint32_t(argmax.size());
    out.logits = logits.data();
    out.argmax = argmax.data();
    return out;
}

}  // namespace

TEST(LogitsCheck, finite_rows_pass) {
    std::vector<float> logits(2 * kVocab, 0.5f);
    logits[3] = 2.0f;
    logits[kVocab + 6] = 3.0f;
    const std::vector<int32_t> argmax = {3, 6}, positions = {10, 11};
    EXPECT_TRUE(check_logits_finite(output_of(logits, argmax), kVocab, positions).ok());
}

TEST(LogitsCheck, an_all_nan_row_is_an_error_naming_its_position) {
    std::vector<float> logits(2 * kVocab, 0.5f);
    for (uint32_t v = 0; v < kVocab; ++v) logits[kVocab + v] = std::numeric_limits<float>::quiet_NaN();
    // What an argmax over NaN returns is up to the kernel; token 0 is what users saw.
    const std::vector<int32_t> argmax = {0, 0}, positions = {4, 5};
    Status st = check_logits_finite(output_of(logits, argmax), kVocab, positions);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("the model produced NaN logits at position 5"), std::string::npos)
        << st.error().message();
}

TEST(LogitsCheck, a_greedy_pass_is_checked_by_the_logit_at_its_argmax) {
    // logits left on the device (ForwardInput::read_logits false): the graph's value at
    // each argmax is what the check reads, with the same message as from the row
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<int32_t> argmax = {3, 0}, positions = {8, 9};
    std::vector<float> values = {2.0f, 1.0f};
    ForwardOutput out;
    out.n_outputs = 2;
    out.argmax = argmax.data();
    out.argmax_logit = values.data();
    EXPECT_TRUE(check_logits_finite(out, kVocab, positions).ok());
    EXPECT_TRUE(check_logits_finite(out, kVocab, positions, true).ok());  // nothing more to scan
    values[1] = nan;
    Status st = check_logits_finite(out, kVocab, positions);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("the model produced NaN logits at position 9 (token 0 of the vocabulary is NaN)"),
              std::string::npos)
        << st.error().message();
}

TEST(LogitsCheck, an_infinite_maximum_and_an_argmax_outside_the_vocabulary_are_caught) {
    std::vector<float> logits(kVocab, 0.0f);
    logits[2] = std::numeric_limits<float>::infinity();
    Status st = check_logits_finite(output_of(logits, {2}), kVocab, std::vector<int32_t>{7});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("infinite logits at position 7"), std::string::npos) << st.error().message();

    // An argmax of -1 (no maximum found) makes the check read the whole row.
    std::vector<float> nan_row(kVocab, std::numeric_limits<float>::quiet_NaN());
    st = check_logits_finite(output_of(nan_row, {-1}), kVocab, std::vector<int32_t>{0});
    EXPECT_FALSE(st.ok());
}

TEST(LogitsCheck, output_positions_follow_the_output_rows) {
    const std::vector<int32_t> tokens = {1, 2, 3, 4}, positions = {20, 21, 22, 23}, rows = {1, 3};
    ForwardInput in;
    in.tokens = tokens;
    in.positions = positions;
    in.output_rows = rows;
    EXPECT_EQ(output_positions(in), (std::vector<int32_t>{21, 23}));
}

namespace {

class LogitsCheckProbes : public test::DeviceTest {
protected:
    // Runs x -> scale(x) with or without probes; x[0] is `first`.
    void run(float first, bool probes) {
        std::vector<float> x(16, 0.5f);
        x[0] = first;
        const TensorId in = h_.input_f32({8, 2}, x);
        const TensorId y = h_.op(TDM_OP_SCALE, {in}, {}, {2.0f});
        CompileOptions o;
        o.probe_non_finite = probes;
        h_.run({y}, o);
    }
    const Error generic_ = Error("the model produced NaN logits at position 0: broken; TANDEM_CHECK_NAN=1 names the first layer");
    test::OpHarness h_{device(), pipelines()};
};

}  // namespace

TEST_F(LogitsCheckProbes, the_error_names_the_first_op_the_probes_caught) {
    run(std::numeric_limits<float>::infinity(), true);
    const std::string msg = with_non_finite_origin(generic_, h_.compiled()).message();
    EXPECT_EQ(msg, "the model produced NaN logits at position 0: broken; first non-finite value in scale "
                   "(op scale, output 'scale' f32 [8, 2])");
}

TEST_F(LogitsCheckProbes, probes_that_caught_nothing_say_so_instead_of_pointing_at_the_switch) {
    run(1.0f, true);
    const std::string msg = with_non_finite_origin(generic_, h_.compiled()).message();
    EXPECT_EQ(msg.find("names the first layer"), std::string::npos) << msg;
    EXPECT_NE(msg.find("found no op whose result was non-finite"), std::string::npos) << msg;
}

TEST_F(LogitsCheckProbes, without_probes_the_error_is_unchanged) {
    run(std::numeric_limits<float>::infinity(), false);
    EXPECT_EQ(with_non_finite_origin(generic_, h_.compiled()).message(), generic_.message());
}
