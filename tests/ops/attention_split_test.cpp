// SPDX-License-Identifier: Apache-2.0
// tests/ops/attention_split_test.cpp: the split-KV attention layout (GPUs' default,
// ops/attention_layout.h), forced here with TANDEM_ATTENTION_LAYOUT=split: its geometry,
// the kernel against the double reference for queries whose keys span 1, 2 and 5 splits
// (GQA, a sliding window over a ring that has wrapped, softcap, f16 and f32 K/V), and
// batch invariance, also when a batch is cut into several runs of tokens.
// A handful of queries each: the test is about the exactness of the mechanism.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ops/attention_layout.h"
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
    EXPECT_EQ(attention_max_splits(kv, 0),
              16u);  // the first pass's grid depth at capacity 4096
    EXPECT_EQ(attention_max_splits(kv, 300), 3u);
    kv.max_blocks = 64 / 16;
    EXPECT_EQ(attention_max_splits(kv, 0), 1u);
    kv.ring_blocks = kv.max_blocks = 32;
    EXPECT_EQ(attention_max_splits(kv, 300), 3u);
    EXPECT_EQ(attention_max_splits(kv, 256), 2u);

    // a decode or verify batch is one run; a wide prefill over a long context several
    EXPECT_EQ(attention_split_tokens(4, 16, 128, 16), 4u);
    const uint32_t run = attention_split_tokens(512, 16, 128, 160);
    EXPECT_LT(run, 512u);
    EXPECT_LE(uint64_t(run) * 16 * 160 * 130 * 4, kAttentionPartialBytes);
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
    for (int i = 0; i < n_q; ++i) {
        const auto alone = run(i, 1);
        EXPECT_TRUE(same_bits_split(out.data() + size_t(i) * row, alone.data(), row))
            << c.name << ": the query at " << qpos[size_t(i)] << " differs alone";
    }
}

INSTANTIATE_TEST_SUITE_P(Variants, AttentionSplit,
                         ::testing::Values(SplitCase{"gqa_f16", 8, 2, 64, 64, 0, 0, true, false},
                                           SplitCase{"mha_f32", 4, 4, 32, 32, 0, 0, false, false},
                                           SplitCase{"softcap_dv_differs", 4, 1, 64, 128, 0, 20.0f, true, false},
                                           SplitCase{"window", 4, 2, 64, 64, 300, 0, true, false},
                                           SplitCase{"ring_window", 4, 2, 64, 64, 300, 0, false, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// A layer of a million positions gives every token 4096 splits' partials, so a batch of 8
// runs its tokens in two pass pairs (attention_split_tokens); each token's bits stay those it
// gets alone.
class AttentionSplitRuns : public test::DeviceTest {};

TEST_F(AttentionSplitRuns, a_batch_cut_into_runs_of_tokens_equals_its_queries_alone) {
    const test::ScopedEnv layout("TANDEM_ATTENTION_LAYOUT", "split");
    const uint32_t n_head = 8, n_kv = 1, d = 64, block = 16, n_blocks = 20, max_blocks = 1u << 16;
    const int kv_len = int(n_blocks * block), n_q = 8;
    std::vector<std::vector<int32_t>> lists(1);
    for (uint32_t b = 0; b < max_blocks; ++b) lists[0].push_back(int32_t((b * 3) % n_blocks));
    auto kv = test::make_test_kv(device(), n_kv, d, d, block, n_blocks, lists, true);
    ASSERT_GT(attention_split_tokens(n_q, n_head, d, attention_max_splits(kv->binding, 0)), 1u);
    ASSERT_LT(attention_split_tokens(n_q, n_head, d, attention_max_splits(kv->binding, 0)), uint32_t(n_q));
    {
        const auto k = randn(size_t(kv_len) * n_kv * d, 40), v = randn(size_t(kv_len) * n_kv * d, 41);
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos(static_cast<size_t>(kv_len)), seq(static_cast<size_t>(kv_len), 0);
        for (int i = 0; i < kv_len; ++i) pos[size_t(i)] = i;
        h.batch(pos, seq);
        h.op(TDM_OP_KV_STORE, {h.graph().kv(&kv->binding), h.input_f32({d, n_kv, kv_len}, k, "k"),
                               h.input_f32({d, n_kv, kv_len}, v, "v")});
        h.run({});
    }
    const auto q = randn(size_t(n_q) * n_head * d, 42);
    auto run = [&](int first, int n) {
        OpHarness h(device(), pipelines());
        std::vector<int32_t> pos;
        for (int i = 0; i < n; ++i) pos.push_back(kv_len - n_q + first + i);
        h.batch(pos, std::vector<int32_t>(size_t(n), 0));
        const size_t qs = size_t(n_head) * d;
        const TensorId o = h.op(
            TDM_OP_ATTENTION, {h.input_f32({d, n_head, n}, {q.begin() + first * qs, q.begin() + (first + n) * qs}, "q"),
                               h.graph().kv(&kv->binding)});
        h.run({o});
        return h.f32(o);
    };
    const auto out = run(0, n_q);
    const size_t row = size_t(n_head) * d;
    for (int i = 0; i < n_q; ++i) {
        const auto alone = run(i, 1);
        EXPECT_TRUE(same_bits_split(out.data() + size_t(i) * row, alone.data(), row)) << "query " << i;
    }
}

}  // namespace
}  // namespace tdm
