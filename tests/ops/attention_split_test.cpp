// SPDX-License-Identifier: Apache-2.0
// tests/ops/attention_split_test.cpp: the split-KV attention layout (GPUs' default,
// ops/attention_layout.h), forced here with TANDEM_ATTENTION_LAYOUT=split: its geometry,
// the kernel against the double reference for queries whose keys span 1, 2 and 5 splits
// (GQA, a sliding window over a ring that has wrapped, softcap, f16 and f32 K/V), batch
// invariance of the two passes and of the fold a wide batch runs, and the per-run sizing:
// workgroups and partials follow the context in use, never the KV's capacity; idle graphs
// hold no partials; a layer whose partials could exceed what a pass binds is folded.
// A handful of queries each: the test is about the exactness of the mechanism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "graph/attention_scratch.h"
#include "graph/split_attention.h"
#include "ops/attention_layout.h"
#include "ops/op_def.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::randn;

TEST(AttentionSplitGeometry, splits_follow_positions_and_fill_the_device_as_the_context_grows) {
    EXPECT_EQ(attention_key_splits(0, 0), 1u);
    EXPECT_EQ(attention_key_splits(kAttentionSplitKeys - 1, 0), 1u);
    EXPECT_EQ(attention_key_splits(kAttentionSplitKeys, 0), 2u);
    EXPECT_EQ(attention_key_splits(5 * kAttentionSplitKeys - 1, 0), 5u);
    EXPECT_EQ(attention_key_splits(1000, 300), 2u);  // keys 701 .. 1000
    EXPECT_EQ(attention_key_splits(100, 300), 1u);
    // decode at 4096 keys runs 16 workgroups per kv head where 64 keys run one
    EXPECT_EQ(attention_key_splits(4095, 0), 16u);
    EXPECT_EQ(attention_key_splits(63, 0), 1u);

    KvLayerBinding kv;
    kv.block_size = 16;
    kv.max_blocks = 4096 / 16;
    EXPECT_EQ(attention_max_splits(kv, 0), 16u);  // the bound of a run's grid at capacity 4096
    EXPECT_EQ(attention_max_splits(kv, 300), 3u);
    kv.max_blocks = 64 / 16;
    EXPECT_EQ(attention_max_splits(kv, 0), 1u);
    kv.ring_blocks = kv.max_blocks = 32;
    EXPECT_EQ(attention_max_splits(kv, 300), 3u);
    EXPECT_EQ(attention_max_splits(kv, 256), 2u);

    // a run's grid depth: its longest context's splits
    const std::vector<int32_t> run = {63, 4095, 300};
    EXPECT_EQ(attention_splits_in_use(run, 0), 16u);
    EXPECT_EQ(attention_splits_in_use(run, 300), 2u);
    EXPECT_EQ(attention_splits_in_use(std::vector<int32_t>{0, 63}, 0), 1u);
    EXPECT_EQ(attention_partial_bytes(4, 16, 128, 16), 4ull * 16 * 16 * 130 * 4);
}

struct SplitCase {
    const char* name;
    int n_head, n_kv_head, dk, dv;
    int window;
    float softcap;
    bool f16;
    bool ring;  // the layer keeps only its last 512 positions (window required)
};

class AttentionSplit : public test::DeviceTest, public ::testing::WithParamInterface<SplitCase> {};

bool same_bits_split(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

TEST_P(AttentionSplit, matches_the_double_reference_and_each_query_alone) {
    const SplitCase c = GetParam();
    const test::ScopedEnv layout("TANDEM_ATTENTION_LAYOUT", "split");
    const int block = 16, kv_len = 5 * int(kAttentionSplitKeys) - 79;  // the last query reads 5 splits
    const int ring_blocks = 32;                                        // 512 positions
    const int n_blocks = c.ring ? ring_blocks : (kv_len + block - 1) / block;
    std::vector<std::vector<int32_t>> lists(1);
    for (int b = 0; b < n_blocks; ++b) lists[0].push_back((b * 7) % n_blocks);  // scattered blocks
    auto kv = test::make_test_kv(device(), uint32_t(c.n_kv_head), uint32_t(c.dk), uint32_t(c.dv), block,
                                 uint32_t(n_blocks), lists, c.f16);
    if (c.ring) {
        kv->binding.ring_blocks = uint32_t(ring_blocks);
        kv->binding.window = uint32_t(c.window);
    }
    const auto k = randn(size_t(kv_len) * c.n_kv_head * c.dk, 30);
    const auto v = randn(size_t(kv_len) * c.n_kv_head * c.dv, 31);
    // stored in batches no wider than a ring, so that no batch writes one slot twice
    for (int b0 = 0; b0 < kv_len; b0 += ring_blocks * block) {
        const int n = std::min(kv_len - b0, ring_blocks * block);
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n), 0);
        for (int i = 0; i < n; ++i) pos[size_t(i)] = b0 + i;
        h.batch(pos, seq);
        const size_t ko = size_t(b0) * c.n_kv_head * c.dk, vo = size_t(b0) * c.n_kv_head * c.dv;
        h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv->binding),
                               h.input_f32({c.dk, c.n_kv_head, n},
                                           {k.begin() + ko, k.begin() + ko + size_t(n) * c.n_kv_head * c.dk}, "k"),
                               h.input_f32({c.dv, c.n_kv_head, n},
                                           {v.begin() + vo, v.begin() + vo + size_t(n) * c.n_kv_head * c.dv}, "v")});
        h.run({});
    }
    const float scale = 1.3f / std::sqrt(float(c.dk));
    // keys in 1, 2 and 5 splits (fewer with a window), both sides of a split boundary; in a
    // ring only the last 512 positions are kept, so its queries are those whose windows it holds
    const int K = int(kAttentionSplitKeys);
    const std::vector<int32_t> qpos =
        c.ring ? std::vector<int32_t>{4 * K - 24, 4 * K - 1, 4 * K, 4 * K + 76, kv_len - 1}
               : std::vector<int32_t>{100, K - 1, K, 300, kv_len - 1};
    const int n_q = int(qpos.size());
    const auto q = randn(size_t(n_q) * c.n_head * c.dk, 32);
    auto run = [&](int first, int n) {
        OpHarness h(device(), pipelines());
        h.batch({qpos.begin() + first, qpos.begin() + first + n}, std::vector<int32_t>(size_t(n), 0));
        const size_t qs = size_t(c.n_head) * c.dk;
        const TensorId o =
            h.op(TDM_OP_ATTENTION,
                 {h.input_f32({c.dk, c.n_head, n}, {q.begin() + first * qs, q.begin() + (first + n) * qs}, "q"),
                  h.graph().kv(&kv->binding)},
                 {c.window}, {scale, c.softcap});
        h.run({o});
        return h.f32(o);
    };
    const auto out = run(0, n_q);

    ref::AttnParams p;
    p.n_head = c.n_head;
    p.n_head_kv = c.n_kv_head;
    p.head_dim = c.dk;
    p.head_dim_v = c.dv;
    p.scale = scale;
    p.softcap = c.softcap;
    p.window = c.window;
    const auto kr = c.f16 ? ref::cast_round(k, DType::F16) : k;
    const auto vr = c.f16 ? ref::cast_round(v, DType::F16) : v;
    EXPECT_LT(ref::nmse(out, ref::attention(q, qpos, kr, vr, {}, p)), 1e-10) << c.name;

    const size_t row = size_t(c.n_head) * c.dv;
    std::vector<std::vector<float>> alone;
    for (int i = 0; i < n_q; ++i) {
        alone.push_back(run(i, 1));
        EXPECT_TRUE(same_bits_split(out.data() + size_t(i) * row, alone.back().data(), row))
            << c.name << ": the query at " << qpos[size_t(i)] << " differs alone";
    }

    // a batch too wide for the two passes folds each row's splits in one pass: the same
    // queries, repeated to kAttentionSplitMaxTokens + 1 rows, keep their bits
    const int n_wide = int(kAttentionSplitMaxTokens) + 1;
    std::vector<int32_t> wide_pos;
    std::vector<float> wide_q;
    const size_t qs = size_t(c.n_head) * c.dk;
    for (int i = 0; i < n_wide; ++i) {
        const int src = i % n_q;
        wide_pos.push_back(qpos[size_t(src)]);
        wide_q.insert(wide_q.end(), q.begin() + src * qs, q.begin() + (src + 1) * qs);
    }
    OpHarness h(device(), pipelines());
    h.batch(wide_pos, std::vector<int32_t>(size_t(n_wide), 0));
    const TensorId o = h.op(TDM_OP_ATTENTION, {h.input_f32({c.dk, c.n_head, n_wide}, wide_q, "q"),
                                               h.graph().kv(&kv->binding)},
                            {c.window}, {scale, c.softcap});
    h.run({o});
    EXPECT_EQ(h.compiled().split_attention_run().workgroups, 0u) << "a wide batch runs no split passes";
    const auto wide = h.f32(o);
    for (int i = 0; i < n_wide; ++i)
        EXPECT_TRUE(same_bits_split(wide.data() + size_t(i) * row, alone[size_t(i % n_q)].data(), row))
            << c.name << ": row " << i << " of a wide batch (the query at " << wide_pos[size_t(i)]
            << ") differs from its split passes";
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionSplit,
                         ::testing::Values(SplitCase{"gqa_f16", 8, 2, 64, 64, 0, 0, true, false},
                                           SplitCase{"mha_f32", 4, 4, 32, 32, 0, 0, false, false},
                                           SplitCase{"softcap_dv_differs", 4, 1, 64, 128, 0, 20.0f, true, false},
                                           SplitCase{"window", 4, 2, 64, 64, 300, 0, true, false},
                                           SplitCase{"ring_window", 4, 2, 64, 64, 300, 0, false, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// The per-run sizing (graph/split_attention_grid.h): a layer whose block table spans a
// million positions, holding a 64-key context, runs the workgroups and needs the partials of
// a layer spanning 4096 (one split per kv head and token), with the same bits; as the
// context grows to 4096 keys, the workgroups and partials grow with it (16 splits). Counts
// and bytes only: they are deterministic.
class SplitAttentionSizing : public test::DeviceTest {};

TEST_F(SplitAttentionSizing, workgroups_and_partials_follow_the_context_not_the_capacity) {
    const test::ScopedEnv layout("TANDEM_ATTENTION_LAYOUT", "split");
    const uint32_t n_head = 4, n_kv = 2, d = 32, block = 16, n_blocks = 4096 / block;
    const int kv_len = 4096;
    // one KV pool, read through block tables of 4096 and of 1M positions (the same blocks
    // first, the rest pointing anywhere: never read)
    auto layer = [&](uint32_t max_blocks) {
        std::vector<std::vector<int32_t>> lists(1);
        for (uint32_t b = 0; b < max_blocks; ++b) lists[0].push_back(int32_t(b % n_blocks));
        return test::make_test_kv(device(), n_kv, d, d, block, n_blocks, lists, true);
    };
    auto small = layer(n_blocks), large = layer(1u << 16);
    const auto k = randn(size_t(kv_len) * n_kv * d, 50), v = randn(size_t(kv_len) * n_kv * d, 51);
    for (auto* kv : {small.get(), large.get()}) {
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos(static_cast<size_t>(kv_len)), seq(static_cast<size_t>(kv_len), 0);
        for (int i = 0; i < kv_len; ++i) pos[size_t(i)] = i;
        h.batch(pos, seq);
        h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv->binding), h.input_f32({d, n_kv, kv_len}, k, "k"),
                               h.input_f32({d, n_kv, kv_len}, v, "v")});
        h.run({});
    }
    const std::shared_ptr<AttentionScratch> scratch = AttentionScratch::of(device());
    ASSERT_EQ(scratch->bytes(), 0u) << "no other graph of this device holds partials";
    const auto q = randn(size_t(n_head) * d, 52);
    struct Decode {
        std::vector<float> out;
        SplitAttentionRun run;
        uint64_t activation_bytes, scratch_bytes;
    };
    auto decode = [&](test::TestKvLayer& kv, int32_t position) {
        OpHarness h(device(), pipelines());
        h.batch({position}, {0});
        const TensorId o = h.op(TDM_OP_ATTENTION, {h.input_f32({d, n_head, 1}, q, "q"), h.graph().kv(&kv.binding)});
        h.run({o});
        return Decode{h.f32(o), h.compiled().split_attention_run(), h.compiled().activation_bytes(),
                      scratch->bytes()};
    };
    const Decode at64_small = decode(*small, 63), at64_large = decode(*large, 63);
    EXPECT_EQ(at64_small.run.workgroups, n_kv);  // one split per kv head
    EXPECT_EQ(at64_large.run.workgroups, at64_small.run.workgroups);
    EXPECT_EQ(at64_small.run.scratch_bytes, attention_partial_bytes(1, n_head, d, 1));
    EXPECT_EQ(at64_large.run.scratch_bytes, at64_small.run.scratch_bytes);
    EXPECT_EQ(at64_large.activation_bytes, at64_small.activation_bytes);
    EXPECT_EQ(at64_small.scratch_bytes, AttentionScratch::kGranule);
    EXPECT_EQ(at64_large.scratch_bytes, AttentionScratch::kGranule) << "the partials grew with the capacity";
    EXPECT_TRUE(same_bits_split(at64_small.out.data(), at64_large.out.data(), at64_small.out.size()));

    // the graph recorded at 64 keys, run again at 4096: its run needs more partials than the
    // scratch holds, so it grows and the graph records again against it
    OpHarness grown(device(), pipelines());
    grown.batch({63}, {0});
    const TensorId o =
        grown.op(TDM_OP_ATTENTION, {grown.input_f32({d, n_head, 1}, q, "q"), grown.graph().kv(&large->binding)});
    grown.run({o});
    ASSERT_EQ(scratch->bytes(), AttentionScratch::kGranule);
    grown.compiled().input_as<int32_t>(grown.compiled().graph().batch_positions())[0] = kv_len - 1;
    grown.rerun();
    EXPECT_EQ(grown.compiled().split_attention_run().workgroups, uint64_t(n_kv) * 16);
    EXPECT_EQ(grown.compiled().split_attention_run().scratch_bytes, attention_partial_bytes(1, n_head, d, 16));
    EXPECT_GT(scratch->bytes(), AttentionScratch::kGranule);

    // the same bits as a graph recorded with the grown scratch at once
    const Decode at4096 = decode(*large, kv_len - 1);
    EXPECT_EQ(at4096.run.workgroups, uint64_t(n_kv) * 16);
    EXPECT_EQ(at4096.activation_bytes, at64_large.activation_bytes);
    EXPECT_TRUE(same_bits_split(grown.f32(o).data(), at4096.out.data(), at4096.out.size()));
}

// An idle graph holds no partials (graph/attention_scratch.h): when another graph's run grows
// them, the buffer the idle one was recorded with is freed at once, and the idle graph records
// again before its next run, with the same bits; a graph in flight keeps its buffer until its
// wait. And the grid follows each run's own positions: a graph run 3 splits deep, then with
// its rows back at 63 keys, runs one split per (kv head, token) again. Bytes and workgroups
// only: they are deterministic.
TEST_F(SplitAttentionSizing, an_idle_graph_frees_the_partials_it_was_recorded_with_once_they_grow) {
    const test::ScopedEnv layout("TANDEM_ATTENTION_LAYOUT", "split");
    const uint32_t n_head = 4, n_kv = 2, d = 32, block = 16;
    const int kv_len = 3 * int(kAttentionSplitKeys);
    const uint32_t n_blocks = uint32_t(kv_len) / block;
    std::vector<std::vector<int32_t>> lists(1);
    for (uint32_t b = 0; b < n_blocks; ++b) lists[0].push_back(int32_t(b));
    auto kv = test::make_test_kv(device(), n_kv, d, d, block, n_blocks, lists, true);
    {
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos(static_cast<size_t>(kv_len)), seq(static_cast<size_t>(kv_len), 0);
        for (int i = 0; i < kv_len; ++i) pos[size_t(i)] = i;
        h.batch(pos, seq);
        const size_t n = size_t(kv_len) * n_kv * d;
        h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv->binding), h.input_f32({d, n_kv, kv_len}, randn(n, 60), "k"),
                               h.input_f32({d, n_kv, kv_len}, randn(n, 61), "v")});
        h.run({});
    }
    const std::shared_ptr<AttentionScratch> scratch = AttentionScratch::of(device());
    ASSERT_EQ(scratch->live_bytes(), 0u) << "no other graph of this device holds partials";
    const auto q = randn(size_t(16) * n_head * d, 62);
    // n rows of sequence 0, all at `position`
    auto attend = [&](OpHarness& h, int n, int32_t position) {
        h.batch(std::vector<int32_t>(size_t(n), position), std::vector<int32_t>(size_t(n), 0));
        const TensorId qn = h.input_f32({d, n_head, n}, {q.begin(), q.begin() + size_t(n) * n_head * d}, "q");
        const TensorId o = h.op(TDM_OP_ATTENTION, {qn, h.graph().kv(&kv->binding)});
        h.run({o});
        return o;
    };
    OpHarness idle(device(), pipelines());
    const TensorId idle_out = attend(idle, 1, 63);
    const std::vector<float> before = idle.f32(idle_out);
    ASSERT_EQ(scratch->live_bytes(), AttentionScratch::kGranule);

    OpHarness deep(device(), pipelines());
    attend(deep, 4, kv_len - 1);
    const uint64_t grown = scratch->bytes();
    ASSERT_GE(grown, attention_partial_bytes(4, n_head, d, 3));
    ASSERT_GT(grown, AttentionScratch::kGranule);
    EXPECT_EQ(scratch->live_bytes(), grown) << "the idle graph still holds the partials it was recorded with";

    idle.rerun();  // records again against the grown buffer
    EXPECT_TRUE(same_bits_split(idle.f32(idle_out).data(), before.data(), before.size()));
    EXPECT_EQ(scratch->live_bytes(), grown);

    CompiledGraph& in_flight = idle.compiled();
    ASSERT_TRUE(in_flight.submit().ok());
    OpHarness deeper(device(), pipelines());
    attend(deeper, 16, kv_len - 1);
    const uint64_t regrown = scratch->bytes();
    ASSERT_GT(regrown, grown);
    EXPECT_EQ(scratch->live_bytes(), grown + regrown) << "the partials of a graph in flight were freed";
    ASSERT_TRUE(in_flight.wait().ok());
    EXPECT_EQ(scratch->live_bytes(), regrown);

    int32_t* pos = deep.compiled().input_as<int32_t>(deep.compiled().graph().batch_positions());
    std::fill(pos, pos + 4, 63);
    deep.rerun();
    EXPECT_EQ(deep.compiled().split_attention_run().workgroups, uint64_t(n_kv) * 4) << "a grid from an earlier run";
    EXPECT_EQ(deep.compiled().split_attention_run().scratch_bytes, attention_partial_bytes(4, n_head, d, 1));
}

// The partials a layer can need at its capacity (every row at its end) must fit what one pass
// binds (maxStorageBufferRange), or a run deep into the context would fail: the compiler folds
// such a layer's attention from the start (graph/split_attention.h), with the bits of the two
// passes (AttentionSplit above). Lavapipe binds 128 MiB; the limit is lowered on a copy of its
// capabilities, which is what the rewrite reads.
TEST_F(SplitAttentionSizing, a_layer_whose_partials_could_exceed_what_one_pass_binds_folds_when_compiled) {
    const test::ScopedEnv layout("TANDEM_ATTENTION_LAYOUT", "split");
    const uint32_t n_head = 4, n_kv = 2, d = 32, block = 16, n_tok = 4;
    std::vector<std::vector<int32_t>> lists(1);
    for (uint32_t b = 0; b < (1u << 16); ++b) lists[0].push_back(int32_t(b % 4));  // 1M positions, 4 blocks
    auto kv = test::make_test_kv(device(), n_kv, d, d, block, 4, lists, true);
    const uint64_t worst = attention_partial_bytes(n_tok, n_head, d, attention_max_splits(kv->binding, 0));
    ASSERT_LE(worst, device().caps().max_storage_buffer_range);
    auto rewritten_to = [&](uint64_t limit) {
        OpHarness h(device(), pipelines());
        h.batch({60, 61, 62, 63}, {0, 0, 0, 0});
        h.op(TDM_OP_ATTENTION, {h.input_f32({d, n_head, n_tok}, randn(size_t(n_tok) * n_head * d, 70), "q"),
                                h.graph().kv(&kv->binding)});
        vk::DeviceCaps caps = device().caps();
        caps.max_storage_buffer_range = limit;
        Graph g = h.graph();
        EXPECT_EQ(*split_attention(g, caps), 1u);
        std::vector<tdm_op> ops;
        for (const Node& n : g.nodes())
            if (n.desc.op != TDM_OP_KV_STORE) ops.push_back(n.desc.op);
        return ops;
    };
    EXPECT_EQ(rewritten_to(worst), (std::vector<tdm_op>{kOpInternalAttentionPartials, kOpInternalAttentionCombine}));
    EXPECT_EQ(rewritten_to(worst - 1), std::vector<tdm_op>{kOpInternalAttentionFolded});
}

}  // namespace
}  // namespace tdm
