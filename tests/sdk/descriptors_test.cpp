// SPDX-License-Identifier: Apache-2.0
// tests/sdk/descriptors_test.cpp: tandem/cpp/descriptors.hpp and structs.hpp:
// descriptors built at compile time with struct_size and every member where
// it belongs, the entry-point macro's negotiation, and the struct_size rules
// for structs read from and written to the host.
//
// To add a case: build a descriptor with the builders and compare its fields.
#include <gtest/gtest.h>

#include <tandem/cpp/descriptors.hpp>

#include <cstring>

namespace {

using namespace tdm::sdk;

tdm_status create(const tdm_host_api*, const tdm_model_source*, const tdm_options*, tdm_model_info*, void**, char*,
                  size_t) {
    return TDM_OK;
}
tdm_status load(void*, tdm_loader*, char*, size_t) { return TDM_OK; }
tdm_status build(void*, tdm_graph*, const tdm_batch_desc*, char*, size_t) { return TDM_OK; }
void destroy(void*) {}
tdm_status head_create(const tdm_host_api*, const tdm_model_source*, void*, const tdm_options*, tdm_draft_head_info*,
                       void**, char*, size_t) {
    return TDM_OK;
}
tdm_status drafter_create(const tdm_host_api*, const tdm_options*, void**, char*, size_t) { return TDM_OK; }
tdm_status begin2(void*, const int32_t*, uint64_t, char*, size_t) { return TDM_OK; }
tdm_status init(const tdm_host_api*, tdm_registry*, char*, size_t) { return TDM_OK; }

const char* const kGguf[] = {"toy", nullptr};
const char* const kHf[] = {"toy_model", nullptr};

constexpr tdm_arch_desc kArch = ArchDesc("toy").gguf_names(kGguf).hf_model_types(kHf).callbacks(create, load, build,
                                                                                                 destroy);
constexpr tdm_draft_head_desc kHead =
    DraftHeadDesc("toy-mtp").spec_types(kGguf).target_archs(kHf).callbacks(head_create, load, build, destroy);
constexpr tdm_drafter_desc kDrafter =
    DrafterDesc("lookup").spec_types(kGguf).lifetime(drafter_create, destroy).calls_v2(begin2, nullptr, nullptr);
constexpr tdm_plugin_api kPlugin = PluginApi("toy-plugin").version("1.2").description("a toy").init(init);
constexpr tdm_attention_layer kSliding = sliding_attention(4, 128, 64, 1024);
constexpr tdm_recurrent_state kState = recurrent_state(12345);

// The builders run at compile time: the descriptors are constants.
static_assert(kArch.struct_size == sizeof(tdm_arch_desc), "");
static_assert(kArch.create == &create && kArch.destroy == &destroy, "");
static_assert(kHead.struct_size == sizeof(tdm_draft_head_desc) && kHead.build_step == &build, "");
static_assert(kDrafter.begin2 == &begin2 && kDrafter.begin == nullptr && kDrafter.save == nullptr, "");
static_assert(kPlugin.struct_size == sizeof(tdm_plugin_api) && kPlugin.shutdown == nullptr, "");
static_assert(kSliding.struct_size == sizeof(tdm_attention_layer) && kSliding.window == 1024, "");
static_assert(kState.n_f32 == 12345, "");

TEST(SdkDescriptors, builders_put_every_member_in_its_place) {
    EXPECT_STREQ(kArch.name, "toy");
    EXPECT_EQ(kArch.gguf_names, kGguf);
    EXPECT_EQ(kArch.hf_model_types, kHf);
    EXPECT_EQ(kArch.load, &load);
    EXPECT_EQ(kArch.build_graph, &build);
    EXPECT_STREQ(kHead.name, "toy-mtp");
    EXPECT_EQ(kHead.spec_types, kGguf);
    EXPECT_EQ(kHead.target_archs, kHf);
    EXPECT_EQ(kHead.create, &head_create);
    EXPECT_EQ(kDrafter.create, &drafter_create);
    EXPECT_EQ(kDrafter.destroy, &destroy);
    EXPECT_STREQ(kPlugin.version, "1.2");
    EXPECT_STREQ(kPlugin.description, "a toy");
    EXPECT_EQ(kPlugin.init, &init);
    const tdm_attention_layer full = full_attention(2, 64, 32);
    EXPECT_EQ(full.n_kv_head, 2u);
    EXPECT_EQ(full.head_dim_k, 64u);
    EXPECT_EQ(full.head_dim_v, 32u);
    EXPECT_EQ(full.window, 0u);
    EXPECT_EQ(kSliding.head_dim_v, 64u);
}

}  // namespace

// The entry point as a plugin defines it (this test binary plays the plugin).
TDM_SDK_PLUGIN_ENTRY(kPlugin, 2, 3)

namespace {

TEST(SdkDescriptors, the_entry_point_speaks_the_highest_common_version_or_names_its_range) {
    tdm_negotiate n{};
    n.struct_size = sizeof n;
    n.host_abi_min = 1;
    n.host_abi_max = 2;
    ASSERT_EQ(tdm_plugin_negotiate(&n), TDM_OK);
    EXPECT_EQ(n.plugin_abi, 2u);
    ASSERT_NE(n.plugin_api, nullptr);
    EXPECT_STREQ(n.plugin_api->name, "toy-plugin");
    EXPECT_EQ(n.plugin_api->init, &init);
    const tdm_plugin_api* first = n.plugin_api;
    n.host_abi_max = 5;
    ASSERT_EQ(tdm_plugin_negotiate(&n), TDM_OK);
    EXPECT_EQ(n.plugin_abi, 3u);
    EXPECT_EQ(n.plugin_api, first) << "the same static storage every time";
    n.host_abi_max = 1;
    EXPECT_EQ(tdm_plugin_negotiate(&n), TDM_ERR_ABI_MISMATCH);
    EXPECT_EQ(n.plugin_abi_min, 2u);
    EXPECT_EQ(n.plugin_abi_max, 3u);
}

TEST(SdkDescriptors, the_entry_point_reports_its_minor_where_the_host_struct_has_room) {
    tdm_negotiate n{};
    n.struct_size = sizeof n;
    n.host_abi_min = 1;
    n.host_abi_max = 3;
    ASSERT_EQ(tdm_plugin_negotiate(&n), TDM_OK);
    EXPECT_EQ(n.plugin_abi, 3u);
    EXPECT_EQ(n.plugin_abi_minor, TDM_ABI_MINOR_VERSION);
    n.host_abi_max = 2;  // ABI 2 has no minors
    n.plugin_abi_minor = 99;
    ASSERT_EQ(tdm_plugin_negotiate(&n), TDM_OK);
    EXPECT_EQ(n.plugin_abi_minor, 0u);
    n.struct_size = TDM_V3_0_SIZEOF_NEGOTIATE;  // a 3.0 host: the field is past its struct
    n.host_abi_max = 3;
    n.plugin_abi_minor = 99;
    ASSERT_EQ(tdm_plugin_negotiate(&n), TDM_OK);
    EXPECT_EQ(n.plugin_abi_minor, 99u) << "written past the host's struct_size";
}

TEST(SdkStructs, read_struct_zero_fills_what_a_shorter_writer_did_not_know_and_refuses_too_short) {
    tdm_host_limits theirs;
    std::memset(&theirs, 0x5a, sizeof theirs);
    theirs.struct_size = offsetof(tdm_host_limits, max_top_k);  // a writer that knew two fields
    tdm_host_limits mine;
    ASSERT_TRUE(read_struct(&theirs, 8, &mine));
    EXPECT_EQ(mine.struct_size, offsetof(tdm_host_limits, max_top_k));
    EXPECT_EQ(mine.max_op_inputs, 0x5a5a5a5au);
    EXPECT_EQ(mine.max_top_k, 0u);
    EXPECT_EQ(mine.max_custom_op_push_bytes, 0u);
    EXPECT_TRUE(TDM_HAS_MEMBER(&mine, tdm_host_limits, max_query_heads_per_kv_head));
    EXPECT_FALSE(TDM_HAS_MEMBER(&mine, tdm_host_limits, max_top_k));
    EXPECT_FALSE(read_struct(&theirs, sizeof theirs, &mine));
    EXPECT_EQ(mine.max_op_inputs, 0u) << "zeroed on refusal";
    EXPECT_FALSE(read_struct<tdm_host_limits>(nullptr, 0, &mine));
    // a newer, longer writer: only what this reader knows is copied
    alignas(8) unsigned char longer[sizeof(tdm_host_limits) + 16];
    std::memset(longer, 0x11, sizeof longer);
    const uint32_t size = sizeof longer;
    std::memcpy(longer, &size, sizeof size);
    ASSERT_TRUE(read_struct(reinterpret_cast<const tdm_host_limits*>(longer), 8, &mine));
    EXPECT_EQ(mine.struct_size, sizeof(tdm_host_limits));
}

TEST(SdkStructs, writing_into_an_older_hosts_struct_stops_at_its_struct_size) {
    // a host whose tdm_model_info ended before `description`
    tdm_model_info host;
    std::memset(&host, 0x7e, sizeof host);
    host.struct_size = offsetof(tdm_model_info, description);
    const char* sentinel;
    std::memcpy(&sentinel, &host.description, sizeof sentinel);
    tdm_model_info mine{};
    mine.n_vocab = 1000;
    mine.n_embd = 64;
    mine.n_attention_layers = 2;
    mine.description = "n_vocab = 1000";
    set_model_info(&host, mine);
    EXPECT_EQ(host.struct_size, offsetof(tdm_model_info, description)) << "struct_size is the host's";
    EXPECT_EQ(host.n_vocab, 1000u);
    EXPECT_EQ(host.n_attention_layers, 2u);
    EXPECT_EQ(host.recurrent_states, nullptr);
    EXPECT_EQ(host.description, sentinel) << "a field the host does not have was written";

    tdm_draft_head_info hi{};
    hi.struct_size = sizeof hi;
    tdm_draft_head_info hm{};
    hm.hidden = TDM_HIDDEN_PRE_NORM;
    hm.n_embd = 64;
    set_draft_head_info(&hi, hm);
    EXPECT_EQ(hi.struct_size, sizeof hi);
    EXPECT_EQ(hi.hidden, TDM_HIDDEN_PRE_NORM);
    EXPECT_EQ(hi.n_embd, 64u);
}

}  // namespace
