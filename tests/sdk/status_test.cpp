// SPDX-License-Identifier: Apache-2.0
// tests/sdk/status_test.cpp: tandem/cpp/status.hpp: fail() into a callback's
// err buffer (NUL-terminated, cut with "..."), Status, TDM_SDK_TRY, and
// guard(), which keeps C++ exceptions from crossing the ABI.
//
// To add a case: call the helper with a small char buffer and check both the
// returned status and the bytes written.
#include <gtest/gtest.h>

#include <tandem/cpp/status.hpp>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

using tdm::sdk::Err;
using tdm::sdk::Status;

TEST(SdkFail, writes_the_formatted_message_and_returns_the_status) {
    char err[64];
    std::memset(err, 'x', sizeof err);
    EXPECT_EQ(tdm::sdk::fail(err, sizeof err, TDM_ERR_BAD_MODEL, "%s = %d", "n_layer", 0), TDM_ERR_BAD_MODEL);
    EXPECT_STREQ(err, "n_layer = 0");
    EXPECT_EQ(Err(err, sizeof err).fail(TDM_ERR_SHAPE, "%u", 7u), TDM_ERR_SHAPE);
    EXPECT_STREQ(err, "7");
}

TEST(SdkFail, a_message_longer_than_the_buffer_is_cut_terminated_and_marked) {
    char buf[16];
    std::memset(buf, 'x', sizeof buf);
    // the helper may use only the first 10 bytes: the rest stays 'x'
    EXPECT_EQ(tdm::sdk::fail(buf, 10, TDM_ERR_INTERNAL, "%s", "abcdefghijklmnopqrstuvwxyz"), TDM_ERR_INTERNAL);
    EXPECT_EQ(buf[9], '\0');
    EXPECT_STREQ(buf, "abcdef...");
    for (size_t i = 10; i < sizeof buf; ++i) EXPECT_EQ(buf[i], 'x') << i;
    // buffers too small for the marker are still terminated
    for (size_t n = 1; n < 4; ++n) {
        std::memset(buf, 'x', sizeof buf);
        tdm::sdk::fail(buf, n, TDM_ERR_INTERNAL, "%s", "abcdef");
        EXPECT_EQ(buf[n - 1], '\0') << n;
        EXPECT_EQ(std::strlen(buf), n - 1) << n;
        EXPECT_EQ(buf[n], 'x') << n;
    }
    // a message that fits exactly is not marked
    char exact[4];
    tdm::sdk::fail(exact, sizeof exact, TDM_ERR_INTERNAL, "abc");
    EXPECT_STREQ(exact, "abc");
}

TEST(SdkFail, a_null_or_empty_buffer_only_returns_the_status) {
    EXPECT_EQ(tdm::sdk::fail(nullptr, 100, TDM_ERR_LIMIT, "x"), TDM_ERR_LIMIT);
    char c = 'x';
    EXPECT_EQ(tdm::sdk::fail(&c, 0, TDM_ERR_LIMIT, "x"), TDM_ERR_LIMIT);
    EXPECT_EQ(c, 'x');
    EXPECT_EQ(Err().fail(TDM_ERR_TYPE, "dropped"), TDM_ERR_TYPE);
    EXPECT_STREQ(Err().message(), "");
}

TEST(SdkStatus, captures_a_callees_status_and_message_and_reports_them) {
    Status s;
    EXPECT_TRUE(s.ok());
    EXPECT_FALSE(s.capture(s.err().fail(TDM_ERR_NOT_FOUND, "tensor %s", "w")));
    EXPECT_EQ(s.code(), TDM_ERR_NOT_FOUND);
    EXPECT_STREQ(s.message(), "tensor w");
    char err[16];
    EXPECT_EQ(s.report(Err(err, sizeof err)), TDM_ERR_NOT_FOUND);
    EXPECT_STREQ(err, "tensor w");
    char small[8];
    EXPECT_EQ(s.report(Err(small, sizeof small)), TDM_ERR_NOT_FOUND);
    EXPECT_STREQ(small, "tens...");
    EXPECT_TRUE(s.capture(TDM_OK));
    EXPECT_STREQ(s.message(), "");
    const Status e = Status::error(TDM_ERR_LIMIT, "k = %d", 300);
    EXPECT_EQ(e.code(), TDM_ERR_LIMIT);
    EXPECT_STREQ(e.message(), "k = 300");
}

int g_steps = 0;
tdm_status step(tdm_status st) {
    ++g_steps;
    return st;
}
tdm_status three_steps(tdm_status second) {
    TDM_SDK_TRY(step(TDM_OK));
    TDM_SDK_TRY(step(second));
    TDM_SDK_TRY(step(TDM_OK));
    return TDM_OK;
}

TEST(SdkTry, returns_the_first_failure_and_evaluates_each_expression_once) {
    g_steps = 0;
    EXPECT_EQ(three_steps(TDM_OK), TDM_OK);
    EXPECT_EQ(g_steps, 3);
    g_steps = 0;
    EXPECT_EQ(three_steps(TDM_ERR_SHAPE), TDM_ERR_SHAPE);
    EXPECT_EQ(g_steps, 2);
}

TEST(SdkGuard, passes_the_functions_status_through_and_void_is_ok) {
    char err[64] = "";
    EXPECT_EQ(tdm::sdk::guard(Err(err, sizeof err), "cb", [] { return TDM_ERR_NOT_FOUND; }), TDM_ERR_NOT_FOUND);
    int ran = 0;
    EXPECT_EQ(tdm::sdk::guard(Err(err, sizeof err), "cb", [&] { ++ran; }), TDM_OK);
    EXPECT_EQ(ran, 1);
    EXPECT_STREQ(err, "");
}

TEST(SdkGuard, an_escaping_exception_becomes_a_status_and_a_message_naming_the_callback) {
    char err[128];
    auto run = [&](auto fn) { return tdm::sdk::guard(Err(err, sizeof err), "myplugin: propose", fn); };
    EXPECT_EQ(run([]() -> tdm_status { throw std::runtime_error("table corrupt"); }), TDM_ERR_INTERNAL);
    EXPECT_STREQ(err, "myplugin: propose: internal error: table corrupt");
    EXPECT_EQ(run([]() -> tdm_status { throw std::bad_alloc(); }), TDM_ERR_OUT_OF_MEMORY);
    EXPECT_STREQ(err, "myplugin: propose: out of memory");
    EXPECT_EQ(run([]() -> tdm_status { throw 42; }), TDM_ERR_INTERNAL);
    EXPECT_STREQ(err, "myplugin: propose: internal error: unknown C++ exception");
    // a throwing std::vector growth, as in a drafter's table
    EXPECT_EQ(run([] { std::string s; s.reserve(s.max_size() + 1); }), TDM_ERR_INTERNAL);
    EXPECT_NE(std::string(err).find("myplugin: propose: internal error:"), std::string::npos) << err;
}

static_assert(noexcept(tdm::sdk::guard(Err(), "x", [] { return TDM_OK; })), "guard must not let anything escape");

}  // namespace
