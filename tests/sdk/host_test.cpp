// SPDX-License-Identifier: Apache-2.0
// tests/sdk/host_test.cpp: tandem/cpp/host.hpp against fake host tables: which
// entries a host has (a v1-size table, a v2 table with NULL entries), reading
// a short table touches none of its missing bytes, require_ops() with a host
// that cannot be asked and one that refuses, extensions, limits, registration
// and logging.
//
// To add a case: set fake()'s functions, build a table with fake_host_api()
// (or the v1-size one), Host::init it, and call the helper.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tandem/cpp/host.hpp>
#include <tandem/graph.h>

#include <cstring>
#include <string>

#include "fake_host.h"

namespace {

using sdk_test::fake;
using tdm::sdk::Err;
using tdm::sdk::Host;
using tdm::sdk::OpQuery;

static_assert(offsetof(tdm_host_api, query_op) == TDM_V1_SIZEOF_HOST_API,
              "the v2 entries start right after ABI 1's table");

class SdkHost : public ::testing::Test {
protected:
    void SetUp() override { fake().reset(); }
    char err[512] = "";
    Err e() { return Err(err, sizeof err); }
};

TEST_F(SdkHost, a_table_shorter_than_abi_1_is_refused_naming_both_sizes) {
    tdm_host_api api = sdk_test::fake_host_api();
    api.struct_size = 200;
    Host host;
    EXPECT_EQ(host.init(&api, "myplugin", e()), TDM_ERR_ABI_MISMATCH);
    EXPECT_NE(std::string(err).find("200 bytes, less than the 256 bytes of ABI 1"), std::string::npos) << err;
    EXPECT_FALSE(host.valid());
    EXPECT_EQ(host.init(nullptr, "myplugin", e()), TDM_ERR_ABI_MISMATCH);
}

TEST_F(SdkHost, a_v1_size_table_has_no_v2_entries_and_they_are_never_called) {
    fake().query_op = [](const tdm_op_desc&) { return TDM_ERR_UNSUPPORTED; };
    const tdm_host_api api = sdk_test::fake_v1_host_api_with_poisoned_tail();
    Host host;
    ASSERT_EQ(host.init(&api, "myplugin", e()), TDM_OK) << err;
    EXPECT_TRUE(host.valid());
    EXPECT_EQ(host.raw(), &api);
    EXPECT_EQ(host.abi_version(), 1u);
    EXPECT_FALSE(host.has_query_op());
    EXPECT_FALSE(host.has_query_weight_type());
    EXPECT_FALSE(host.has_get_limits());
    EXPECT_FALSE(host.has_get_extension());
    EXPECT_FALSE(TDM_HAS_MEMBER(&host.table(), tdm_host_api, query_op));
    // the v1 entries are there
    EXPECT_NE(host.table().load_weight, nullptr);
    EXPECT_NE(host.table().graph_weight_rows, nullptr) << "(an ABI 1 entry)";

    EXPECT_EQ(tdm::sdk::require_ops(host, {OpQuery(TDM_OP_ROPE), OpQuery(TDM_OP_MATMUL)}, e()), TDM_OK);
    tdm_host_limits lim;
    EXPECT_FALSE(host.limits(&lim));
    EXPECT_EQ(lim.max_top_k, 0u);
    EXPECT_EQ(host.extension("tdm.custom_op", 1), nullptr);
    EXPECT_EQ(host.query_op(OpQuery(TDM_OP_ROPE)), TDM_ERR_UNSUPPORTED);
    EXPECT_EQ(host.query_weight_type(TDM_DTYPE_Q4_K, TDM_OP_MATMUL), TDM_ERR_UNSUPPORTED);
    const void* table = nullptr;
    EXPECT_EQ(tdm::sdk::require_extension(host, "tdm.custom_op", 1, &table, e()), TDM_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(err).find("myplugin needs extension tdm.custom_op version 1 or later"), std::string::npos)
        << err;
    EXPECT_EQ(fake().v2_entry_calls, 0);
    EXPECT_TRUE(fake().queried.empty());
}

TEST_F(SdkHost, reading_a_v1_size_table_reads_no_byte_past_its_struct_size) {
    // The table's last byte is the last byte of a readable page; the next page
    // cannot be read: touching any byte of a v2 entry would crash.
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    void* mem = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    ASSERT_EQ(mprotect(static_cast<char*>(mem) + page, page, PROT_NONE), 0);
    const tdm_host_api full = sdk_test::fake_v1_host_api_with_poisoned_tail();
    char* at = static_cast<char*>(mem) + page - TDM_V1_SIZEOF_HOST_API;
    std::memcpy(at, &full, TDM_V1_SIZEOF_HOST_API);
    const tdm_host_api* api = reinterpret_cast<const tdm_host_api*>(at);

    Host host;
    EXPECT_EQ(host.init(api, "myplugin", e()), TDM_OK) << err;
    EXPECT_FALSE(host.has_query_op());
    EXPECT_FALSE(host.has_get_extension());
    EXPECT_EQ(host.table().struct_size, TDM_V1_SIZEOF_HOST_API);
    EXPECT_EQ(tdm::sdk::require_ops(host, {OpQuery(TDM_OP_GLU)}, e()), TDM_OK);
    munmap(mem, 2 * page);
}

TEST_F(SdkHost, a_v2_table_with_null_entries_is_treated_as_lacking_them) {
    const tdm_host_api api = sdk_test::fake_host_api();  // no function set: the v2 entries are NULL
    Host host;
    ASSERT_EQ(host.init(&api, "myplugin", e()), TDM_OK);
    EXPECT_TRUE(TDM_HAS_MEMBER(&host.table(), tdm_host_api, query_op));
    EXPECT_FALSE(host.has_query_op());
    EXPECT_EQ(tdm::sdk::require_ops(host, {OpQuery(TDM_OP_ROPE)}, e()), TDM_OK);
}

TEST_F(SdkHost, require_ops_names_the_op_and_parameter_the_host_refuses_and_quotes_it) {
    fake().query_op = [](const tdm_op_desc& d) {
        if (d.op == TDM_OP_ROPE && d.i[2] == TDM_ROPE_SECTIONS_INTERLEAVED) {
            fake().last_error = "rope: i[2] = 2 (sections mode) is not implemented";
            return TDM_ERR_UNSUPPORTED;
        }
        return TDM_OK;
    };
    const tdm_host_api api = sdk_test::fake_host_api();
    Host host;
    ASSERT_EQ(host.init(&api, "myplugin", e()), TDM_OK);
    ASSERT_TRUE(host.has_query_op());
    static constexpr OpQuery kOps[] = {
        OpQuery(TDM_OP_MATMUL),
        OpQuery(TDM_OP_ROPE, "NeoX").param_i(0, TDM_ROPE_NEOX).param_f(0, 1e6f),
        OpQuery(TDM_OP_ROPE, "interleaved M-RoPE sections").param_i(2, TDM_ROPE_SECTIONS_INTERLEAVED),
        OpQuery(TDM_OP_GLU),
    };
    EXPECT_EQ(tdm::sdk::require_ops(host, kOps, e()), TDM_ERR_UNSUPPORTED);
    EXPECT_STREQ(err,
                 "myplugin needs op rope (interleaved M-RoPE sections) that this host lacks: rope: i[2] = 2 "
                 "(sections mode) is not implemented");
    // asked in order, with the parameters, and stopped at the refusal
    ASSERT_EQ(fake().queried.size(), 3u);
    EXPECT_EQ(fake().queried[0].op, uint32_t(TDM_OP_MATMUL));
    EXPECT_EQ(fake().queried[1].struct_size, sizeof(tdm_op_desc));
    EXPECT_EQ(fake().queried[1].n_inputs, 0u);
    EXPECT_EQ(fake().queried[1].i[0], TDM_ROPE_NEOX);
    EXPECT_EQ(fake().queried[1].f[0], 1e6f);
    EXPECT_EQ(fake().queried[2].i[2], TDM_ROPE_SECTIONS_INTERLEAVED);

    // without a parameter description, and a host that gives no reason
    fake().queried.clear();
    fake().query_op = [](const tdm_op_desc&) {
        fake().last_error.clear();
        return TDM_ERR_UNSUPPORTED;
    };
    EXPECT_EQ(tdm::sdk::require_ops(host, {OpQuery(TDM_OP_MOE_SUM)}, e()), TDM_ERR_UNSUPPORTED);
    EXPECT_STREQ(err, "myplugin needs op moe_sum that this host lacks: unsupported");
}

TEST_F(SdkHost, require_ops_passes_when_the_host_has_every_op) {
    fake().query_op = [](const tdm_op_desc&) { return TDM_OK; };
    const tdm_host_api api = sdk_test::fake_host_api();
    Host host;
    ASSERT_EQ(host.init(&api, "myplugin", e()), TDM_OK);
    EXPECT_EQ(tdm::sdk::require_ops(host, {OpQuery(TDM_OP_MATMUL), OpQuery(TDM_OP_TOP_K).param_i(0, 8)}, e()),
              TDM_OK);
    ASSERT_EQ(fake().queried.size(), 2u);
    EXPECT_EQ(fake().queried[1].i[0], 8);
}

TEST_F(SdkHost, extensions_and_limits_come_from_the_host_when_it_has_them) {
    static const int kTable = 7;
    fake().get_extension = [](const char* name, uint32_t min_version, uint32_t* version) -> const void* {
        if (std::string(name) != "tdm.custom_op" || min_version > 1) {
            fake().last_error = "tdm.custom_op: this host has version 1";
            return nullptr;
        }
        if (version) *version = 1;
        return &kTable;
    };
    fake().get_limits = [](tdm_host_limits* out) {
        out->max_top_k = 256;
        out->max_op_inputs = 8;
        return TDM_OK;
    };
    const tdm_host_api api = sdk_test::fake_host_api();
    Host host;
    ASSERT_EQ(host.init(&api, "myplugin", e()), TDM_OK);
    const void* table = nullptr;
    uint32_t version = 0;
    EXPECT_EQ(tdm::sdk::require_extension(host, "tdm.custom_op", 1, &table, e(), &version), TDM_OK);
    EXPECT_EQ(table, &kTable);
    EXPECT_EQ(version, 1u);
    EXPECT_EQ(tdm::sdk::require_extension(host, "tdm.custom_op", 2, &table, e()), TDM_ERR_UNSUPPORTED);
    EXPECT_STREQ(err, "myplugin needs extension tdm.custom_op version 2 or later: tdm.custom_op: this host has version 1");
    tdm_host_limits lim;
    ASSERT_TRUE(host.limits(&lim));
    EXPECT_EQ(lim.max_top_k, 256u);
    EXPECT_EQ(lim.struct_size, sizeof lim);
}

TEST_F(SdkHost, registration_failures_name_the_descriptor_and_quote_the_host) {
    const tdm_host_api api = sdk_test::fake_host_api();
    Host host;
    ASSERT_EQ(host.init(&api, "myplugin", e()), TDM_OK);
    tdm_arch_desc arch{};
    arch.struct_size = sizeof arch;
    arch.name = "toy";
    EXPECT_EQ(host.register_arch(nullptr, arch, e()), TDM_OK);
    fake().register_status = TDM_ERR_INVALID_ARGUMENT;
    EXPECT_EQ(host.register_arch(nullptr, arch, e()), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(err, "myplugin: registering architecture toy: duplicate name toy");
    tdm_drafter_desc drafter{};
    drafter.name = "lookup";
    EXPECT_EQ(host.register_drafter(nullptr, drafter, e()), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(err, "myplugin: registering drafter lookup: duplicate name lookup");
}

TEST_F(SdkHost, log_formats_a_line_under_the_plugins_name) {
    const tdm_host_api api = sdk_test::fake_host_api();
    Host host;
    host.log(TDM_LOG_INFO, "dropped: no host yet");
    EXPECT_TRUE(fake().log.empty());
    ASSERT_EQ(host.init(&api, "myplugin", e()), TDM_OK);
    host.log(TDM_LOG_WARN, "%d tokens", 3);
    ASSERT_EQ(fake().log.size(), 1u);
    EXPECT_EQ(fake().log[0], "myplugin|3|3 tokens");
}

// A draft head step's logits width: the host's request when its batch desc is new enough
// to hold one, else the head's own option; 0 (all) for n_vocab or more.
TEST(SdkStepDraftVocab, takes_the_hosts_request_else_the_heads_own_choice) {
    tdm_batch_desc now{sizeof(tdm_batch_desc), 4, 1, 4096};
    EXPECT_EQ(tdm_step_draft_vocab(&now, 0, 151669), 4096u);
    EXPECT_EQ(tdm_step_draft_vocab(&now, 32768, 151669), 4096u);
    now.draft_vocab = 0;  // no request: the head's option
    EXPECT_EQ(tdm_step_draft_vocab(&now, 32768, 151669), 32768u);
    EXPECT_EQ(tdm_step_draft_vocab(&now, 0, 151669), 0u);
    now.draft_vocab = 151669;  // all of it: the plain LM head
    EXPECT_EQ(tdm_step_draft_vocab(&now, 0, 151669), 0u);
    // a host from before the field passes 12 bytes: whatever follows is not read
    tdm_batch_desc old{TDM_V1_SIZEOF_BATCH_DESC, 4, 1, 4096};
    EXPECT_EQ(tdm_step_draft_vocab(&old, 0, 151669), 0u);
    EXPECT_EQ(tdm_step_draft_vocab(&old, 8192, 151669), 8192u);
}

TEST(SdkOpName, names_every_listed_op) {
    for (uint32_t op = 1; op < TDM_OP_LIST_END; ++op)
        EXPECT_STRNE(tdm::sdk::op_name(op), "unknown op") << op;
    EXPECT_STREQ(tdm::sdk::op_name(TDM_OP_GATED_DELTA_RULE), "gated_delta_rule");
    EXPECT_STREQ(tdm::sdk::op_name(TDM_OP_ATTENTION_FULL), "attention_full");
    EXPECT_STREQ(tdm::sdk::op_name(TDM_OP_LIST_END), "unknown op");
}

TEST(SdkOpName, the_op_list_gives_each_op_of_ops_h_its_code_and_name) {
#define TDM_TEST_OP_(code, NAME, name, abi, minor)            \
    static_assert(code == TDM_OP_##NAME, #NAME);              \
    EXPECT_STREQ(tdm::sdk::op_name(TDM_OP_##NAME), name);
    TDM_OP_LIST(TDM_TEST_OP_)
#undef TDM_TEST_OP_
    EXPECT_STREQ(tdm::sdk::op_name(TDM_OP_ADD_RMS_NORM), "add_rms_norm");
}

}  // namespace
