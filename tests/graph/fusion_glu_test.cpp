// SPDX-License-Identifier: Apache-2.0
// tests/graph/fusion_glu_test.cpp: the pattern matching of the GLU epilogue pass
// (graph/fusion_glu.h) for a plain matmul and the glu that gates its result, Gemma 4's
// per-layer input gelu_tanh(W x) * e written as a unary gelu and a mul (fuse_graph makes
// them a geglu first): the node list after fuse_graph and fuse_glu_epilogues has one
// matmul_act_mul where the matmul's result has no other reader and the matmul kernel of the
// device's layout has the epilogue ("mv", forced here), and the ops unfused otherwise. The
// fused op's arithmetic is tests/ops/fused_ops_test.cpp's (MatmulActMul); Gemma 4's whole
// graph, tests/graph/graph_counts_test.cpp's.
// To add a case: a test building the chain with one thing changed, and the ops it keeps.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "graph/fusion.h"
#include "graph/fusion_glu.h"
#include "op_codes.h"
#include "ops/op_def.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"

namespace tdm {
namespace {

using test::OpHarness;

constexpr int64_t K = 64, M = 96, N = 2;

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

class FusionGlu : public test::DeviceTest {
protected:
    // Both passes, as the executor runs them; returns how many nodes have each op.
    std::vector<tdm_op> fuse(OpHarness& h) {
        fuse_graph(h.graph());
        fuse_glu_epilogues(h.graph(), device().caps());
        std::vector<tdm_op> ops;
        for (const Node& n : h.graph().nodes())
            if (n.desc.op != TDM_OP_VIEW_COLS) ops.push_back(n.desc.op);
        return ops;
    }
    TensorId weight(OpHarness& h, int64_t rows = M) {
        return h.weight(DType::F32, K, rows, f32_bytes(test::randn(size_t(K * rows), 7, 0.1f)));
    }
    TensorId x(OpHarness& h) { return h.input_f32({K, N}, test::randn(size_t(K * N), 8), "x"); }
    // e: columns [M, 2M) of a wider input, as a layer's slice of Gemma 4's per-layer inputs
    TensorId e(OpHarness& h) {
        const TensorId wide = h.input_f32({3 * M, N}, test::randn(size_t(3 * M * N), 9), "ple");
        return h.op(TDM_OP_VIEW_COLS, {wide}, {int32_t(M), int32_t(M)});
    }
    TensorId gelu(OpHarness& h, TensorId t) { return h.op(TDM_OP_UNARY, {t}, {TDM_UNARY_GELU_TANH}); }
};

TEST_F(FusionGlu, a_matmul_its_gelu_and_the_mul_by_a_view_become_one_matmul_act_mul_in_the_mv_layout) {
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    OpHarness h(device(), pipelines());
    const TensorId g = h.op(TDM_OP_MATMUL, {weight(h), x(h)});
    const TensorId y = h.op(TDM_OP_MUL, {gelu(h, g), e(h)});
    EXPECT_EQ(fuse(h), std::vector<tdm_op>{kOpInternalMatmulActMul});
    const Node& f = h.graph().nodes().back();
    EXPECT_EQ(f.out, y);  // the mul's result, written by the fused node
    EXPECT_EQ(f.desc.i[0], TDM_MATMUL_EPILOGUE_GEGLU);
}

TEST_F(FusionGlu, a_swiglu_of_a_matmul_and_another_tensor_fuses_too_and_e_may_have_other_readers) {
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    OpHarness h(device(), pipelines());
    const TensorId te = e(h);
    const TensorId y = h.op(TDM_OP_GLU, {h.op(TDM_OP_MATMUL, {weight(h), x(h)}), te}, {TDM_GLU_SWIGLU});
    h.op(TDM_OP_ADD, {y, te});
    EXPECT_EQ(fuse(h), (std::vector<tdm_op>{kOpInternalMatmulActMul, TDM_OP_ADD}));
    EXPECT_EQ(h.graph().nodes()[h.graph().nodes().size() - 2].desc.i[0], TDM_MATMUL_EPILOGUE_SWIGLU);
}

TEST_F(FusionGlu, a_matmul_result_with_another_reader_stays_a_matmul) {
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    OpHarness h(device(), pipelines());
    const TensorId g = h.op(TDM_OP_MATMUL, {weight(h), x(h)});
    h.op(TDM_OP_MUL, {gelu(h, g), e(h)});
    h.op(TDM_OP_SCALE, {g}, {}, {2.0f});
    EXPECT_EQ(fuse(h), (std::vector<tdm_op>{TDM_OP_MATMUL, TDM_OP_GLU, TDM_OP_SCALE}));
}

TEST_F(FusionGlu, layouts_without_the_epilogue_keep_the_matmul_and_the_glu) {
    for (const char* l : {"rl", "ks"}) {
        const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", l);
        OpHarness h(device(), pipelines());
        h.op(TDM_OP_MUL, {gelu(h, h.op(TDM_OP_MATMUL, {weight(h), x(h)})), e(h)});
        EXPECT_EQ(fuse(h), (std::vector<tdm_op>{TDM_OP_MATMUL, TDM_OP_GLU})) << l;
    }
}

TEST_F(FusionGlu, a_broadcast_or_weight_operand_and_a_matmul_with_an_add_stay_unfused) {
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", "mv");
    {  // e one row broadcast over the tokens: not the glu's shape
        OpHarness h(device(), pipelines());
        const TensorId row = h.input_f32({M, 1}, test::randn(size_t(M), 10), "row");
        h.op(TDM_OP_MUL, {gelu(h, h.op(TDM_OP_MATMUL, {weight(h), x(h)})), row});
        EXPECT_EQ(fuse(h), (std::vector<tdm_op>{TDM_OP_MATMUL, TDM_OP_UNARY, TDM_OP_MUL}));
    }
    {  // e an f32 weight of the result's shape
        OpHarness h(device(), pipelines());
        const TensorId w = h.weight(DType::F32, M, N, f32_bytes(test::randn(size_t(M * N), 11)));
        h.op(TDM_OP_MUL, {gelu(h, h.op(TDM_OP_MATMUL, {weight(h), x(h)})), w});
        EXPECT_EQ(fuse(h), (std::vector<tdm_op>{TDM_OP_MATMUL, TDM_OP_UNARY, TDM_OP_MUL}));
    }
    {  // the matmul has its add epilogue already
        OpHarness h(device(), pipelines());
        const TensorId add = h.input_f32({M, N}, test::randn(size_t(M * N), 12), "add");
        h.op(TDM_OP_MUL, {gelu(h, h.op(TDM_OP_MATMUL, {weight(h), x(h), add})), e(h)});
        EXPECT_EQ(fuse(h), (std::vector<tdm_op>{TDM_OP_MATMUL, TDM_OP_GLU}));
    }
}

}  // namespace
}  // namespace tdm
