// SPDX-License-Identifier: Apache-2.0
// tests/graph/finite_probe_test.cpp: the per-op NaN/Inf probes of TANDEM_CHECK_NAN=1
// (graph/finite_probe.h) find the first op, in execution order, whose result is not
// finite, whether a weight carried the NaN or a finite value overflowed; the flags are
// cleared for every run; and the op is placed in its layer by the weights it (or the op
// it reads from) reads (graph/op_location.h).
// To add a case: build a small graph with named weights on an OpHarness, run it with
// probes, and check first_non_finite() and describe_op_location().
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "graph/op_location.h"
#include "support/device_fixture.h"
#include "support/op_harness.h"

namespace tdm::test {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class FiniteProbe : public DeviceTest {
protected:
    // A named f32 norm weight of n elements in the harness's graph.
    TensorId norm_weight(OpHarness& h, const std::string& name, std::vector<float> values) {
        const int64_t ne[4] = {int64_t(values.size()), 1, 1, 1};
        std::vector<uint8_t> bytes(values.size() * 4);
        std::memcpy(bytes.data(), values.data(), bytes.size());
        auto w = DeviceWeight::upload(device(), arena_, name, DType::F32, ne, bytes.data());
        EXPECT_TRUE(w.ok()) << w.error().message();
        weights_.push_back(std::move(w).value());
        return h.graph().weight(weights_.back().get());
    }
    static TensorId rms_norm(OpHarness& h, TensorId x, TensorId w) {
        return h.op(TDM_OP_RMS_NORM, {x, w}, {TDM_NORM_WEIGHT}, {1e-6f});
    }
    static size_t node_of(const CompiledGraph& cg, TensorId out) {
        for (size_t i = 0; i < cg.graph().nodes().size(); ++i)
            if (cg.graph().nodes()[i].out == out) return i;
        return size_t(-1);
    }

    vk::Arena arena_{test_device(), vk::MemoryKind::device, "probe test weights", 1 << 20};
    std::vector<std::unique_ptr<DeviceWeight>> weights_;
};

std::vector<float> ramp(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 0.25f + float(i) * 0.125f;
    return v;
}

TEST_F(FiniteProbe, names_the_first_op_whose_result_holds_a_nan_from_a_weight) {
    OpHarness h(device(), pipelines());
    const TensorId x = h.input_f32({8, 3}, ramp(24));
    const TensorId a = rms_norm(h, x, norm_weight(h, "blk.0.attn_norm.weight", ramp(8)));
    const TensorId b = h.op(TDM_OP_SCALE, {a}, {}, {2.0f});
    std::vector<float> poisoned = ramp(8);
    poisoned[5] = kNaN;
    const TensorId c = rms_norm(h, b, norm_weight(h, "blk.1.attn_norm.weight", poisoned));
    const TensorId d = h.op(TDM_OP_SCALE, {c}, {}, {0.5f});
    CompileOptions probes;
    probes.probe_non_finite = true;
    h.run({d}, probes);

    const auto first = h.compiled().first_non_finite();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->node, node_of(h.compiled(), c));
    EXPECT_EQ(first->tensor, c);
    const std::string where = describe_op_location(h.compiled().graph(), first->node, first->tensor);
    EXPECT_EQ(where.rfind("blk.1 rms_norm (op rms_norm, output 'rms_norm' f32 [8, 3]", 0), 0u) << where;
    EXPECT_NE(where.find("reads blk.1.attn_norm.weight"), std::string::npos) << where;
    // the op after it, which reads no weight, belongs to the same layer
    EXPECT_EQ(layer_of_node(h.compiled().graph(), node_of(h.compiled(), d)), "blk.1");
    EXPECT_EQ(layer_of_node(h.compiled().graph(), node_of(h.compiled(), b)), "blk.0");
}

TEST_F(FiniteProbe, finds_a_finite_value_that_overflows_and_clears_the_flags_for_each_run) {
    OpHarness h(device(), pipelines());
    const TensorId x = h.input_f32({8, 2}, ramp(16));
    const TensorId a = h.op(TDM_OP_MUL, {x, norm_weight(h, "model.layers.4.input_layernorm.weight", std::vector<float>(8, 1.0f))});
    const TensorId b = h.op(TDM_OP_SCALE, {a}, {}, {1e30f});
    const TensorId c = h.op(TDM_OP_SCALE, {b}, {}, {1e10f});  // past FLT_MAX: +inf
    CompileOptions probes;
    probes.probe_non_finite = true;
    h.run({c}, probes);
    auto first = h.compiled().first_non_finite();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->tensor, c);
    EXPECT_EQ(layer_of_node(h.compiled().graph(), first->node), "model.layers.4");

    // small inputs: nothing overflows, and the last run's flags are gone
    std::vector<float> in(16, 1e-20f);
    std::memcpy(h.compiled().input_data(x), in.data(), in.size() * 4);
    h.rerun();
    EXPECT_FALSE(h.compiled().first_non_finite().has_value());

    // a NaN in the input: the first op that reads it is named
    in[3] = kNaN;
    std::memcpy(h.compiled().input_data(x), in.data(), in.size() * 4);
    h.rerun();
    first = h.compiled().first_non_finite();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->tensor, a);
}

TEST_F(FiniteProbe, a_graph_compiled_without_probes_reports_nothing) {
    OpHarness h(device(), pipelines());
    std::vector<float> in = ramp(16);
    in[0] = kNaN;
    const TensorId x = h.input_f32({8, 2}, in);
    const TensorId y = h.op(TDM_OP_SCALE, {x}, {}, {3.0f});
    h.run({y});
    EXPECT_TRUE(std::isnan(h.f32(y)[0]));
    EXPECT_FALSE(h.compiled().first_non_finite().has_value());
}

TEST(OpLocation, a_weight_s_layer_is_its_name_up_to_the_first_number) {
    EXPECT_EQ(layer_of_weight("blk.3.attn_q.weight"), "blk.3");
    EXPECT_EQ(layer_of_weight("blk.12.ffn_down_exps.weight"), "blk.12");
    EXPECT_EQ(layer_of_weight("model.layers.7.self_attn.o_proj.weight"), "model.layers.7");
    EXPECT_EQ(layer_of_weight("mtp.layers.0.mlp.gate_proj.weight"), "mtp.layers.0");
    EXPECT_EQ(layer_of_weight("output_norm.weight"), "output_norm");
    EXPECT_EQ(layer_of_weight("token_embd.weight"), "token_embd");
    EXPECT_EQ(layer_of_weight("blk.3a.x"), "blk.3a.x");
    EXPECT_EQ(layer_of_weight("lm_head"), "lm_head");
}

}  // namespace
}  // namespace tdm::test
