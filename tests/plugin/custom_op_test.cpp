// SPDX-License-Identifier: Apache-2.0
// tests/plugin/custom_op_test.cpp: extension "tdm.custom_op" end to end. A
// plugin's SPIR-V (tests/plugins/shaders/*.comp, compiled at build time) is
// checked when the op is created, runs as TDM_OP_CUSTOM on the test device
// and matches a CPU computation, for both dispatch kinds; each malformed op is
// refused with a status and a message naming it; a plugin that creates an op
// in its init (tests/plugins/custom_op.c) keeps it in its record.
//
// To add a case: create the op with create() below (a registry context as the
// plugin loader builds one), add it to a graph with Graph::op or the host's
// graph_op, run it with OpHarness or compile(), compare with the CPU.
#include <gtest/gtest.h>

#include <tandem/ext/custom_op.h>
#include <tandem/graph.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "graph/executor.h"
#include "plugin/handles.h"
#include "plugin/plugin_loader.h"
#include "plugin/registry.h"
#include "support/device_fixture.h"
#include "support/op_harness.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const uint32_t kScaleAdd[] =
#include "scale_add.spv.inc"
    ;
const uint32_t kRowArgmax[] =
#include "row_argmax.spv.inc"
    ;
const uint32_t kFixedWidth[] =
#include "fixed_width.spv.inc"
    ;

using test::randn;

// y = a * f[0] + b: two f32 inputs, one float param, element dispatch.
tdm_custom_op_desc scale_add_desc() {
    tdm_custom_op_desc d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = "test.scale_add";
    d.spirv = kScaleAdd;
    d.spirv_bytes = sizeof kScaleAdd;
    d.n_inputs = 2;
    d.local_size_x = 64;
    d.dispatch = TDM_CUSTOM_DISPATCH_ELEMENTS;
    d.output_shape = TDM_CUSTOM_OUTPUT_LIKE_INPUT0;
    d.output_type = TDM_DTYPE_F32;
    d.n_float_params = 1;
    return d;
}

// y[r] = argmax(x[r]) + base[r]: f32 and i32 inputs, i32 output of i[0]
// columns, one workgroup per row.
tdm_custom_op_desc row_argmax_desc() {
    tdm_custom_op_desc d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = "test.row_argmax";
    d.spirv = kRowArgmax;
    d.spirv_bytes = sizeof kRowArgmax;
    d.n_inputs = 2;
    d.local_size_x = 32;
    d.dispatch = TDM_CUSTOM_DISPATCH_ROWS;
    d.output_shape = TDM_CUSTOM_OUTPUT_COLS_PARAM;
    d.output_type = TDM_DTYPE_I32;
    d.n_int_params = 1;
    return d;
}

class CustomOpExt : public test::DeviceTest {
protected:
    void SetUp() override {
        test::DeviceTest::SetUp();
        auto rec = std::make_unique<PluginRecord>();
        rec->name = "custom-op-fixture";
        plugin = reg.add_plugin(std::move(rec));
        uint32_t version = 0;
        ext = static_cast<const tdm_ext_custom_op*>(host_api()->get_extension(TDM_EXT_CUSTOM_OP, 1, &version));
        ASSERT_NE(ext, nullptr) << host_api()->last_error();
    }
    // Creates the op as a plugin's init would (a registry context).
    tdm_status create(const tdm_custom_op_desc& d, const tdm_custom_op** op) {
        tdm_registry r{&reg, plugin};
        return ext->create(&r, &d, op);
    }
    const tdm_custom_op* create_ok(const tdm_custom_op_desc& d) {
        const tdm_custom_op* op = nullptr;
        EXPECT_EQ(create(d, &op), TDM_OK) << host_api()->last_error();
        return op;
    }
    // Expects create to fail with this status and a message containing `text`.
    void expect_refused(const tdm_custom_op_desc& d, tdm_status status, const std::string& text) {
        const tdm_custom_op* op = nullptr;
        const size_t before = plugin->custom_ops.size();
        EXPECT_EQ(create(d, &op), status) << host_api()->last_error();
        const std::string msg = host_api()->last_error();
        EXPECT_NE(msg.find(text), std::string::npos) << msg;
        EXPECT_EQ(plugin->custom_ops.size(), before) << "a refused op was kept";
    }

    Registry reg;
    PluginRecord* plugin = nullptr;
    const tdm_ext_custom_op* ext = nullptr;
};

TEST_F(CustomOpExt, element_op_through_graph_op_matches_cpu_on_strided_inputs) {
    const tdm_custom_op* op = create_ok(scale_add_desc());
    ASSERT_NE(op, nullptr);
    const int64_t C = 37, R = 5, W = 40;  // a is columns [3, 40) of a [40, R] input
    const auto a_full = randn(size_t(W * R), 1), b = randn(size_t(C * R), 2);
    tdm_graph g;
    init_graph_inputs(g, tdm_batch_desc{sizeof(tdm_batch_desc), uint32_t(R), uint32_t(R)}, false);
    const TensorId ta = g.graph.input(DType::F32, {W, R}, "a"), tb = g.graph.input(DType::F32, {C, R}, "b");
    // As a plugin builds it: the SDK's typed helpers over graph_op.
    tdm_builder bld = tdm_builder_init(host_api(), &g);
    const tdm_tensor in[2] = {tdm_view_cols(&bld, tdm_tensor{ta}, 3, int32_t(C), "a_view"), tdm_tensor{tb}};
    const float scale = 1.5f;
    const TensorId y = tdm_custom(&bld, op, in, 2, nullptr, 0, &scale, 1, "scaled").id;
    char err[sizeof bld.message] = {0};
    ASSERT_EQ(tdm_builder_finish(&bld, err, sizeof err), TDM_OK) << err;
    ASSERT_NE(y, kNoTensor);
    EXPECT_EQ(g.graph.tensor(y).ne[0], C);
    EXPECT_EQ(g.graph.tensor(y).rows(), R);
    EXPECT_EQ(g.graph.tensor(y).name, "scaled");
    tdm_builder bad = tdm_builder_init(host_api(), &g);
    EXPECT_EQ(tdm_custom(&bad, nullptr, in, 2, nullptr, 0, &scale, 1, "none").id, 0u);
    EXPECT_EQ(bad.status, TDM_ERR_INVALID_ARGUMENT);
    ASSERT_TRUE(g.graph.mark_output(y).ok());

    auto cg = CompiledGraph::compile(device(), pipelines(), std::move(g.graph));
    ASSERT_TRUE(cg.ok()) << cg.error().message();
    std::memcpy((*cg)->input_data(ta), a_full.data(), a_full.size() * 4);
    std::memcpy((*cg)->input_data(tb), b.data(), b.size() * 4);
    ASSERT_TRUE((*cg)->run().ok());
    const float* got = (*cg)->output_as<float>(y);
    for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) {
            const float want = a_full[size_t(r * W + 3 + c)] * 1.5f + b[size_t(r * C + c)];
            EXPECT_NEAR(got[r * C + c], want, 1e-6f * (1.0f + std::fabs(want))) << "row " << r << " col " << c;
        }
}

TEST_F(CustomOpExt, row_op_with_i32_input_and_output_matches_cpu_and_reuses_its_pipeline) {
    const tdm_custom_op* op = create_ok(row_argmax_desc());
    ASSERT_NE(op, nullptr);
    const size_t pipelines_before = pipelines().pipeline_count();
    for (int pass = 0; pass < 2; ++pass) {
        const int64_t C = 300 + pass, R = 7;
        auto x = randn(size_t(C * R), 10 + uint32_t(pass));
        x[size_t(2 * C + 5)] = x[size_t(2 * C + 250)] = 100.0f;  // a tie: the lower index wins
        std::vector<int32_t> base(static_cast<size_t>(R));
        for (int64_t r = 0; r < R; ++r) base[size_t(r)] = int32_t(1000 * r);
        test::OpHarness h(device(), pipelines());
        OpDesc d;
        d.op = TDM_OP_CUSTOM;
        d.custom = from_handle(op);
        d.in[0] = h.input_f32({C, R}, x);
        d.in[1] = h.input_i32({1, R}, base);
        d.n_in = 2;
        d.i[0] = 1;  // output columns
        auto y = h.graph().op(d);
        ASSERT_TRUE(y.ok()) << y.error().message();
        EXPECT_EQ(h.graph().tensor(*y).type, DType::I32);
        h.run({*y});
        const auto got = h.i32(*y);
        ASSERT_EQ(got.size(), size_t(R));
        for (int64_t r = 0; r < R; ++r) {
            const auto row = x.begin() + r * C;
            const int32_t want = int32_t(std::max_element(row, row + C) - row) + base[size_t(r)];
            EXPECT_EQ(got[size_t(r)], want) << "row " << r;
        }
        EXPECT_EQ(got[2], 2000 + 5);
    }
    EXPECT_EQ(pipelines().pipeline_count(), pipelines_before + 1) << "compiled at first use, then cached";
}

TEST_F(CustomOpExt, malformed_modules_are_refused_naming_the_op) {
    std::vector<uint32_t> words(kScaleAdd, kScaleAdd + sizeof kScaleAdd / 4);
    words[0] = 0x12345678;
    tdm_custom_op_desc d = scale_add_desc();
    d.spirv = words.data();
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT,
                   "custom op 'test.scale_add': not a SPIR-V module (magic 0x12345678, expected 0x07230203)");

    d = scale_add_desc();
    d.entry_point = "nope";
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT,
                   "custom op 'test.scale_add': no GLCompute entry point 'nope' (the module has 'main')");

    d = scale_add_desc();
    d.n_inputs = 1;  // the shader's output binding 2 is then out of range
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "custom op 'test.scale_add': binding 2 is outside 0..1");

    d = scale_add_desc();
    d.n_float_params = 0;  // the shader reads 11 words, the host would push 10
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT,
                   "custom op 'test.scale_add': the shader's push-constant block is 44 bytes, the host pushes 40");

    d = scale_add_desc();
    d.spirv_bytes = 18;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "custom op 'test.scale_add': spirv_bytes 18");

    d = scale_add_desc();
    d.spirv = kFixedWidth;
    d.spirv_bytes = sizeof kFixedWidth;
    d.n_inputs = 1;
    d.n_float_params = 0;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT,
                   "custom op 'test.scale_add': the shader's workgroup width is 32, the descriptor's local_size_x 64");
    d.local_size_x = 32;
    EXPECT_NE(create_ok(d), nullptr);
}

// A real module with hand-made instructions appended: the checks only scan, so
// where an instruction stands does not matter to them.
struct SpirvEdit {
    std::vector<uint32_t> w;
    uint32_t new_id() { return w[3]++; }  // the header's id bound
    void add(uint32_t opcode, std::vector<uint32_t> operands) {
        w.push_back(uint32_t(operands.size() + 1) << 16 | opcode);
        w.insert(w.end(), operands.begin(), operands.end());
    }
    // Operands of the first instruction with this opcode for which `pick` holds.
    std::vector<uint32_t> find(uint32_t opcode, const std::function<bool(const uint32_t*, uint32_t)>& pick) const {
        for (size_t i = 5; i < w.size();) {
            const uint32_t len = w[i] >> 16;
            if (len == 0) break;
            if ((w[i] & 0xffff) == opcode && pick(&w[i + 1], len - 1)) return {w.begin() + long(i) + 1, w.begin() + long(i + len)};
            i += len;
        }
        return {};
    }
};
constexpr uint32_t kOpTypeFloat = 22, kOpTypeArray = 28, kOpTypeStruct = 30, kOpTypePointer = 32, kOpConstant = 43,
                   kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72;

TEST_F(CustomOpExt, an_array_type_that_is_its_own_element_is_refused_not_followed_forever) {
    SpirvEdit e{std::vector<uint32_t>(kScaleAdd, kScaleAdd + sizeof kScaleAdd / 4)};
    // the pointee of binding 0's variable becomes an array of itself
    const auto binding = e.find(kOpDecorate, [](const uint32_t* a, uint32_t n) { return n >= 3 && a[1] == 33 && a[2] == 0; });
    ASSERT_FALSE(binding.empty());
    const auto var = e.find(kOpVariable, [&](const uint32_t* a, uint32_t n) { return n >= 3 && a[1] == binding[0]; });
    ASSERT_FALSE(var.empty());
    const auto ptr = e.find(kOpTypePointer, [&](const uint32_t* a, uint32_t n) { return n >= 3 && a[0] == var[0]; });
    const auto len = e.find(kOpConstant, [](const uint32_t*, uint32_t n) { return n == 3; });
    ASSERT_FALSE(ptr.empty());
    ASSERT_FALSE(len.empty());
    e.add(kOpTypeArray, {ptr[2], ptr[2], len[1]});
    tdm_custom_op_desc d = scale_add_desc();
    d.spirv = e.w.data();
    d.spirv_bytes = e.w.size() * 4;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "nest more than 16 deep");
}

TEST_F(CustomOpExt, a_push_block_of_deeply_repeated_structs_is_sized_in_linear_time) {
    SpirvEdit e{std::vector<uint32_t>(kScaleAdd, kScaleAdd + sizeof kScaleAdd / 4)};
    const auto f32 = e.find(kOpTypeFloat, [](const uint32_t* a, uint32_t n) { return n >= 2 && a[1] == 32; });
    ASSERT_FALSE(f32.empty());
    // 8 levels of structs of 40 members of the level below: 40^8 paths, 8 types
    uint32_t inner = f32[0];
    uint64_t inner_bytes = 4;
    for (int level = 0; level < 8; ++level) {
        const uint32_t id = e.new_id();
        std::vector<uint32_t> ops = {id};
        for (uint32_t k = 0; k < 40; ++k) ops.push_back(inner);
        e.add(kOpTypeStruct, ops);
        for (uint32_t k = 0; k < 40; ++k) e.add(kOpMemberDecorate, {id, k, 35 /* Offset */, uint32_t(std::min<uint64_t>(k * inner_bytes, 0xffffffffu))});
        inner = id;
        inner_bytes *= 40;
    }
    const uint32_t ptr = e.new_id(), var = e.new_id();
    e.add(kOpTypePointer, {ptr, 9 /* PushConstant */, inner});
    e.add(kOpVariable, {ptr, var, 9});
    tdm_custom_op_desc d = scale_add_desc();
    d.spirv = e.w.data();
    d.spirv_bytes = e.w.size() * 4;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "the shader's push-constant block is 4294967296 bytes");
}

TEST_F(CustomOpExt, malformed_descriptors_are_refused_naming_the_op) {
    tdm_custom_op_desc d = scale_add_desc();
    d.n_int_params = 16;
    d.n_float_params = 8;  // 4 + 3 * 2 + 24 words = 136 bytes
    expect_refused(d, TDM_ERR_LIMIT, "custom op 'test.scale_add': 136 push-constant bytes");

    d = scale_add_desc();
    d.n_inputs = 0;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "custom op 'test.scale_add': n_inputs 0 is outside 1..4");
    d.n_inputs = 5;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "custom op 'test.scale_add': n_inputs 5 is outside 1..4");

    d = scale_add_desc();
    d.output_type = TDM_DTYPE_F16;
    expect_refused(d, TDM_ERR_UNSUPPORTED, "custom op 'test.scale_add': output_type 1");
    d = scale_add_desc();
    d.dispatch = 2;
    expect_refused(d, TDM_ERR_UNSUPPORTED, "custom op 'test.scale_add': unknown dispatch 2");
    d = scale_add_desc();
    d.output_shape = 9;
    expect_refused(d, TDM_ERR_UNSUPPORTED, "custom op 'test.scale_add': unknown output_shape 9");

    d = scale_add_desc();
    d.struct_size = TDM_EXT_CUSTOM_OP_V1_SIZEOF_DESC - 4;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "custom op 'test.scale_add': tdm_custom_op_desc.struct_size 68");

    d = scale_add_desc();
    d.name = nullptr;
    expect_refused(d, TDM_ERR_INVALID_ARGUMENT, "tdm.custom_op: the descriptor has no name");
}

TEST_F(CustomOpExt, create_outside_init_is_refused) {
    const tdm_custom_op_desc d = scale_add_desc();
    const tdm_custom_op* op = nullptr;
    EXPECT_EQ(ext->create(nullptr, &d, &op), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(host_api()->last_error()).find("custom op 'test.scale_add': create is only allowed during init"),
              std::string::npos)
        << host_api()->last_error();
    EXPECT_EQ(op, nullptr);
}

TEST_F(CustomOpExt, graph_checks_inputs_rows_and_params_against_the_op) {
    const tdm_custom_op* sa = create_ok(scale_add_desc());
    const tdm_custom_op* ra = create_ok(row_argmax_desc());
    ASSERT_TRUE(sa && ra);
    Graph g;
    const TensorId x = g.input(DType::F32, {8, 4}, "x"), x3 = g.input(DType::F32, {8, 3}, "x3");
    const TensorId i32 = g.input(DType::I32, {1, 4}, "base");
    KvLayerBinding kv;
    kv.name = "kv";
    auto add = [&](const tdm_custom_op* op, std::vector<TensorId> in, int32_t i0 = 0) {
        OpDesc d;
        d.op = TDM_OP_CUSTOM;
        d.custom = from_handle(op);
        for (size_t k = 0; k < in.size(); ++k) d.in[k] = in[k];
        d.n_in = int(in.size());
        d.i[0] = i0;
        return g.op(d);
    };
    auto expect = [](const Result<TensorId>& r, tdm_status st, const char* text) {
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().code(), int(st)) << r.error().message();
        EXPECT_NE(r.error().message().find(text), std::string::npos) << r.error().message();
    };
    expect(add(sa, {x}), TDM_ERR_INVALID_ARGUMENT, "custom op 'test.scale_add': expects 2 inputs, got 1");
    expect(add(sa, {x, g.kv(&kv)}), TDM_ERR_TYPE, "custom op 'test.scale_add': input 1 must be an f32 or i32 activation");
    expect(add(sa, {x, x3}), TDM_ERR_SHAPE, "custom op 'test.scale_add': input 1 has 3 rows, input 0 4");
    expect(add(ra, {x, i32}, 0), TDM_ERR_UNSUPPORTED, "custom op 'test.row_argmax': i[0] (the output columns) must be > 0");
    const TensorId tall = g.input(DType::F32, {4, 65536}, "tall");
    expect(add(sa, {tall, tall}), TDM_ERR_LIMIT, "custom op 'test.scale_add': 65536 output rows, this host handles at most 65535");
    auto ok = add(ra, {x, i32}, 3);
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(g.tensor(*ok).ne[0], 3);
    EXPECT_EQ(g.tensor(*ok).rows(), 4);

    tdm_op_desc q;
    std::memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = TDM_OP_CUSTOM;
    q.custom = ra;
    EXPECT_EQ(host_api()->query_op(&q), TDM_ERR_UNSUPPORTED);  // i[0] = 0 columns
    q.i[0] = 1;
    EXPECT_EQ(host_api()->query_op(&q), TDM_OK) << host_api()->last_error();
}

TEST_F(CustomOpExt, plugin_creating_an_op_in_init_keeps_it_in_its_record_and_it_runs) {
    Registry plugins;
    auto st = load_plugin_file(plugins, std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-custom_op.so");
    ASSERT_TRUE(st.ok()) << st.error().message();
    ASSERT_EQ(plugins.plugins().size(), 1u);
    const PluginRecord& p = *plugins.plugins()[0];
    EXPECT_TRUE(p.error.empty()) << p.error;
    EXPECT_EQ(p.name, "custom-op-test");
    EXPECT_EQ(p.abi, 2u);
    EXPECT_NE(p.handle, nullptr);
    ASSERT_EQ(p.custom_ops.size(), 1u);
    const tdm::CustomOp& op = *p.custom_ops[0];
    EXPECT_EQ(op.name, "custom-op-test.scale_add");
    EXPECT_EQ(op.n_inputs, 2u);
    EXPECT_NE(std::find(p.provides.begin(), p.provides.end(), "custom op custom-op-test.scale_add"), p.provides.end());

    const auto a = randn(64 * 3, 20), b = randn(64 * 3, 21);
    test::OpHarness h(device(), pipelines());
    OpDesc d;
    d.op = TDM_OP_CUSTOM;
    d.custom = &op;
    d.in[0] = h.input_f32({64, 3}, a);
    d.in[1] = h.input_f32({64, 3}, b, "b");
    d.n_in = 2;
    d.f[0] = -0.25f;
    auto y = h.graph().op(d);
    ASSERT_TRUE(y.ok()) << y.error().message();
    h.run({*y});
    const auto got = h.f32(*y);
    for (size_t k = 0; k < got.size(); ++k)
        EXPECT_NEAR(got[k], a[k] * -0.25f + b[k], 1e-6f * (1.0f + std::fabs(b[k]))) << k;
}

}  // namespace
}  // namespace tdm
