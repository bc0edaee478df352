/* SPDX-License-Identifier: Apache-2.0 */
// tests/formats/expect_error.h: checks that a Result failed with a message naming the
// problem. Usage: EXPECT_TRUE(fails_with(GgufFile::from_memory(...), "truncated"));
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>

namespace tdm::test {

// Passes if `r` is an error whose message contains every needle.
template <class R>
::testing::AssertionResult fails_with(const R& r, std::initializer_list<std::string_view> needles) {
    if (r.ok()) return ::testing::AssertionFailure() << "succeeded, expected an error";
    const std::string& msg = r.error().message();
    for (std::string_view n : needles)
        if (msg.find(n) == std::string::npos)
            return ::testing::AssertionFailure() << "error message lacks \"" << n << "\": " << msg;
    return ::testing::AssertionSuccess() << msg;
}

template <class R>
::testing::AssertionResult fails_with(const R& r, std::string_view needle) {
    return fails_with(r, {needle});
}

}  // namespace tdm::test
