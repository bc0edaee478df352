// SPDX-License-Identifier: Apache-2.0
// tests/kv/kv_ring_pool_test.cpp: the KV pool's sliding-window rings (host/kv/kv_layout.h):
// ring sizes, the bytes of the Gemma 4 31B shape at a 32k context against the formula
// (full layers x context + sliding layers x (window + k_max + 1)), pools without windows
// unchanged, the ring invariant on batches and truncation, and the export / import of a
// sequence whose ring wrapped (its last window, loadable into a pool of another layout).
//
// To add a case: a layer list and KvPoolConfig to the layout tests, or a batch schedule to
// the pool tests (KvPool::begin_batch is the bookkeeping a forward pass does).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "kv/kv_pool.h"
#include "support/device_fixture.h"
#include "support/op_harness.h"

namespace tdm {
namespace {

tdm_attention_layer layer(uint32_t n_kv_head, uint32_t dk, uint32_t dv, uint32_t window) {
    tdm_attention_layer l{};
    l.struct_size = sizeof l;
    l.n_kv_head = n_kv_head;
    l.head_dim_k = dk;
    l.head_dim_v = dv;
    l.window = window;
    return l;
}

// Gemma 4 31B (docs/models/gemma4.md §1): 60 layers, 5 sliding (16 KV heads x 256, window 1024)
// to 1 full (4 KV heads x 512).
std::vector<tdm_attention_layer> gemma4_31b(bool windows = true) {
    std::vector<tdm_attention_layer> v;
    for (int il = 0; il < 60; ++il)
        v.push_back(il % 6 == 5 ? layer(4, 512, 512, 0) : layer(16, 256, 256, windows ? 1024 : 0));
    return v;
}

TEST(KvRingLayout, a_ring_holds_the_window_and_the_widest_batch_in_whole_blocks) {
    EXPECT_EQ(ring_blocks_for(1024, 256, 16), 80u);  // 1279 positions
    EXPECT_EQ(ring_blocks_for(1024, 17, 16), 65u);   // a verify of draft_max 16 + 1
    EXPECT_EQ(ring_blocks_for(8, 16, 16), 2u);
    EXPECT_EQ(ring_blocks_for(5, 4, 16), 1u);
    EXPECT_EQ(ring_blocks_for(1, 1, 4), 1u);
    for (uint32_t w : {1u, 7u, 8u, 512u, 1024u})
        for (uint32_t rows : {1u, 5u, 17u, 256u})
            for (uint32_t bs : {1u, 4u, 16u, 32u}) {
                const uint64_t c = uint64_t(ring_blocks_for(w, rows, bs)) * bs;
                EXPECT_GE(c, w + rows - 1) << w << " " << rows << " " << bs;
                EXPECT_LT(c - bs, w + rows - 1) << w << " " << rows << " " << bs;  // no spare block
            }
}

TEST(KvRingLayout, the_31b_shape_at_32k_is_within_10_percent_of_the_formula) {
    KvPoolConfig kc;
    kc.n_ctx = 32768;
    kc.f16 = true;
    const uint64_t k_max = 16;
    const uint64_t full_row = 4 * 512 * 2 * 2, sliding_row = 16 * 256 * 2 * 2;  // K + V, f16
    const uint64_t formula = 10 * 32768 * full_row + 50 * (1024 + k_max + 1) * sliding_row;
    auto before = plan_kv_layout(gemma4_31b(false), {}, kc);  // every layer keeps every position
    ASSERT_TRUE(before.ok()) << before.error().message();
    // the CLI sizes rings for -b N as ring_rows_max(N, draft_max + 1): its default -b 512 included
    for (uint32_t n_batch : {1u, 256u, 512u, 4096u}) {
        const uint32_t rows_max = ring_rows_max(n_batch, uint32_t(k_max + 1));
        EXPECT_EQ(rows_max, n_batch == 1 ? 17u : 256u);
        kc.rows_max = rows_max;
        auto after = plan_kv_layout(gemma4_31b(), {}, kc);
        ASSERT_TRUE(after.ok()) << after.error().message();
        const double ratio = double(after->total_bytes()) / double(formula);
        std::printf("31B shape, 32k context, f16, rows_max %u: before %llu bytes (%.2fx the formula), after %llu "
                    "(rings %llu, full layers %llu, tables %llu): %.4fx the formula of %llu\n",
                    rows_max, (unsigned long long)before->total_bytes(),
                    double(before->total_bytes()) / double(formula), (unsigned long long)after->total_bytes(),
                    (unsigned long long)after->ring_bytes, (unsigned long long)after->linear_bytes,
                    (unsigned long long)after->table_bytes, ratio, (unsigned long long)formula);
        EXPECT_EQ(after->linear_bytes, 10 * 32768 * full_row);
        // a verify of k_max + 1 rows needs W + k_max positions: one fewer than the formula counts
        EXPECT_GT(ratio, 0.99);
        // the prefill chunk is what the ring holds beyond the formula's window + k_max + 1:
        // capped at 256 rows, within 10% whatever -b is
        EXPECT_LT(ratio, 1.10) << "-b " << n_batch;
    }
    EXPECT_GT(double(before->total_bytes()) / double(formula), 8.0);
}

// The layout of a pool without sliding-window layers is what it was before rings.
TEST(KvRingLayout, a_model_without_sliding_layers_keeps_its_full_size) {
    const std::vector<tdm_attention_layer> layers = {layer(2, 64, 64, 0), layer(4, 32, 16, 0), layer(8, 128, 128, 0)};
    tdm_recurrent_state st{};
    st.struct_size = sizeof st;
    st.n_f32 = 1000;
    const std::vector<tdm_recurrent_state> states = {st};
    struct Case {
        uint32_t n_ctx, n_seq, bs;
        bool f16;
        uint64_t budget;
    };
    for (const Case& c : {Case{4096, 1, 16, true, 0}, Case{32768, 4, 16, true, 0}, Case{17, 3, 8, false, 0},
                          Case{1000, 2, 16, true, 1 << 22}}) {
        KvPoolConfig kc;
        kc.n_ctx = c.n_ctx;
        kc.n_seq_max = c.n_seq;
        kc.block_size = c.bs;
        kc.f16 = c.f16;
        kc.memory_budget = c.budget;
        kc.rows_max = 1;  // would make tiny rings, had any layer a window
        auto l = plan_kv_layout(layers, states, kc);
        ASSERT_TRUE(l.ok()) << l.error().message();
        const uint64_t es = c.f16 ? 2 : 4;
        uint64_t block_bytes = 0;
        for (const auto& a : layers) block_bytes += uint64_t(c.bs) * a.n_kv_head * (a.head_dim_k + a.head_dim_v) * es;
        const uint64_t per_seq = (c.n_ctx + c.bs - 1) / c.bs;
        const uint64_t n_blocks = c.budget ? c.budget / block_bytes : per_seq * c.n_seq;
        const uint64_t max_blocks = std::min(per_seq, n_blocks);
        EXPECT_EQ(l->total_bytes(), c.n_seq * max_blocks * 4 + n_blocks * block_bytes + c.n_seq * 2 * 1000 * 4)
            << "n_ctx " << c.n_ctx;
        EXPECT_EQ(l->ring_bytes, 0u);
        for (uint32_t r : l->ring_blocks) EXPECT_EQ(r, 0u);
    }
}

TEST(KvRingLayout, a_window_no_shorter_than_the_context_stays_linear) {
    KvPoolConfig kc;
    kc.n_ctx = 128;
    kc.rows_max = 256;
    auto l = plan_kv_layout(std::vector{layer(1, 16, 16, 8), layer(1, 16, 16, 0)}, {}, kc);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->ring_blocks, (std::vector<uint32_t>{0, 0}));
    kc.rows_max = 8;  // 15 positions: one block of the context's eight
    l = plan_kv_layout(std::vector{layer(1, 16, 16, 8), layer(1, 16, 16, 0)}, {}, kc);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->ring_blocks, (std::vector<uint32_t>{1, 0}));
}

class KvRingPool : public test::DeviceTest {
protected:
    // one full layer and two windowed ones (window 8), f32 so exported rows compare exactly
    std::vector<tdm_attention_layer> layers_ = {layer(2, 16, 16, 8), layer(1, 32, 16, 0), layer(1, 16, 32, 8)};

    std::unique_ptr<KvPool> make(uint32_t block_size, uint32_t rows_max, uint32_t n_ctx = 256) {
        KvPoolConfig kc;
        kc.n_ctx = n_ctx;
        kc.n_seq_max = 2;
        kc.block_size = block_size;
        kc.rows_max = rows_max;
        kc.f16 = false;
        auto p = KvPool::create(device(), layers_, kc, "ring test");
        EXPECT_TRUE(p.ok()) << p.error().message();
        return p.ok() ? std::move(p).value() : nullptr;
    }

    // Stores positions [a, b] of `seq` in every layer: K element (pos, j) = pos + j / 1000 + layer,
    // V its negation, through kv_store as a forward pass would.
    void store(KvPool& pool, int seq, uint32_t a, uint32_t b) {
        ASSERT_TRUE(pool.begin_batch(seq, a, b).ok());
        const int n = int(b - a + 1);
        test::OpHarness h(device(), pipelines());
        std::vector<int32_t> pos, seqs(size_t(n), seq);
        for (uint32_t p = a; p <= b; ++p) pos.push_back(int32_t(p));
        h.batch(pos, seqs);
        std::vector<TensorId> outs;
        for (uint32_t il = 0; il < pool.n_layers(); ++il) {
            const KvLayerBinding* l = pool.layer(il);
            std::vector<float> k, v;
            for (int r = 0; r < n; ++r) {
                for (uint32_t j = 0; j < l->n_kv_head * l->dk; ++j) k.push_back(value(a + uint32_t(r), j, il));
                for (uint32_t j = 0; j < l->n_kv_head * l->dv; ++j) v.push_back(-value(a + uint32_t(r), j, il));
            }
            (void)h.op(TDM_OP_KV_STORE, {h.graph().kv(l), h.input_f32({l->dk, l->n_kv_head, n}, k, "k"),
                                         h.input_f32({l->dv, l->n_kv_head, n}, v, "v")});
        }
        h.run({});
    }
    static float value(uint32_t pos, uint32_t j, uint32_t il) { return float(pos) + float(j) / 1000.0f + float(il); }

    std::vector<uint8_t> exported(const KvPool& pool, int seq, uint32_t n) {
        std::vector<uint8_t> out;
        auto st = pool.export_sequence(seq, n, [&](const uint8_t* p, uint64_t m) {
            out.insert(out.end(), p, p + m);
            return Status{};
        });
        EXPECT_TRUE(st.ok()) << st.error().message();
        return out;
    }
};

TEST_F(KvRingPool, windowed_layers_get_rings_and_the_pool_allocates_its_layout) {
    auto pool = make(4, 4);  // ring: 8 + 4 - 1 = 11 positions -> 3 blocks of 4
    ASSERT_TRUE(pool);
    EXPECT_TRUE(pool->has_rings());
    EXPECT_EQ(pool->layer(0)->ring_blocks, 3u);
    EXPECT_EQ(pool->layer(0)->max_blocks, 3u);
    EXPECT_EQ(pool->layer(1)->ring_blocks, 0u);
    EXPECT_EQ(pool->layer(1)->max_blocks, 64u);
    EXPECT_EQ(pool->layer(2)->ring_blocks, 3u);
    EXPECT_EQ(pool->device_bytes(), pool->layout().total_bytes());
    const uint64_t ring = 2 * 3 * 4 * (2 * 32 + 48) * 4, linear = 2 * 64 * 4 * 48 * 4;
    EXPECT_EQ(pool->layout().ring_bytes, ring);
    EXPECT_EQ(pool->layout().linear_bytes, linear);
}

TEST_F(KvRingPool, a_batch_wider_than_rows_max_is_refused_before_it_runs) {
    auto pool = make(4, 4);
    ASSERT_TRUE(pool);
    const int seq = *pool->add_sequence();
    ASSERT_TRUE(pool->begin_batch(seq, 0, 3).ok());
    auto st = pool->begin_batch(seq, 4, 8);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("wider than the 4 rows"), std::string::npos) << st.error().message();
    EXPECT_EQ(pool->reserved_tokens(seq), 4u);
}

// Ring of 12 positions, window 8: after positions up to 19 were written, positions < 8
// are gone, and a length L needs [L - 7, L): L >= 15.
TEST_F(KvRingPool, truncation_keeps_the_ring_invariant_and_refuses_past_it) {
    auto pool = make(4, 4);
    ASSERT_TRUE(pool);
    const int seq = *pool->add_sequence();
    for (uint32_t a = 0; a < 20; a += 4) ASSERT_TRUE(pool->begin_batch(seq, a, a + 3).ok());
    EXPECT_TRUE(pool->can_truncate(seq, 15));
    EXPECT_FALSE(pool->can_truncate(seq, 14));
    EXPECT_TRUE(pool->can_truncate(seq, 0));
    auto st = pool->truncate(seq, 14);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("keeps only positions 8.. of the 20 written"), std::string::npos)
        << st.error().message();
    EXPECT_EQ(pool->reserved_tokens(seq), 20u);  // unchanged
    ASSERT_TRUE(pool->truncate(seq, 16).ok());   // a rollback of 4 rejected rows
    // the rejected rows stay written: a batch from 16 is fine, one from 13 is not
    EXPECT_TRUE(pool->can_truncate(seq, 15));
    st = pool->begin_batch(seq, 13, 16);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("a batch at positions 13..16"), std::string::npos) << st.error().message();
    ASSERT_TRUE(pool->begin_batch(seq, 16, 19).ok());
    // emptied: anything goes again
    ASSERT_TRUE(pool->truncate(seq, 0).ok());
    EXPECT_TRUE(pool->begin_batch(seq, 0, 3).ok());
}

// Every rollback a verify of up to rows_max rows can cause is possible, at every offset
// in the ring.
TEST_F(KvRingPool, every_rollback_of_a_batch_up_to_rows_max_is_possible) {
    for (uint32_t bs : {1u, 4u, 16u}) {
        auto pool = make(bs, 5, 512);
        ASSERT_TRUE(pool);
        const int seq = *pool->add_sequence();
        std::mt19937 rng(3);
        uint32_t len = 0;
        while (len < 300) {
            const uint32_t n = 1 + rng() % 5;                 // t_last + up to 4 drafts
            ASSERT_TRUE(pool->begin_batch(seq, len, len + n - 1).ok()) << "bs " << bs << " at " << len;
            const uint32_t keep = len + 1 + rng() % n;        // t_last and the accepted drafts
            ASSERT_TRUE(pool->can_truncate(seq, keep)) << "bs " << bs << " at " << len;
            ASSERT_TRUE(pool->truncate(seq, keep).ok());
            len = keep;
        }
    }
}

TEST_F(KvRingPool, a_wrapped_sequence_exports_its_last_window_and_imports_into_another_layout) {
    auto pool = make(4, 4);
    ASSERT_TRUE(pool);
    const int seq = *pool->add_sequence();
    for (uint32_t a = 0; a < 40; a += 4) store(*pool, seq, a, a + 3);  // the ring of 12 wrapped 3 times
    const std::vector<uint8_t> bytes = exported(*pool, seq, 38);
    ASSERT_EQ(bytes.size(), pool->sequence_bytes(38));
    // layer 0 (window 8): K rows of positions 30..37, then V rows; layer 1: all 38 positions
    ASSERT_EQ(pool->export_rows(0, 38), 8u);
    ASSERT_EQ(pool->export_rows(1, 38), 38u);
    const float* f = reinterpret_cast<const float*>(bytes.data());
    for (uint32_t r = 0; r < 8; ++r)
        for (uint32_t j = 0; j < 32; ++j) ASSERT_EQ(f[r * 32 + j], value(30 + r, j, 0)) << r << " " << j;
    for (uint32_t r = 0; r < 8; ++r)
        for (uint32_t j = 0; j < 32; ++j) ASSERT_EQ(f[256 + r * 32 + j], -value(30 + r, j, 0));
    const float* f1 = f + 512;
    for (uint32_t r = 0; r < 38; ++r) ASSERT_EQ(f1[r * 32 + 5], value(r, 5, 1));

    // into a pool of other blocks and another ring size, and back out: the same bytes
    auto other = make(8, 6);
    ASSERT_TRUE(other);
    ASSERT_EQ(other->layer(0)->ring_blocks, 2u);
    const int s2 = *other->add_sequence();
    (void)*other->add_sequence();
    size_t off = 0;
    auto st = other->import_sequence(s2, 38, [&](uint8_t* dst, uint64_t n) {
        std::memcpy(dst, bytes.data() + off, n);
        off += n;
        return Status{};
    });
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(off, bytes.size());
    EXPECT_EQ(exported(*other, s2, 38), bytes);
    // the import holds the last window: one step back is possible, two are not
    EXPECT_TRUE(other->can_truncate(s2, 37));
    EXPECT_FALSE(other->can_truncate(s2, 36));
    // and it continues: positions 38.. go on top of the imported ones
    store(*other, s2, 38, 43);
    store(*pool, seq, 40, 43);
    EXPECT_EQ(exported(*other, s2, 44), exported(*pool, seq, 44));
}

TEST_F(KvRingPool, saving_a_sequence_whose_window_left_the_ring_is_refused) {
    auto pool = make(4, 4);
    ASSERT_TRUE(pool);
    const int seq = *pool->add_sequence();
    for (uint32_t a = 0; a < 20; a += 4) ASSERT_TRUE(pool->begin_batch(seq, a, a + 3).ok());
    ASSERT_TRUE(pool->truncate(seq, 16).ok());
    auto st = pool->export_sequence(seq, 15, [&](const uint8_t*, uint64_t) { return Status{}; });
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("cannot save sequence"), std::string::npos) << st.error().message();
}

}  // namespace
}  // namespace tdm
