// SPDX-License-Identifier: Apache-2.0
// tests/sdk/plugin_init_test.cpp: the in-tree plugins (built .so files,
// opened with dlopen) initialised against fake host tables: they register
// with a table of ABI 1's size (shorter than the one they were compiled
// with), with a v2 table whose capability entries are NULL, and with one
// whose query_op has every op; qwen-nextn refuses to register, naming the op
// and quoting the host, when query_op lacks one it uses.
//
// To add a case: script fake()'s query_op, build a table, call init().
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "fake_host.h"

namespace {

using sdk_test::fake;

// The plugin's tdm_plugin_api after negotiating ABI 1..3.
const tdm_plugin_api* open_plugin(const char* name) {
    const std::string path = std::string(TANDEM_BUILD_PLUGIN_DIR) + "/tandem-" + name + ".so";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open: the table lives in it
    EXPECT_NE(h, nullptr) << dlerror();
    if (!h) return nullptr;
    auto negotiate = reinterpret_cast<tdm_plugin_negotiate_fn>(dlsym(h, TDM_PLUGIN_ENTRY_NAME));
    EXPECT_NE(negotiate, nullptr);
    if (!negotiate) return nullptr;
    tdm_negotiate n{};
    n.struct_size = sizeof n;
    n.host_abi_min = 1;
    n.host_abi_max = 3;
    EXPECT_EQ(negotiate(&n), TDM_OK);
    // gemma4's assistant needs ABI 3 (stateless draft heads), qwen-nextn speaks 2 and 3 (its
    // MTP head's batched drafting is read from ABI 3), ngram speaks 2
    EXPECT_EQ(n.plugin_abi, std::string(name) == "ngram" ? 2u : 3u) << name;
    return n.plugin_api;
}

class SdkPluginInit : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override { fake().reset(); }
    char err[512] = "";
};

TEST_P(SdkPluginInit, registers_with_a_table_of_abi_1s_size_without_touching_v2_entries) {
    const tdm_plugin_api* api = open_plugin(GetParam());
    ASSERT_NE(api, nullptr);
    const tdm_host_api host = sdk_test::fake_v1_host_api_with_poisoned_tail();
    ASSERT_LT(host.struct_size, sizeof(tdm_host_api));
    ASSERT_EQ(api->init(&host, nullptr, err, sizeof err), TDM_OK) << err;
    EXPECT_FALSE(fake().registered.empty());
    EXPECT_EQ(fake().v2_entry_calls, 0);
    if (api->shutdown) api->shutdown();
}

TEST_P(SdkPluginInit, registers_with_a_v2_table_whose_capability_entries_are_null) {
    const tdm_plugin_api* api = open_plugin(GetParam());
    ASSERT_NE(api, nullptr);
    const tdm_host_api host = sdk_test::fake_host_api();
    ASSERT_EQ(host.query_op, nullptr);
    ASSERT_EQ(api->init(&host, nullptr, err, sizeof err), TDM_OK) << err;
    EXPECT_FALSE(fake().registered.empty());
    if (api->shutdown) api->shutdown();
}

TEST_P(SdkPluginInit, refuses_a_table_shorter_than_abi_1s) {
    const tdm_plugin_api* api = open_plugin(GetParam());
    ASSERT_NE(api, nullptr);
    tdm_host_api host = sdk_test::fake_host_api();
    host.struct_size = TDM_V1_SIZEOF_HOST_API - 8;
    EXPECT_EQ(api->init(&host, nullptr, err, sizeof err), TDM_ERR_ABI_MISMATCH);
    EXPECT_NE(std::string(err).find("less than the 256 bytes of ABI 1"), std::string::npos) << err;
    EXPECT_TRUE(fake().registered.empty());
}

INSTANTIATE_TEST_SUITE_P(InTree, SdkPluginInit, ::testing::Values("qwen-nextn", "ngram", "gemma4", "llama"));

TEST(SdkPluginInitQwen, asks_about_every_op_it_uses_and_registers_when_the_host_has_them) {
    fake().reset();
    fake().query_op = [](const tdm_op_desc&) { return TDM_OK; };
    const tdm_plugin_api* api = open_plugin("qwen-nextn");
    ASSERT_NE(api, nullptr);
    const tdm_host_api host = sdk_test::fake_host_api();
    char err[512] = "";
    ASSERT_EQ(api->init(&host, nullptr, err, sizeof err), TDM_OK) << err;
    bool asked[TDM_OP_LIST_END] = {};
    for (const tdm_op_desc& d : fake().queried) {
        ASSERT_LT(d.op, uint32_t(TDM_OP_LIST_END));
        asked[d.op] = true;
    }
    for (tdm_op op : {TDM_OP_GET_ROWS, TDM_OP_MATMUL, TDM_OP_RMS_NORM, TDM_OP_ROPE, TDM_OP_KV_STORE,
                      TDM_OP_ATTENTION, TDM_OP_GLU, TDM_OP_CONV1D_CAUSAL, TDM_OP_GATED_DELTA_RULE,
                      TDM_OP_MATMUL_ID, TDM_OP_MOE_SUM, TDM_OP_TOP_K, TDM_OP_CONCAT, TDM_OP_GATED_RMS_NORM})
        EXPECT_TRUE(asked[op]) << "op " << op << " was not checked";
    EXPECT_EQ(fake().registered, (std::vector<std::string>{"qwen3", "qwen35", "qwen35moe", "qwen35-mtp"}));
}

TEST(SdkPluginInitQwen, refuses_to_register_naming_the_op_the_host_lacks) {
    fake().reset();
    fake().query_op = [](const tdm_op_desc& d) {
        if (d.op == TDM_OP_GATED_DELTA_RULE) {
            fake().last_error = "gated_delta_rule: not built into this host";
            return TDM_ERR_UNSUPPORTED;
        }
        return TDM_OK;
    };
    const tdm_plugin_api* api = open_plugin("qwen-nextn");
    ASSERT_NE(api, nullptr);
    const tdm_host_api host = sdk_test::fake_host_api();
    char err[512] = "";
    EXPECT_EQ(api->init(&host, nullptr, err, sizeof err), TDM_ERR_UNSUPPORTED);
    EXPECT_STREQ(err,
                 "qwen-nextn needs op gated_delta_rule (tiled heads, recurrent form) that this host lacks: "
                 "gated_delta_rule: not built into this host");
    EXPECT_TRUE(fake().registered.empty()) << "nothing is registered before every op is checked";
}

}  // namespace
