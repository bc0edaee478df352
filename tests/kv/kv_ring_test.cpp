// SPDX-License-Identifier: Apache-2.0
// tests/kv/kv_ring_test.cpp: kv_store and attention over a sliding-window ring
// (KvLayerBinding::ring_blocks, host/kv/kv_layout.h) give bit for bit the outputs
// of the same ops over a linear layer that keeps every position, for a sequence
// that runs many times around the ring, with batches of 1..rows_max rows and
// speculative-style rollbacks (a batch's tail rewritten by the next one).
//
// To add a case: add a RingCase (heads, dims, window, storage, block size, rows_max).
#include <gtest/gtest.h>

#include <random>

#include "support/device_fixture.h"
#include "support/op_harness.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using test::OpHarness;

using test::randn;

struct RingCase {
    const char* name;
    int n_head, n_kv_head, dk, dv;
    int window;
    bool f16;
    uint32_t block, rows_max;
};

class KvRingOps : public test::DeviceTest, public ::testing::WithParamInterface<RingCase> {};

TEST_P(KvRingOps, ring_layer_outputs_equal_linear_layer_outputs_far_past_the_ring) {
    const RingCase c = GetParam();
    const int total = 200;
    // the ring KvPool gives a layer of this window (host/kv/kv_layout.h)
    const uint32_t R = (uint32_t(c.window) + c.rows_max - 1 + c.block - 1) / c.block;
    ASSERT_GT(uint32_t(total), 4 * R * c.block) << "the sequence must wrap the ring several times";

    // two sequences in each layer; the test writes sequence 1
    const uint32_t nb = (uint32_t(total) + c.rows_max + c.block - 1) / c.block;
    std::vector<std::vector<int32_t>> linear_lists(2), ring_lists(2);
    for (uint32_t b = 0; b < nb; ++b) {
        linear_lists[0].push_back(int32_t(2 * b));
        linear_lists[1].push_back(int32_t(2 * (nb - 1 - b) + 1));
    }
    for (uint32_t s = 0; s < 2; ++s)
        for (uint32_t b = 0; b < R; ++b) ring_lists[s].push_back(int32_t(s * R + b));
    auto lin = test::make_test_kv(device(), uint32_t(c.n_kv_head), uint32_t(c.dk), uint32_t(c.dv), c.block, 2 * nb,
                                  linear_lists, c.f16);
    auto ring = test::make_test_kv(device(), uint32_t(c.n_kv_head), uint32_t(c.dk), uint32_t(c.dv), c.block, 2 * R,
                                   ring_lists, c.f16);
    ring->binding.ring_blocks = R;
    ring->binding.window = uint32_t(c.window);
    ASSERT_EQ(ring->binding.max_blocks, R);

    std::mt19937 rng(7);
    const float scale = 0.2f;
    int pos = 0, batches = 0, rollbacks = 0;
    while (pos < total) {
        // a batch of n rows at pos..pos+n-1; the next one starts after m of them
        // (m < n: the rest were rejected drafts, rewritten by the next batch)
        const int n = 1 + int(rng() % c.rows_max);
        const int m = (rng() % 3 == 0) ? 1 + int(rng() % uint32_t(n)) : n;
        rollbacks += m < n;
        const uint32_t seed = 1000 + uint32_t(batches) * 3;
        const auto k = randn(size_t(n * c.n_kv_head * c.dk), seed);
        const auto v = randn(size_t(n * c.n_kv_head * c.dv), seed + 1);
        const auto q = randn(size_t(n * c.n_head * c.dk), seed + 2);
        std::vector<int32_t> positions(static_cast<size_t>(n)), seqs(static_cast<size_t>(n), 1);
        for (int i = 0; i < n; ++i) positions[size_t(i)] = pos + i;

        OpHarness h(device(), pipelines());
        h.batch(positions, seqs);
        TensorId out[2];
        for (int l = 0; l < 2; ++l) {
            test::TestKvLayer& kv = l == 0 ? *lin : *ring;
            const TensorId st = h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv.binding), h.input_f32({c.dk, c.n_kv_head, n}, k, "k"),
                                                       h.input_f32({c.dv, c.n_kv_head, n}, v, "v")});
            out[l] = h.op(TDM_OP_ATTENTION, {h.input_f32({c.dk, c.n_head, n}, q, "q"), st}, {c.window}, {scale, 0.0f});
        }
        h.run({out[0], out[1]});
        const auto a = h.f32(out[0]), b = h.f32(out[1]);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i)
            ASSERT_EQ(a[i], b[i]) << c.name << ": batch " << batches << " at positions " << pos << ".." << pos + n - 1
                                  << ", output element " << i;
        pos += m;
        ++batches;
    }
    EXPECT_GT(rollbacks, 3);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, KvRingOps,
    ::testing::Values(RingCase{"gqa_f16_two_blocks", 4, 2, 32, 32, 12, true, 8, 5},
                      RingCase{"f32_dv_differs_odd_window", 4, 1, 32, 64, 37, false, 16, 9},
                      RingCase{"one_block_ring", 2, 2, 16, 16, 5, true, 16, 4},
                      RingCase{"window_1", 2, 1, 16, 16, 1, true, 4, 3}),
    [](const auto& p) { return std::string(p.param.name); });

// Attention that would read past a ring's window (full attention, or a wider window) is
// refused when the graph is built, not computed from overwritten rows.
class KvRingRefusal : public test::DeviceTest {};

TEST_F(KvRingRefusal, attention_wider_than_a_ring_window_is_refused) {
    auto ring = test::make_test_kv(device(), 1, 16, 16, 8, 2, {{0, 1}}, true);
    ring->binding.ring_blocks = 2;
    ring->binding.window = 6;
    for (int window : {0, 7}) {
        OpHarness h(device(), pipelines());
        h.batch({3}, {0});
        OpDesc d;
        d.op = TDM_OP_ATTENTION;
        d.in[0] = h.input_f32({16, 1, 1}, std::vector<float>(16), "q");
        d.in[1] = h.graph().kv(&ring->binding);
        d.n_in = 2;
        d.i[0] = window;
        auto r = h.graph().op(d);
        ASSERT_FALSE(r.ok()) << "window " << window;
        EXPECT_NE(r.error().message().find("keeps only the last 6 positions"), std::string::npos)
            << r.error().message();
    }
    OpHarness h(device(), pipelines());
    h.batch({3}, {0});
    EXPECT_TRUE(h.graph().op([&] {
        OpDesc d;
        d.op = TDM_OP_ATTENTION;
        d.in[0] = h.input_f32({16, 1, 1}, std::vector<float>(16), "q");
        d.in[1] = h.graph().kv(&ring->binding);
        d.n_in = 2;
        d.i[0] = 6;
        return d;
    }()).ok());
}

}  // namespace
}  // namespace tdm
