// SPDX-License-Identifier: Apache-2.0
// tests/models/ngram/ngram_abi_test.cpp: the built ngram plugin's C callbacks, called
// as a host calls them (no device, no target model): every drafter sets both
// generations of calls; the ABI 2 calls (begin2/propose2/accept2) propose
// exactly what the ABI 1 calls propose on the same sequence; arguments a host
// gets wrong come back as a status with a message, and nothing is proposed.
//
// To add a case: create drafters through the registry's descriptors and drive
// both call generations with the same histories.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin/handles.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

using Tokens = std::vector<int32_t>;

const char* const kAllTypes[] = {"ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"};

// The "target": token i of the text is (i * 5 + i / 23) % 13 + 3, a cycle of
// 13 with a shift every 23 tokens, so drafts are often but not always right.
int32_t truth(size_t i) { return int32_t((i * 5 + i / 23) % 13 + 3); }

TEST(NgramAbi, v2_calls_propose_exactly_what_v1_calls_propose_for_every_drafter) {
    for (const char* type : kAllTypes) {
        SCOPED_TRACE(type);
        const DrafterEntry* e = test::build_tree_plugins().find_drafter(type);
        ASSERT_NE(e, nullptr);
        const tdm_drafter_desc& d = *e->desc;
        ASSERT_TRUE(d.begin && d.propose && d.accept) << "ABI 1 hosts call these";
        ASSERT_TRUE(d.begin2 && d.propose2 && d.accept2) << "ABI 2 hosts call these";
        char err[256] = "";
        void* v1 = nullptr;
        void* v2 = nullptr;
        ASSERT_EQ(d.create(host_api(), nullptr, &v1, err, sizeof err), TDM_OK) << err;
        ASSERT_EQ(d.create(host_api(), nullptr, &v2, err, sizeof err), TDM_OK) << err;

        Tokens history;
        for (size_t i = 0; i < 40; ++i) history.push_back(truth(i));
        d.begin(v1, history.data(), history.size());
        ASSERT_EQ(d.begin2(v2, history.data(), history.size(), err, sizeof err), TDM_OK) << err;
        size_t drafted = 0, accepted = 0;
        for (int round = 0; round < 40; ++round) {
            Tokens a(8, -1), b(8, -1);
            a.resize(d.propose(v1, history.data(), history.size(), a.data(), a.size()));
            uint64_t n = 99;
            ASSERT_EQ(d.propose2(v2, history.data(), history.size(), b.data(), b.size(), &n, err, sizeof err), TDM_OK)
                << err;
            b.resize(n);
            ASSERT_EQ(a, b) << "round " << round;
            // verify: accept the drafts that match the text, then the target's token
            size_t k = 0;
            while (k < a.size() && a[k] == truth(history.size())) {
                history.push_back(a[k]);
                ++k;
            }
            history.push_back(truth(history.size()));
            drafted += a.size();
            accepted += k;
            d.accept(v1, history.data(), history.size(), a.size(), k);
            ASSERT_EQ(d.accept2(v2, history.data(), history.size(), a.size(), k, err, sizeof err), TDM_OK) << err;
        }
        EXPECT_GT(accepted, 0u) << "the drafter never drafted a right token: the comparison shows nothing";
        EXPECT_GT(drafted, accepted) << "no draft was ever rejected: the rejection path is not compared";
        d.destroy(v1);
        d.destroy(v2);
    }
}

TEST(NgramAbi, v2_calls_refuse_arguments_a_host_got_wrong_with_a_message) {
    const DrafterEntry* e = test::build_tree_plugins().find_drafter("ngram-simple");
    ASSERT_NE(e, nullptr);
    const tdm_drafter_desc& d = *e->desc;
    char err[256] = "";
    void* obj = nullptr;
    ASSERT_EQ(d.create(host_api(), nullptr, &obj, err, sizeof err), TDM_OK) << err;
    const Tokens h = {1, 2, 3, 1, 2};
    int32_t out[4];
    uint64_t n = 7;
    EXPECT_EQ(d.propose2(obj, nullptr, 5, out, 4, &n, err, sizeof err), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(n, 0u);
    EXPECT_NE(std::string(err).find("null history"), std::string::npos) << err;
    EXPECT_EQ(d.propose2(obj, h.data(), h.size(), out, 4, nullptr, err, sizeof err), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(d.begin2(obj, nullptr, 3, err, sizeof err), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err).find("null prompt"), std::string::npos) << err;
    EXPECT_EQ(d.accept2(obj, nullptr, 3, 0, 0, err, sizeof err), TDM_ERR_INVALID_ARGUMENT);
    d.destroy(obj);
}

}  // namespace
}  // namespace tdm
