// SPDX-License-Identifier: Apache-2.0
// tests/ops/op_table_test.cpp: the op table (host/ops/op_def.h) covers every op
// code of tandem/ops.h exactly once, and Graph::op refuses what it must with
// the status tandem.h §2 gives. The capability queries built on the table are
// tested through the host API in tests/plugin/capabilities_test.cpp.
//
// To add a case: build the graph with Graph or OpHarness, call op(), check the
// error's code() and that its message names the op and the parameter.
#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

#include "graph/graph.h"
#include "ops/op_def.h"

namespace tdm {
namespace {

TEST(OpTable, every_op_code_of_ops_h_has_exactly_one_entry) {
    std::set<std::string> names;
    for (uint32_t code = 1; code < TDM_OP_LIST_END; ++code) {
        const OpDef* d = find_op(code);
        ASSERT_NE(d, nullptr) << "op code " << code << " has no OpDef";
        EXPECT_EQ(uint32_t(d->code), code);
        EXPECT_STREQ(op_name(tdm_op(code)), d->name);
        EXPECT_TRUE(names.insert(d->name).second) << "two ops are named " << d->name;
        EXPECT_GE(d->min_inputs, 1) << d->name;
        EXPECT_LE(d->max_inputs, 8) << d->name;
        EXPECT_LE(d->min_inputs, d->max_inputs) << d->name;
        EXPECT_NE(d->validate, nullptr) << d->name;
    }
    EXPECT_EQ(all_ops().size(), size_t(TDM_OP_LIST_END - 1));
    EXPECT_EQ(max_op_code(), uint32_t(TDM_OP_LIST_END - 1));
    EXPECT_EQ(find_op(TDM_OP_NONE), nullptr);
    EXPECT_EQ(find_op(TDM_OP_LIST_END), nullptr);
    EXPECT_EQ(find_op(0x7fffffff), nullptr);
    EXPECT_STREQ(op_name(tdm_op(999)), "unknown");
}

TEST(OpTable, the_op_list_and_the_enum_of_ops_h_agree_and_name_the_host_ops) {
    // tandem/op_list.h is the one list; ops.h's enum must give each entry its code,
    // and the host's OpDef of that code must carry the listed name.
    struct Listed {
        uint32_t code, enum_value;
        const char* name;
    };
#define TDM_TEST_LISTED_(code, NAME, name, abi, minor) {code, uint32_t(TDM_OP_##NAME), name},
    const Listed listed[] = {TDM_OP_LIST(TDM_TEST_LISTED_)};
#undef TDM_TEST_LISTED_
    ASSERT_EQ(std::size(listed), size_t(TDM_OP_LIST_END - 1));
    for (size_t k = 0; k < std::size(listed); ++k) {
        EXPECT_EQ(listed[k].code, uint32_t(k + 1)) << "codes run 1, 2, ... in order";
        EXPECT_EQ(listed[k].enum_value, listed[k].code) << listed[k].name;
        const OpDef* d = find_op(listed[k].code);
        ASSERT_NE(d, nullptr) << listed[k].name;
        EXPECT_STREQ(d->name, listed[k].name);
    }
    // the codes of each ABI release: 1..27 ABI 1, + custom ABI 2, + two in ABI 3.0
    EXPECT_EQ(TDM_OP_COUNT_V1, 28);
    EXPECT_EQ(TDM_OP_COUNT_V2, 29);
    EXPECT_EQ(TDM_OP_COUNT_V3, 31);
}

TEST(OpTable, an_op_of_a_minor_version_is_offered_only_to_plugins_built_against_it) {
    EXPECT_TRUE(op_offered(TDM_OP_ADD_RMS_NORM, 3, 1).ok());
    const Status old = op_offered(TDM_OP_ADD_RMS_NORM, 3, 0);
    ASSERT_FALSE(old.ok());
    EXPECT_EQ(old.error().code(), int(TDM_ERR_UNSUPPORTED));
    EXPECT_NE(old.error().message().find("add_rms_norm is an op of ABI 3.1, the plugin was built against ABI 3.0"),
              std::string::npos)
        << old.error().message();
    EXPECT_FALSE(op_offered(TDM_OP_ADD_RMS_NORM, 2, 0).ok());
    // ops of a version's first release stay offered to every plugin, as before minors
    for (uint32_t code = 1; code < TDM_OP_COUNT_V3; ++code) EXPECT_TRUE(op_offered(code, 1, 0).ok()) << code;
    EXPECT_FALSE(op_offered(TDM_OP_LIST_END, 3, 1).ok());
}

TEST(OpTable, only_views_have_no_kernel_and_only_weight_ops_name_weight_shaders) {
    for (const OpDef* d : all_ops()) {
        const bool view = d->code == TDM_OP_VIEW_COLS || d->code == TDM_OP_RESHAPE;
        EXPECT_EQ(d->record == nullptr, view) << d->name;
        const bool weights = d->code == TDM_OP_MATMUL || d->code == TDM_OP_GET_ROWS || d->code == TDM_OP_MATMUL_ID;
        EXPECT_EQ(d->weight_shaders != nullptr, weights) << d->name;
    }
}

class GraphRefusals : public ::testing::Test {
protected:
    Graph g;
    TensorId x = g.input(DType::F32, {8, 2}, "x");
    TensorId y = g.input(DType::F32, {8, 2}, "y");
    TensorId ids = g.input(DType::I32, {2}, "ids");

    // The error of adding this op, which must fail.
    Error refuse(tdm_op op, std::vector<TensorId> in, std::vector<int32_t> i = {}, std::vector<float> f = {}) {
        OpDesc d;
        d.op = op;
        for (size_t k = 0; k < in.size(); ++k) d.in[k] = in[k];
        d.n_in = int(in.size());
        for (size_t k = 0; k < i.size(); ++k) d.i[k] = i[k];
        for (size_t k = 0; k < f.size(); ++k) d.f[k] = f[k];
        auto r = g.op(d);
        EXPECT_FALSE(r.ok()) << op_name(op) << " was accepted";
        return r.ok() ? Error("accepted") : r.error();
    }
};

#define EXPECT_REFUSED(err, status, text)                                             \
    do {                                                                              \
        const Error e_ = (err);                                                       \
        EXPECT_EQ(e_.code(), int(status)) << e_.message();                            \
        EXPECT_NE(e_.message().find(text), std::string::npos) << e_.message();        \
    } while (0)

TEST_F(GraphRefusals, unknown_op_codes_are_unsupported) {
    const uint32_t unknown = TDM_OP_LIST_END;
    EXPECT_REFUSED(refuse(tdm_op(unknown), {x}), TDM_ERR_UNSUPPORTED,
                   fmt::format("unknown op code {} (this host knows 1..{})", unknown, unknown - 1));
    EXPECT_REFUSED(refuse(TDM_OP_NONE, {x}), TDM_ERR_UNSUPPORTED, "unknown op code 0");
}

TEST_F(GraphRefusals, unknown_kinds_are_refused_instead_of_falling_back) {
    // Before the op table, unary kind 99 ran as add-scalar and glu kind 5 as swiglu.
    EXPECT_REFUSED(refuse(TDM_OP_UNARY, {x}, {99}), TDM_ERR_UNSUPPORTED, "unary: unknown kind 99");
    EXPECT_REFUSED(refuse(TDM_OP_UNARY, {x}, {-1}), TDM_ERR_UNSUPPORTED, "unary: unknown kind -1");
    EXPECT_REFUSED(refuse(TDM_OP_GLU, {x, y}, {5}), TDM_ERR_UNSUPPORTED, "glu: unknown kind 5");
    EXPECT_REFUSED(refuse(TDM_OP_RMS_NORM, {x}, {3}), TDM_ERR_UNSUPPORTED, "rms_norm: unknown weight mode 3");
    EXPECT_REFUSED(refuse(TDM_OP_ROPE, {x, ids}, {7}, {10000.0f}), TDM_ERR_UNSUPPORTED, "rope: unknown mode 7");
    EXPECT_REFUSED(refuse(TDM_OP_ROPE, {x, ids}, {0, 0, 3}, {10000.0f}), TDM_ERR_UNSUPPORTED,
                   "rope: unknown sections kind 3");
    EXPECT_REFUSED(refuse(TDM_OP_CAST, {x}, {TDM_DTYPE_Q8_0}), TDM_ERR_UNSUPPORTED, "cast: unsupported target type 8");
    EXPECT_REFUSED(refuse(TDM_OP_UNARY, {x}, {TDM_UNARY_SOFTCAP}), TDM_ERR_UNSUPPORTED, "unary softcap: f[0]");
}

TEST_F(GraphRefusals, each_kind_of_mistake_gets_its_status) {
    EXPECT_REFUSED(refuse(TDM_OP_ADD, {x}), TDM_ERR_INVALID_ARGUMENT, "add: expects 2..2 inputs, got 1");
    EXPECT_REFUSED(refuse(TDM_OP_ADD, {x, TensorId(999)}), TDM_ERR_INVALID_ARGUMENT, "add: input 1 is not a valid tensor");
    const TensorId wide = g.input(DType::F32, {9, 2}, "wide");
    EXPECT_REFUSED(refuse(TDM_OP_ADD, {x, wide}), TDM_ERR_SHAPE, "add: shapes differ");
    EXPECT_REFUSED(refuse(TDM_OP_ADD, {x, ids}), TDM_ERR_TYPE, "add: input 1 must be an f32 activation");
    EXPECT_REFUSED(refuse(TDM_OP_MATMUL, {x, y}), TDM_ERR_TYPE, "matmul: input 0 must be a weight");
    EXPECT_REFUSED(refuse(TDM_OP_TOP_K, {x}, {257}), TDM_ERR_LIMIT, "top_k: k = 257 is over this host's limit of 256");
    EXPECT_REFUSED(refuse(TDM_OP_TOP_K, {x}, {9}), TDM_ERR_SHAPE, "top_k: k = 9 out of range");
    EXPECT_REFUSED(refuse(TDM_OP_GATED_DELTA_RULE, {x, x, x, x}, {1, 1, 16, 16, 0, 65}), TDM_ERR_LIMIT,
                   "chunk size i[5]");
    EXPECT_REFUSED(refuse(TDM_OP_GATED_DELTA_RULE, {x, x, x, x}, {1, 1, 16, 260}), TDM_ERR_LIMIT,
                   "multiples of 4 up to 256");
    EXPECT_REFUSED(refuse(TDM_OP_KV_STORE, {x, x, x}), TDM_ERR_TYPE, "kv_store: input 0 must be a KV layer");
}

TEST_F(GraphRefusals, attention_over_16_query_heads_per_kv_head_is_over_the_limit) {
    KvLayerBinding kv;
    kv.n_kv_head = 1;
    kv.dk = kv.dv = 8;
    kv.name = "blk.0";
    g.set_batch(g.input(DType::I32, {1}, "positions"), g.input(DType::I32, {1}, "seq_ids"));
    const TensorId q = g.input(DType::F32, {8, 17, 1}, "q");
    EXPECT_REFUSED(refuse(TDM_OP_ATTENTION, {q, g.kv(&kv)}), TDM_ERR_LIMIT, "17 query heads per kv head");
    const TensorId q16 = g.input(DType::F32, {8, 16, 1}, "q16");
    OpDesc d;
    d.op = TDM_OP_ATTENTION;
    d.in[0] = q16;
    d.in[1] = g.kv(&kv);
    d.n_in = 2;
    auto r = g.op(d);
    EXPECT_TRUE(r.ok()) << r.error().message();
}

TEST_F(GraphRefusals, custom_op_without_its_handle_is_an_invalid_argument) {
    EXPECT_REFUSED(refuse(TDM_OP_CUSTOM, {x}), TDM_ERR_INVALID_ARGUMENT, "custom: tdm_op_desc.custom is NULL");
}

}  // namespace
}  // namespace tdm
