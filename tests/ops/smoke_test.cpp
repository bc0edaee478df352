// SPDX-License-Identifier: Apache-2.0
// tests/ops/smoke_test.cpp: the executor end to end on the smallest graphs.
#include <gtest/gtest.h>

#include <vector>

#include "graph/executor.h"
#include "graph/weight.h"
#include "support/device_fixture.h"

namespace tdm {
namespace {

class Smoke : public test::DeviceTest {};

TEST_F(Smoke, add_of_two_inputs_runs_and_reads_back) {
    Graph g;
    const TensorId a = g.input(DType::F32, {5, 3}, "a");
    const TensorId b = g.input(DType::F32, {5, 3}, "b");
    OpDesc d;
    d.op = TDM_OP_ADD;
    d.in[0] = a;
    d.in[1] = b;
    d.n_in = 2;
    auto y = g.op(d);
    ASSERT_TRUE(y.ok()) << y.error().message();
    ASSERT_TRUE(g.mark_output(*y).ok());
    auto cg = CompiledGraph::compile(device(), pipelines(), std::move(g));
    ASSERT_TRUE(cg.ok()) << cg.error().message();
    float* pa = (*cg)->input_as<float>(a);
    float* pb = (*cg)->input_as<float>(b);
    for (int i = 0; i < 15; ++i) {
        pa[i] = float(i);
        pb[i] = 100.0f * float(i);
    }
    ASSERT_TRUE((*cg)->run().ok());
    const float* py = (*cg)->output_as<float>(*y);
    for (int i = 0; i < 15; ++i) EXPECT_EQ(py[i], 101.0f * float(i));
    // replaying the recorded graph with new inputs
    for (int i = 0; i < 15; ++i) pa[i] = 1.0f;
    ASSERT_TRUE((*cg)->run().ok());
    for (int i = 0; i < 15; ++i) EXPECT_EQ(py[i], 1.0f + 100.0f * float(i));
}

TEST_F(Smoke, arena_gives_large_requests_their_own_buffer_and_keeps_filling_the_open_block) {
    // The 26B-A4B expert pattern: a 242 MiB plane, then its 15 MiB scale plane, repeated.
    // Scaled down: blocks of 1 MiB, planes of 0.95 MiB and 60 KiB. A bump allocator that
    // moved on to each large buffer opened a fresh block for every small plane (about 1.85x).
    const uint64_t block = 1 << 20, big = block * 95 / 100, small = 100 << 10;
    vk::Arena arena(device(), vk::MemoryKind::device, "test arena", block);
    std::vector<vk::BufferSlice> slices;
    for (int i = 0; i < 8; ++i) {
        for (uint64_t size : {big, small}) {
            auto s = arena.allocate(size, "plane");
            ASSERT_TRUE(s.ok()) << s.error().message();
            slices.push_back(*s);
        }
    }
    EXPECT_EQ(arena.used_bytes(), 8 * (big + small));
    // the first large plane opens a block; 7 own buffers of exactly `big` follow, and the 8
    // small planes share the second block
    EXPECT_EQ(arena.reserved_bytes(), 7 * big + 2 * block);
    for (size_t i = 0; i < slices.size(); i += 2) EXPECT_EQ(slices[i].offset, 0u);
    for (size_t i = 3; i < slices.size(); i += 2) EXPECT_EQ(slices[i].buffer, slices[1].buffer);
    // a request that does not fit what is left of the open block opens the next one
    auto tail = arena.allocate(block / 4 - 1, "tail");
    ASSERT_TRUE(tail.ok());
    auto tail2 = arena.allocate(block / 4 - 1, "tail");
    ASSERT_TRUE(tail2.ok());
    EXPECT_NE(tail->buffer, slices[1].buffer);
    EXPECT_EQ(tail2->buffer, tail->buffer);
}

TEST_F(Smoke, arena_puts_a_small_model_in_one_block_whatever_its_tensor_sizes) {
    // Model::load sizes the block as the file plus 1 MiB: every tensor fits the one block
    const uint64_t block = 1 << 20;
    vk::Arena arena(device(), vk::MemoryKind::device, "test arena", block);
    for (uint64_t size : {block * 3 / 10, block / 10, block * 4 / 10, block / 20})
        ASSERT_TRUE(arena.allocate(size, "t").ok());
    EXPECT_EQ(arena.reserved_bytes(), block);
}

TEST_F(Smoke, f32_matmul_matches_naive_product) {
    const int K = 64, M = 40, N = 3;
    std::vector<float> w(K * M), x(K * N);
    for (int i = 0; i < K * M; ++i) w[i] = float((i * 7) % 11) - 5.0f;
    for (int i = 0; i < K * N; ++i) x[i] = float((i * 3) % 5) - 2.0f;
    vk::Arena arena(device(), vk::MemoryKind::device, "test weights", 1 << 20);
    const int64_t ne[4] = {K, M, 1, 1};
    auto dw = DeviceWeight::upload(device(), arena, "w", DType::F32, ne, reinterpret_cast<const uint8_t*>(w.data()));
    ASSERT_TRUE(dw.ok()) << dw.error().message();
    Graph g;
    const TensorId xi = g.input(DType::F32, {K, N}, "x");
    OpDesc d;
    d.op = TDM_OP_MATMUL;
    d.in[0] = g.weight(dw->get());
    d.in[1] = xi;
    d.n_in = 2;
    auto y = g.op(d);
    ASSERT_TRUE(y.ok()) << y.error().message();
    ASSERT_TRUE(g.mark_output(*y).ok());
    auto cg = CompiledGraph::compile(device(), pipelines(), std::move(g));
    ASSERT_TRUE(cg.ok()) << cg.error().message();
    std::copy(x.begin(), x.end(), (*cg)->input_as<float>(xi));
    ASSERT_TRUE((*cg)->run().ok());
    const float* py = (*cg)->output_as<float>(*y);
    for (int t = 0; t < N; ++t)
        for (int r = 0; r < M; ++r) {
            float ref = 0;
            for (int k = 0; k < K; ++k) ref += w[r * K + k] * x[t * K + k];
            EXPECT_EQ(py[t * M + r], ref) << "t=" << t << " r=" << r;
        }
}

}  // namespace
}  // namespace tdm
