// SPDX-License-Identifier: Apache-2.0
// tests/sdk/drafter_test.cpp: tandem/cpp/drafter.hpp: a C++ Drafter behind the
// C callbacks of tdm_drafter_desc. The v2 calls hand failures (returned or
// thrown) to the host with a message; the v1 calls log a failure once and
// propose nothing until the next begin; arguments the host got wrong are
// refused; a proposal longer than asked is an error, never passed on.
//
// To add a case: script a ScriptedDrafter and call the descriptor's callbacks.
#include <gtest/gtest.h>

#include <tandem/cpp/drafter.hpp>

#include <stdexcept>
#include <vector>

#include "fake_host.h"

namespace {

using sdk_test::fake;
using tdm::sdk::Err;

// Proposes the last `n_propose` history tokens; fails or throws on request.
class ScriptedDrafter : public tdm::sdk::Drafter {
public:
    using Drafter::Drafter;
    tdm_status fail_with = TDM_OK;  // returned (with a message) by the next call
    bool throw_next = false;
    uint64_t n_propose = 2;
    int* destroyed = nullptr;
    int begins = 0, proposes = 0, accepts = 0;
    ~ScriptedDrafter() override {
        if (destroyed) ++*destroyed;
    }

    tdm_status begin(const int32_t*, uint64_t, Err err) override {
        ++begins;
        return result(err);
    }
    tdm_status propose(const int32_t* h, uint64_t n, int32_t* out, uint64_t, uint64_t* n_out, Err err) override {
        ++proposes;
        TDM_SDK_TRY(result(err));
        for (uint64_t i = 0; i < n_propose && i < n; ++i) out[i] = h[n - 1 - i];
        *n_out = n_propose < n ? n_propose : n;
        return TDM_OK;
    }
    tdm_status accept(const int32_t*, uint64_t, uint64_t, uint64_t, Err err) override {
        ++accepts;
        return result(err);
    }

private:
    tdm_status result(Err err) {
        if (throw_next) {
            throw_next = false;
            throw std::runtime_error("table corrupt");
        }
        const tdm_status st = fail_with;
        fail_with = TDM_OK;
        return st == TDM_OK ? st : err.fail(st, "static cache /tmp/c.bin: checksum mismatch");
    }
};

const char* const kTypes[] = {"scripted", nullptr};
tdm_status create_drafter(const tdm_host_api*, const tdm_options*, void** out, char* err, size_t err_size);
constexpr tdm_drafter_desc kDesc = tdm::sdk::drafter_desc("scripted", kTypes, create_drafter);

tdm::sdk::Host g_host;
ScriptedDrafter* g_last = nullptr;

tdm_status create_drafter(const tdm_host_api*, const tdm_options*, void** out, char* err, size_t err_size) {
    return tdm::sdk::guard(Err(err, err_size), "scripted: create", [&] {
        g_last = new ScriptedDrafter(&g_host, "scripted");
        *out = tdm::sdk::drafter_handle(g_last);
    });
}

class SdkDrafter : public ::testing::Test {
protected:
    void SetUp() override {
        fake().reset();
        api = sdk_test::fake_host_api();
        ASSERT_EQ(g_host.init(&api, "myplugin", Err()), TDM_OK);
        ASSERT_EQ(kDesc.create(&api, nullptr, &obj, err, sizeof err), TDM_OK);
        d = g_last;
    }
    void TearDown() override { kDesc.destroy(obj); }

    tdm_host_api api;
    void* obj = nullptr;
    ScriptedDrafter* d = nullptr;
    char err[256] = "";
    const std::vector<int32_t> h = {5, 6, 7, 8};
};

TEST_F(SdkDrafter, the_descriptor_sets_both_generations_of_calls) {
    EXPECT_EQ(kDesc.struct_size, sizeof(tdm_drafter_desc));
    EXPECT_STREQ(kDesc.name, "scripted");
    EXPECT_NE(kDesc.begin, nullptr);
    EXPECT_NE(kDesc.propose, nullptr);
    EXPECT_NE(kDesc.accept, nullptr);
    EXPECT_NE(kDesc.begin2, nullptr);
    EXPECT_NE(kDesc.propose2, nullptr);
    EXPECT_NE(kDesc.accept2, nullptr);
    EXPECT_NE(kDesc.save, nullptr);
    EXPECT_EQ(kDesc.save(obj, err, sizeof err), TDM_OK);
}

TEST_F(SdkDrafter, v2_calls_forward_and_report_returned_and_thrown_failures) {
    EXPECT_EQ(kDesc.begin2(obj, h.data(), h.size(), err, sizeof err), TDM_OK);
    int32_t out[4] = {};
    uint64_t n = 99;
    EXPECT_EQ(kDesc.propose2(obj, h.data(), h.size(), out, 4, &n, err, sizeof err), TDM_OK);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(out[0], 8);
    EXPECT_EQ(kDesc.accept2(obj, h.data(), h.size(), 2, 1, err, sizeof err), TDM_OK);

    d->fail_with = TDM_ERR_BAD_MODEL;
    EXPECT_EQ(kDesc.begin2(obj, h.data(), h.size(), err, sizeof err), TDM_ERR_BAD_MODEL);
    EXPECT_STREQ(err, "static cache /tmp/c.bin: checksum mismatch");
    d->throw_next = true;
    n = 99;
    EXPECT_EQ(kDesc.propose2(obj, h.data(), h.size(), out, 4, &n, err, sizeof err), TDM_ERR_INTERNAL);
    EXPECT_STREQ(err, "scripted: propose: internal error: table corrupt");
    EXPECT_EQ(n, 0u);
    EXPECT_TRUE(fake().log.empty()) << "v2 failures are the host's to log";
}

TEST_F(SdkDrafter, v2_calls_refuse_bad_arguments_and_overlong_proposals) {
    uint64_t n = 0;
    int32_t out[8];
    EXPECT_EQ(kDesc.propose2(obj, nullptr, 3, out, 4, &n, err, sizeof err), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(kDesc.propose2(obj, h.data(), h.size(), out, 4, nullptr, err, sizeof err), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(kDesc.begin2(obj, nullptr, 2, err, sizeof err), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(d->begins, 0);
    EXPECT_EQ(kDesc.propose2(obj, h.data(), h.size(), out, 0, &n, err, sizeof err), TDM_OK);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(d->proposes, 0) << "max 0 asks nothing of the drafter";
    d->n_propose = 3;  // writes 3 tokens when asked for 2
    EXPECT_EQ(kDesc.propose2(obj, h.data(), h.size(), out, 2, &n, err, sizeof err), TDM_ERR_INTERNAL);
    EXPECT_STREQ(err, "scripted: propose wrote 3 tokens, more than the 2 asked for");
    EXPECT_EQ(n, 0u);
}

TEST_F(SdkDrafter, a_v1_failure_is_logged_once_and_retires_the_drafter_until_the_next_begin) {
    kDesc.begin(obj, h.data(), h.size());
    int32_t out[4];
    EXPECT_EQ(kDesc.propose(obj, h.data(), h.size(), out, 4), 2u);
    d->throw_next = true;
    EXPECT_EQ(kDesc.propose(obj, h.data(), h.size(), out, 4), 0u);
    EXPECT_TRUE(d->retired());
    ASSERT_EQ(fake().log.size(), 1u);
    EXPECT_EQ(fake().log[0],
              "myplugin|3|scripted: propose: internal error: table corrupt; drafter scripted stops proposing until "
              "the next sequence");
    const int proposes = d->proposes;
    EXPECT_EQ(kDesc.propose(obj, h.data(), h.size(), out, 4), 0u);
    kDesc.accept(obj, h.data(), h.size(), 0, 0);
    EXPECT_EQ(d->proposes, proposes) << "a retired drafter is not called";
    EXPECT_EQ(d->accepts, 0);
    EXPECT_EQ(fake().log.size(), 1u) << "logged once";
    kDesc.begin(obj, h.data(), h.size());
    EXPECT_FALSE(d->retired());
    EXPECT_EQ(kDesc.propose(obj, h.data(), h.size(), out, 4), 2u);
    // a failing begin retires it for that sequence
    d->fail_with = TDM_ERR_OUT_OF_MEMORY;
    kDesc.begin(obj, h.data(), h.size());
    EXPECT_TRUE(d->retired());
    EXPECT_EQ(fake().log.size(), 2u);
}

TEST(SdkDrafterLifetime, destroy_deletes_through_the_base) {
    int destroyed = 0;
    auto* d = new ScriptedDrafter(nullptr, "x");
    d->destroyed = &destroyed;
    kDesc.destroy(tdm::sdk::drafter_handle(d));
    EXPECT_EQ(destroyed, 1);
}

}  // namespace
