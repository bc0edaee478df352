// SPDX-License-Identifier: Apache-2.0
// tests/plugin/capabilities_test.cpp: the ABI 2 entries of the host table as a
// plugin calls them: query_op, query_weight_type, get_limits, get_extension,
// and graph_op's status for each kind of refusal (tandem.h §2).
//
// To add a case: call the entry through host_api() exactly as a plugin would,
// then check the status and that last_error() names the op and the parameter.
#include <gtest/gtest.h>

#include <cstdlib>
#include <tandem/ext/target_weights.h>

#include <tandem/ext/block_draft.h>
#include <tandem/ext/custom_op.h>

#include <cstring>
#include <map>

#include "ops/limits.h"
#include "ops/op_def.h"
#include "plugin/handles.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const tdm_host_api& host() { return *host_api(); }

std::string last_error() { return host().last_error(); }

tdm_op_desc desc(uint32_t op, std::vector<int32_t> i = {}, std::vector<float> f = {}) {
    tdm_op_desc d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.op = op;
    for (size_t k = 0; k < i.size(); ++k) d.i[k] = i[k];
    for (size_t k = 0; k < f.size(); ++k) d.f[k] = f[k];
    return d;
}

// A refusal: the status, and last_error() containing `text`.
#define EXPECT_STATUS(call, status, text)                                        \
    do {                                                                         \
        const tdm_status st_ = (call);                                           \
        EXPECT_EQ(st_, status) << last_error();                                  \
        EXPECT_NE(last_error().find(text), std::string::npos) << last_error();   \
    } while (0)

TEST(HostTable, host_table_is_full_and_reports_the_project_version) {
    EXPECT_EQ(host().struct_size, sizeof(tdm_host_api));
    EXPECT_EQ(host().abi_version, TDM_ABI_VERSION);
    EXPECT_STREQ(host().host_version, TANDEM_VERSION);  // project(tandem VERSION ...)
    EXPECT_TRUE(TDM_HAS_MEMBER(&host(), tdm_host_api, get_extension));
    EXPECT_NE(host().query_op, nullptr);
    EXPECT_NE(host().query_weight_type, nullptr);
    EXPECT_NE(host().get_limits, nullptr);
    EXPECT_NE(host().get_extension, nullptr);
}

// ----------------------------------------------------------------------------- query_op

TEST(QueryOp, every_op_is_ok_with_default_params_or_its_required_ones) {
    // Ops whose params have no zero default (ops.h) get the smallest valid ones;
    // every other op is asked with all params zero. TDM_OP_CUSTOM needs an op
    // handle: tests/plugin/custom_op_test.cpp asks about it.
    const std::map<uint32_t, tdm_op_desc> required = {
        {TDM_OP_ROPE, desc(TDM_OP_ROPE, {}, {10000.0f})},
        {TDM_OP_TOP_K, desc(TDM_OP_TOP_K, {1})},
        {TDM_OP_GATED_DELTA_RULE, desc(TDM_OP_GATED_DELTA_RULE, {1, 1, 4, 4})},
    };
    for (const OpDef* def : all_ops()) {
        if (def->code == TDM_OP_CUSTOM) continue;
        auto it = required.find(def->code);
        const tdm_op_desc d = it != required.end() ? it->second : desc(def->code);
        EXPECT_EQ(host().query_op(&d), TDM_OK) << def->name << ": " << last_error();
    }
}

TEST(QueryOp, unknown_op_codes_are_unsupported_naming_the_known_range) {
    // the host-internal ops (int8 matmul) have codes of their own that plugins cannot name
    const uint32_t end = TDM_OP_LIST_END;  // one past the last listed code (tandem/op_list.h)
    for (uint32_t code : {0u, end, 1000u, 0x7fffffffu, uint32_t(kOpInternalQuantizeQ8), uint32_t(kOpInternalMatmulQ8)}) {
        const tdm_op_desc d = desc(code);
        EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED,
                      fmt::format("unknown op code {} (this host knows 1..{})", code, end - 1));
    }
}

TEST(QueryOp, unknown_kinds_and_modes_are_unsupported_naming_op_and_parameter) {
    tdm_op_desc d = desc(TDM_OP_UNARY, {99});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "unary: unknown kind 99 (i[0]");
    d = desc(TDM_OP_ROPE, {5}, {10000.0f});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "rope: unknown mode 5 (i[0]");
    d = desc(TDM_OP_ROPE, {0, 0, 3}, {10000.0f});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "rope: unknown sections kind 3 (i[2]");
    d = desc(TDM_OP_GLU, {2});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "glu: unknown kind 2 (i[0]");
    d = desc(TDM_OP_RMS_NORM, {3});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "rms_norm: unknown weight mode 3 (i[0]");
    d = desc(TDM_OP_CAST, {TDM_DTYPE_Q4_K});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "cast: unsupported target type 12");
    d = desc(TDM_OP_GATED_DELTA_RULE, {1, 1, 4, 4, 2});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "gated_delta_rule: unknown head map 2");
    d = desc(TDM_OP_CONV1D_CAUSAL, {2});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_UNSUPPORTED, "conv1d_causal: i[0] (SiLU) must be 0 or 1");
    // The kinds that exist are fine.
    for (int32_t k = TDM_UNARY_SILU; k <= TDM_UNARY_ADD_SCALAR; ++k) {
        d = desc(TDM_OP_UNARY, {k}, {k == TDM_UNARY_SOFTCAP ? 30.0f : 0.0f});
        EXPECT_EQ(host().query_op(&d), TDM_OK) << "unary kind " << k << ": " << last_error();
    }
}

TEST(QueryOp, params_over_a_host_limit_are_a_limit) {
    tdm_op_desc d = desc(TDM_OP_TOP_K, {257});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_LIMIT, "top_k: k = 257");
    d = desc(TDM_OP_TOP_K, {256});
    EXPECT_EQ(host().query_op(&d), TDM_OK) << last_error();
    d = desc(TDM_OP_GATED_DELTA_RULE, {1, 1, 4, 4, 0, 65});
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_LIMIT, "chunk size i[5] must be 0 (recurrent) to 64, got 65");
}

TEST(QueryOp, reads_a_v1_sized_desc_without_its_custom_field_and_refuses_a_shorter_one) {
    tdm_op_desc d = desc(TDM_OP_ADD);
    d.struct_size = TDM_V1_SIZEOF_OP_DESC;
    d.custom = reinterpret_cast<const tdm_custom_op*>(uintptr_t(0x10));  // past a v1 plugin's struct: never read
    EXPECT_EQ(host().query_op(&d), TDM_OK) << last_error();
    d.op = TDM_OP_CUSTOM;  // its custom reads as NULL
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_INVALID_ARGUMENT, "custom: tdm_op_desc.custom is NULL");
    d.struct_size = TDM_V1_SIZEOF_OP_DESC - 8;
    EXPECT_STATUS(host().query_op(&d), TDM_ERR_INVALID_ARGUMENT, "ABI 1 needs at least 152");
    EXPECT_STATUS(host().query_op(nullptr), TDM_ERR_INVALID_ARGUMENT, "null");
}

// ----------------------------------------------------------------------------- query_weight_type

TEST(QueryWeightType, every_built_weight_type_feeds_matmul_get_rows_and_matmul_id) {
    for (tdm_dtype t : {TDM_DTYPE_F32, TDM_DTYPE_F16, TDM_DTYPE_BF16, TDM_DTYPE_Q8_0, TDM_DTYPE_Q4_0, TDM_DTYPE_Q5_0,
                        TDM_DTYPE_Q5_1, TDM_DTYPE_Q4_K, TDM_DTYPE_Q5_K, TDM_DTYPE_Q6_K})
        for (uint32_t op : {TDM_OP_MATMUL, TDM_OP_GET_ROWS, TDM_OP_MATMUL_ID})
            EXPECT_EQ(host().query_weight_type(t, op), TDM_OK) << t << " " << op << ": " << last_error();
}

TEST(QueryWeightType, other_types_and_ops_are_unsupported_with_a_reason) {
    EXPECT_STATUS(host().query_weight_type(TDM_DTYPE_I32, TDM_OP_MATMUL), TDM_ERR_UNSUPPORTED,
                  "matmul: no kernel for i32 weights (this host has f32, f16, q4_0, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K, "
                  "bf16)");
    EXPECT_STATUS(host().query_weight_type(TDM_DTYPE_I8, TDM_OP_GET_ROWS), TDM_ERR_UNSUPPORTED,
                  "get_rows: no kernel for i8 weights");
    EXPECT_STATUS(host().query_weight_type(tdm_dtype(99), TDM_OP_MATMUL), TDM_ERR_UNSUPPORTED,
                  "weight type id 99 is unknown");
    EXPECT_STATUS(host().query_weight_type(TDM_DTYPE_F32, TDM_OP_ADD), TDM_ERR_UNSUPPORTED, "add reads no weights");
    EXPECT_STATUS(host().query_weight_type(TDM_DTYPE_F32, 77), TDM_ERR_UNSUPPORTED, "unknown op code 77");
}

// ----------------------------------------------------------------------------- get_limits

TEST(GetLimits, reports_the_limits_the_ops_enforce) {
    tdm_host_limits l;
    std::memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    ASSERT_EQ(host().get_limits(&l), TDM_OK) << last_error();
    EXPECT_EQ(l.struct_size, sizeof l);
    EXPECT_EQ(l.max_op_inputs, 8u);
    EXPECT_EQ(l.max_verify_rows, 16u);
    EXPECT_EQ(l.max_query_heads_per_kv_head, 16u);
    EXPECT_EQ(l.max_top_k, 256u);
    EXPECT_EQ(l.max_delta_rule_chunk, 64u);
    EXPECT_EQ(l.weight_row_align_bytes, 16u);
    EXPECT_EQ(l.activation_align_elems, 4u);
    EXPECT_EQ(l.get_rows_width_multiple, 4u);
    EXPECT_EQ(l.max_custom_op_push_bytes, 128u);
}

TEST(GetLimits, writes_only_the_fields_that_fit_a_shorter_struct) {
    tdm_host_limits l;
    std::memset(&l, 0xab, sizeof l);
    l.struct_size = offsetof(tdm_host_limits, max_top_k);  // a reader that knows three fields
    ASSERT_EQ(host().get_limits(&l), TDM_OK) << last_error();
    EXPECT_EQ(l.struct_size, offsetof(tdm_host_limits, max_top_k));
    EXPECT_EQ(l.max_op_inputs, 8u);
    EXPECT_EQ(l.max_query_heads_per_kv_head, 16u);
    EXPECT_EQ(l.max_top_k, 0xababababu);
    EXPECT_EQ(l.max_custom_op_push_bytes, 0xababababu);
    l.struct_size = 4;  // holds no field
    EXPECT_STATUS(host().get_limits(&l), TDM_ERR_INVALID_ARGUMENT, "holds no field");
    EXPECT_STATUS(host().get_limits(nullptr), TDM_ERR_INVALID_ARGUMENT, "null");
}

// ----------------------------------------------------------------------------- get_extension

TEST(GetExtension, offers_custom_op_version_1) {
    uint32_t version = 0;
    auto ext = static_cast<const tdm_ext_custom_op*>(host().get_extension(TDM_EXT_CUSTOM_OP, 1, &version));
    ASSERT_NE(ext, nullptr) << last_error();
    EXPECT_EQ(version, 1u);
    EXPECT_EQ(ext->struct_size, sizeof(tdm_ext_custom_op));
    EXPECT_NE(ext->create, nullptr);
    EXPECT_EQ(host().get_extension(TDM_EXT_CUSTOM_OP, 0, nullptr), ext);  // version pointer is optional
}

TEST(GetExtension, unknown_names_and_newer_versions_are_refused_naming_what_exists) {
    uint32_t version = 7;
    EXPECT_EQ(host().get_extension(TDM_EXT_CUSTOM_OP, 2, &version), nullptr);
    EXPECT_NE(last_error().find("'tdm.custom_op' version 2 or later asked for, this host offers version 1"),
              std::string::npos)
        << last_error();
    EXPECT_EQ(version, 7u);
    EXPECT_EQ(host().get_extension("tdm.kv_read", 1, &version), nullptr);
    EXPECT_NE(last_error().find("no extension 'tdm.kv_read' (it offers tdm.custom_op version 1, tdm.target_weights "
                                "version 1, tdm.host_rows version 1, tdm.encoder version 1, tdm.batched_draft version 1, "
                                "tdm.target_features version 1, tdm.block_draft version 2, "
                                "tdm.drafter_branches version 1, tdm.weight_transforms version 1)"),
              std::string::npos)
        << last_error();
    EXPECT_EQ(host().get_extension(nullptr, 1, &version), nullptr);
    EXPECT_NE(last_error().find("null name"), std::string::npos) << last_error();
}

TEST(GetExtension, extensions_named_in_TANDEM_HIDE_EXTENSIONS_are_not_offered) {
    {
        const test::ScopedEnv hide("TANDEM_HIDE_EXTENSIONS", "tdm.kv_read,tdm.host_rows");
        EXPECT_EQ(host().get_extension(TDM_EXT_HOST_ROWS, 1, nullptr), nullptr);
        EXPECT_NE(last_error().find("'tdm.host_rows' is hidden by TANDEM_HIDE_EXTENSIONS"), std::string::npos)
            << last_error();
        EXPECT_NE(host().get_extension(TDM_EXT_CUSTOM_OP, 1, nullptr), nullptr) << "only the names listed are hidden";
        EXPECT_EQ(host().get_extension("tdm.nothing", 1, nullptr), nullptr);
        EXPECT_EQ(last_error().find("tdm.host_rows"), std::string::npos) << "a hidden extension is not offered";
    }
    {
        const test::ScopedEnv hide("TANDEM_HIDE_EXTENSIONS", "tdm.host_row");  // whole names only
        EXPECT_NE(host().get_extension(TDM_EXT_HOST_ROWS, 1, nullptr), nullptr) << last_error();
    }
    {
        // name@N: offered at version N at most (0, or no number: hidden)
        const test::ScopedEnv hide("TANDEM_HIDE_EXTENSIONS", "tdm.block_draft@1,tdm.host_rows@0");
        uint32_t version = 0;
        EXPECT_NE(host().get_extension(TDM_EXT_BLOCK_DRAFT, 1, &version), nullptr) << last_error();
        EXPECT_EQ(version, 1u);
        EXPECT_EQ(host().get_extension(TDM_EXT_HOST_ROWS, 1, nullptr), nullptr);
        EXPECT_EQ(host().get_extension("tdm.nothing", 1, nullptr), nullptr);
        EXPECT_NE(last_error().find("tdm.block_draft version 1"), std::string::npos) << last_error();
    }
    EXPECT_NE(host().get_extension(TDM_EXT_HOST_ROWS, 1, nullptr), nullptr) << last_error();
}

TEST(GetExtension, target_weights_answers_only_inside_a_draft_heads_load) {
    uint32_t version = 0;
    const auto* tw = static_cast<const tdm_ext_target_weights*>(
        host().get_extension(TDM_EXT_TARGET_WEIGHTS, 1, &version));
    ASSERT_NE(tw, nullptr) << last_error();
    EXPECT_EQ(version, 1u);
    EXPECT_GE(tw->struct_size, sizeof(tdm_ext_target_weights));
    tdm_loader not_a_head{};  // a target's own loader: no target to read from
    const tdm_weight* w = reinterpret_cast<const tdm_weight*>(&version);
    EXPECT_EQ(tw->get(&not_a_head, "token_embd.weight", &w), TDM_ERR_NOT_FOUND);
    EXPECT_EQ(w, nullptr);
    EXPECT_NE(last_error().find("only a draft head's load callback has a target"), std::string::npos) << last_error();
    EXPECT_EQ(tw->get(nullptr, "x", &w), TDM_ERR_INVALID_ARGUMENT);
}

// ----------------------------------------------------------------------------- graph_op

class GraphOpStatus : public ::testing::Test {
protected:
    void SetUp() override {
        tdm_batch_desc b{sizeof(tdm_batch_desc), 2, 2, 0};
        init_graph_inputs(g, b, false);
        x = {g.graph.input(DType::F32, {512, 2}, "x")};
        wide = {g.graph.input(DType::F32, {513, 2}, "wide")};
        tokens = {g.tokens};
    }
    tdm_status op(tdm_op_desc d, std::vector<tdm_tensor> in) {
        d.n_inputs = uint32_t(in.size());
        for (size_t k = 0; k < in.size(); ++k) d.inputs[k] = in[k];
        return host().graph_op(&g, &d, &out);
    }
    tdm_graph g;
    tdm_tensor x{}, wide{}, tokens{}, out{};
};

TEST_F(GraphOpStatus, each_refusal_maps_to_its_status) {
    EXPECT_STATUS(op(desc(99), {x}), TDM_ERR_UNSUPPORTED, "unknown op code 99");
    EXPECT_STATUS(op(desc(TDM_OP_UNARY, {99}), {x}), TDM_ERR_UNSUPPORTED, "unary: unknown kind 99");
    EXPECT_STATUS(op(desc(TDM_OP_ADD), {x}), TDM_ERR_INVALID_ARGUMENT, "add: expects 2..2 inputs, got 1");
    EXPECT_STATUS(op(desc(TDM_OP_ADD), {x, tdm_tensor{9999}}), TDM_ERR_INVALID_ARGUMENT,
                  "add: input 1 is not a tensor of this graph");
    EXPECT_STATUS(op(desc(TDM_OP_ADD), {x, wide}), TDM_ERR_SHAPE, "add: shapes differ");
    EXPECT_STATUS(op(desc(TDM_OP_ADD), {x, tokens}), TDM_ERR_TYPE, "add: input 1 must be an f32 activation");
    EXPECT_STATUS(op(desc(TDM_OP_MATMUL), {x, x}), TDM_ERR_TYPE, "matmul: input 0 must be a weight");
    EXPECT_STATUS(op(desc(TDM_OP_TOP_K, {300}), {x}), TDM_ERR_LIMIT, "top_k: k = 300 is over this host's limit");
    EXPECT_STATUS(op(desc(TDM_OP_CUSTOM), {x}), TDM_ERR_INVALID_ARGUMENT, "custom: tdm_op_desc.custom is NULL");
    EXPECT_EQ(op(desc(TDM_OP_TOP_K, {256}), {x}), TDM_OK) << last_error();
}

TEST_F(GraphOpStatus, an_abi_1_plugin_gets_the_statuses_abi_1_had) {
    // ABI 1 reported every refused op as TDM_ERR_SHAPE and has no TYPE or LIMIT.
    g.plugin_abi = 1;
    EXPECT_STATUS(op(desc(TDM_OP_UNARY, {99}), {x}), TDM_ERR_SHAPE, "unary: unknown kind 99");
    EXPECT_STATUS(op(desc(TDM_OP_ADD), {x, tokens}), TDM_ERR_SHAPE, "add: input 1 must be an f32 activation");
    EXPECT_STATUS(op(desc(TDM_OP_TOP_K, {300}), {x}), TDM_ERR_SHAPE, "top_k: k = 300 is over this host's limit");
    EXPECT_STATUS(op(desc(TDM_OP_ADD), {x, tdm_tensor{9999}}), TDM_ERR_INVALID_ARGUMENT,
                  "add: input 1 is not a tensor of this graph");
}

TEST(HostTable, each_plugin_sees_the_table_of_the_version_it_negotiated) {
    const tdm_host_api* v1 = host_api(1);
    const tdm_host_api* v2 = host_api(2);
    EXPECT_EQ(v1->abi_version, 1u);
    EXPECT_EQ(v1->struct_size, TDM_V1_SIZEOF_HOST_API);
    EXPECT_FALSE(TDM_HAS_MEMBER(v1, tdm_host_api, query_op));
    EXPECT_TRUE(TDM_HAS_MEMBER(v1, tdm_host_api, graph_weight_rows));
    EXPECT_EQ(v1->graph_op, v2->graph_op);
    EXPECT_EQ(v2->abi_version, 2u);
    EXPECT_EQ(v2->struct_size, sizeof(tdm_host_api));
    EXPECT_TRUE(TDM_HAS_MEMBER(v2, tdm_host_api, get_extension));
    EXPECT_NE(v2->get_extension, nullptr);
}

TEST(HostTable, a_plugin_built_against_abi_3_0_is_not_offered_the_ops_of_3_1) {
    const tdm_host_api* v3_0 = host_api(3, 0);
    const tdm_host_api* v3_1 = host_api(3, 1);
    EXPECT_EQ(v3_0->abi_version, 3u);
    EXPECT_EQ(v3_0->abi_minor, 0u);
    EXPECT_EQ(v3_1->abi_minor, 1u);
    EXPECT_EQ(host_api(2)->abi_minor, 0u);
    const tdm_op_desc d = desc(TDM_OP_ADD_RMS_NORM);
    EXPECT_EQ(v3_1->query_op(&d), TDM_OK) << last_error();
    EXPECT_STATUS(v3_0->query_op(&d), TDM_ERR_UNSUPPORTED, "add_rms_norm is an op of ABI 3.1");
    EXPECT_STATUS(host_api(2)->query_op(&d), TDM_ERR_UNSUPPORTED, "add_rms_norm is an op of ABI 3.1");
    // the ops 3.0 had are offered to it as before
    for (uint32_t code = 1; code < TDM_OP_COUNT_V3; ++code) {
        const tdm_op_desc old = desc(code);
        const tdm_status st = v3_0->query_op(&old);
        EXPECT_EQ(st, v3_1->query_op(&old)) << code;
    }
}

TEST_F(GraphOpStatus, an_op_of_abi_3_1_is_built_for_a_3_1_plugin_only_and_gives_two_outputs) {
    g.plugin_abi = 3;
    g.plugin_abi_minor = 0;
    EXPECT_STATUS(op(desc(TDM_OP_ADD_RMS_NORM), {x, x}), TDM_ERR_UNSUPPORTED,
                  "add_rms_norm is an op of ABI 3.1, the plugin was built against ABI 3.0");
    g.plugin_abi_minor = 1;
    ASSERT_EQ(op(desc(TDM_OP_ADD_RMS_NORM), {x, x}), TDM_OK) << last_error();
    tdm_tensor normed{};
    ASSERT_EQ(host().graph_op_output(&g, out, 1, &normed), TDM_OK) << last_error();
    EXPECT_NE(normed.id, out.id);
    EXPECT_NE(normed.id, 0u);
}

TEST_F(GraphOpStatus, a_v1_plugins_desc_is_read_up_to_its_size) {
    tdm_op_desc d = desc(TDM_OP_ADD);
    d.struct_size = TDM_V1_SIZEOF_OP_DESC;
    d.custom = reinterpret_cast<const tdm_custom_op*>(uintptr_t(0x10));  // beyond a v1 desc: never read
    EXPECT_EQ(op(d, {x, x}), TDM_OK) << last_error();
    EXPECT_NE(out.id, 0u);
    d.struct_size = 100;
    EXPECT_STATUS(op(d, {x, x}), TDM_ERR_INVALID_ARGUMENT,
                  "graph_op: tdm_op_desc: struct_size is 100 bytes, ABI 1 needs at least 152");
}

}  // namespace
}  // namespace tdm
