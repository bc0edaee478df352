// SPDX-License-Identifier: Apache-2.0
// tests/engine/logits_check_test.cpp: NaN or infinite logits read back from a forward
// pass are an error naming the position, not a token 0 to print.
// To add a case: fill a [rows][n_vocab] buffer and an argmax per row.
#include <gtest/gtest.h>

#include "engine/logits_check.h"

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
