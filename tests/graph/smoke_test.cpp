// SPDX-License-Identifier: Apache-2.0
// tests/graph/smoke_test.cpp: the executor end to end on the smallest graphs.
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

// One graph leaves its result in a device buffer the caller owns; a second
// graph, compiled and run later, gathers rows of it by index as an f32 table
// (how a draft head reads the target's hidden rows without a host copy).
TEST_F(Smoke, a_result_bound_to_caller_memory_is_read_by_another_graph_by_row_index) {
    const int K = 8, N = 5, kCapacity = 6;
    const uint64_t bytes = uint64_t(K) * kCapacity * 4;
    auto buf = vk::Buffer::create(device(), bytes, vk::MemoryKind::device, "bound rows");
    ASSERT_TRUE(buf.ok()) << buf.error().message();
    const vk::BufferSlice slice{buf->get(), 0, bytes};
    Graph g1;
    const TensorId a = g1.input(DType::F32, {K, N}, "a");
    OpDesc scale;
    scale.op = TDM_OP_SCALE;
    scale.in[0] = a;
    scale.n_in = 1;
    scale.f[0] = 2.0f;
    auto y = g1.op(scale);
    ASSERT_TRUE(y.ok()) << y.error().message();
    ASSERT_TRUE(g1.bind_storage(*y, slice).ok());
    EXPECT_FALSE(g1.mark_output(*y).ok()) << "a bound result is not also a host output";
    EXPECT_FALSE(g1.bind_storage(a, slice).ok()) << "only op results can be bound";
    auto cg1 = CompiledGraph::compile(device(), pipelines(), std::move(g1));
    ASSERT_TRUE(cg1.ok()) << cg1.error().message();
    for (int i = 0; i < K * N; ++i) (*cg1)->input_as<float>(a)[i] = float(i) - 7.5f;
    ASSERT_TRUE((*cg1)->run().ok());

    auto table = DeviceWeight::f32_rows_over("bound rows", slice, K, kCapacity);
    ASSERT_TRUE(table.ok()) << table.error().message();
    EXPECT_FALSE(DeviceWeight::f32_rows_over("too many", slice, K, kCapacity + 1).ok());
    Graph g2;
    const TensorId ids = g2.input(DType::I32, {3}, "ids");
    OpDesc gr;
    gr.op = TDM_OP_GET_ROWS;
    gr.in[0] = g2.weight(table->get());
    gr.in[1] = ids;
    gr.n_in = 2;
    auto rows = g2.op(gr);
    ASSERT_TRUE(rows.ok()) << rows.error().message();
    ASSERT_TRUE(g2.mark_output(*rows).ok());
    auto cg2 = CompiledGraph::compile(device(), pipelines(), std::move(g2));
    ASSERT_TRUE(cg2.ok()) << cg2.error().message();
    const int32_t pick[3] = {4, 0, 2};
    std::copy(pick, pick + 3, (*cg2)->input_as<int32_t>(ids));
    ASSERT_TRUE((*cg2)->run().ok());
    const float* py = (*cg2)->output_as<float>(*rows);
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < K; ++k) EXPECT_EQ(py[r * K + k], 2.0f * (float(pick[r] * K + k) - 7.5f)) << r << "," << k;
}

}  // namespace
}  // namespace tdm
