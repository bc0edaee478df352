// SPDX-License-Identifier: Apache-2.0
// tests/ops/batch_invariance_test.cpp: DESIGN invariant 1 at the kernel level.
// The result for one token must be bit-identical whether it is computed alone
// or inside a batch of up to 16 tokens (a verify batch). This is what lets the
// speculative round accept drafts from one batched target pass and still
// produce exactly the tokens plain decoding would.
//
// To add a case: compute the op for a batch, then for each token alone, and
// compare the bytes (memcmp-level equality via operator== on float vectors
// would treat -0 == 0 and NaN != NaN; we compare bit patterns).
#include <gtest/gtest.h>

#include <cstring>

#include "common/quant.h"
#include "ops/op_def.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"

namespace tdm {
namespace {

using test::OpHarness;

using test::randn;

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                              DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

// Both matmul layouts (host/ops/matmul.cpp: "ks" for GPUs, "rl" for CPU devices) run
// on whatever device the tests have.
class MatmulInvariance : public test::DeviceTest,
                         public ::testing::WithParamInterface<std::tuple<DType, const char*>> {};

TEST_P(MatmulInvariance, each_token_of_a_batch_of_1_to_16_equals_it_computed_alone) {
    const DType t = std::get<0>(GetParam());
    // "int8": Q8_0 weights times int8 activations (Graph::set_int8_matmul)
    const bool int8 = std::string_view(std::get<1>(GetParam())) == "int8";
    const test::ScopedEnv layout("TANDEM_MATMUL_LAYOUT", int8 ? "rl" : std::get<1>(GetParam()));
    const int64_t K = 768, M = 45;  // K: 3 super-blocks; M: not a multiple of the rows per workgroup
    const auto wf = randn(size_t(K * M), 7, 0.1f);
    const auto wb = quantize_matrix(t, wf.data(), M, K);
    const int max_n = 16;
    const auto x = randn(size_t(K * max_n), 8);

    // each token alone
    std::vector<std::vector<float>> alone(max_n);
    {
        OpHarness h(device(), pipelines());
        h.graph().set_int8_matmul(int8);
        const TensorId w = h.weight(t, K, M, wb);
        const TensorId xi = h.input_f32({K, 1}, std::vector<float>(x.begin(), x.begin() + K));
        const TensorId y = h.op(TDM_OP_MATMUL, {w, xi});
        h.run({y});
        for (int tok = 0; tok < max_n; ++tok) {
            std::memcpy(h.compiled().input_data(xi), x.data() + tok * K, K * sizeof(float));
            h.rerun();
            alone[tok] = h.f32(y);
        }
    }
    // every batch width 1..16, token i of the batch is x[i]
    for (int n = 1; n <= max_n; ++n) {
        OpHarness h(device(), pipelines());
        h.graph().set_int8_matmul(int8);
        const TensorId w = h.weight(t, K, M, wb);
        const TensorId y = h.op(TDM_OP_MATMUL, {w, h.input_f32({K, n}, std::vector<float>(x.begin(), x.begin() + n * K))});
        if (int8) {
            ASSERT_EQ(h.graph().nodes().back().desc.op, kOpInternalMatmulQ8) << "the int8 path did not run";
        }
        h.run({y});
        const auto out = h.f32(y);
        for (int tok = 0; tok < n; ++tok)
            EXPECT_TRUE(same_bits(out.data() + tok * M, alone[tok].data(), size_t(M)))
                << dtype_name(t) << ": token " << tok << " of a batch of " << n << " differs from decode";
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulInvariance,
                         ::testing::Combine(::testing::ValuesIn(kWeightTypes), ::testing::Values("ks", "rl")),
                         [](const auto& p) {
                             return std::string(dtype_name(std::get<0>(p.param))) + "_" + std::get<1>(p.param);
                         });

INSTANTIATE_TEST_SUITE_P(Int8, MatmulInvariance, ::testing::Combine(::testing::Values(DType::Q8_0), ::testing::Values("int8")),
                         [](const auto& p) { return std::string(dtype_name(std::get<0>(p.param))) + "_int8"; });

// Every attention layout (TANDEM_ATTENTION_LAYOUT: "ks" a workgroup per token, "rl"
// tokens per lane, the default on CPU devices, "split" the GPUs' split-KV passes), with and
// without a sliding window, and with two sequences' tokens interleaved in one batch.
class AttentionInvariance : public test::DeviceTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(AttentionInvariance, each_query_of_a_verify_batch_equals_it_computed_alone) {
    const test::ScopedEnv layout("TANDEM_ATTENTION_LAYOUT", GetParam());
    const uint32_t n_head = 8, n_kv = 2, d = 64, block = 16;
    const int kv_len = 290, max_n = 16, n_seq = 2;
    std::vector<std::vector<int32_t>> lists(n_seq);
    for (int b = 0; b < (kv_len + int(block) - 1) / int(block); ++b) {
        lists[0].push_back(b * 3 % 19);
        lists[1].push_back(19 + b);
    }
    auto kv = test::make_test_kv(device(), n_kv, d, d, block, 19 + 19, lists, true);
    for (int s = 0; s < n_seq; ++s) {
        const auto k = randn(size_t(kv_len) * n_kv * d, uint64_t(20 + 2 * s)),
                   v = randn(size_t(kv_len) * n_kv * d, uint64_t(21 + 2 * s));
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos(kv_len), seq(kv_len, s);
        for (int i = 0; i < kv_len; ++i) pos[i] = i;
        h.batch(pos, seq);
        h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv->binding), h.input_f32({d, n_kv, kv_len}, k, "k"),
                               h.input_f32({d, n_kv, kv_len}, v, "v")});
        h.run({});
    }
    const auto q = randn(size_t(max_n) * n_head * d, 22);
    const int first = kv_len - max_n;  // queries at positions first .. kv_len-1
    // queries q0 .. q0+n-1; with `mixed`, odd queries belong to sequence 1
    auto run = [&](int q0, int n, int window, bool mixed) {
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos, seq;
        for (int i = 0; i < n; ++i) {
            pos.push_back(first + q0 + i);
            seq.push_back(mixed && (q0 + i) % 2 ? 1 : 0);
        }
        h.batch(pos, seq);
        const size_t stride = size_t(n_head) * d;
        const TensorId o = h.op(TDM_OP_ATTENTION,
                                {h.input_f32({d, n_head, n}, std::vector<float>(q.begin() + q0 * stride,
                                                                                q.begin() + (q0 + n) * stride)),
                                 h.graph().kv(&kv->binding)},
                                {window}, {0.0f, 0.0f});
        h.run({o});
        return h.f32(o);
    };
    for (const auto& [window, mixed] : {std::pair{0, false}, std::pair{50, false}, std::pair{0, true}}) {
        std::vector<std::vector<float>> alone;
        for (int i = 0; i < max_n; ++i) alone.push_back(run(i, 1, window, mixed));
        for (int n : {2, 4, 7, 16}) {
            const auto out = run(0, n, window, mixed);
            for (int i = 0; i < n; ++i)
                EXPECT_TRUE(same_bits(out.data() + size_t(i) * n_head * d, alone[i].data(), size_t(n_head) * d))
                    << "query " << i << " of a batch of " << n << ", window " << window << (mixed ? ", two sequences" : "");
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Layouts, AttentionInvariance, ::testing::Values("ks", "rl", "split"),
                         [](const auto& p) { return std::string(p.param); });

}  // namespace
}  // namespace tdm
