// SPDX-License-Identifier: Apache-2.0
// tests/models/ngram/ngram_mod_test.cpp: ngram-mod's hash pool and drafter as C++
// (compiled in directly): the rolling hash equals the fold, insertion and
// lookup, collisions and overwrites in a deliberately tiny pool, the resets
// (occupancy, low-acceptance streak), variable draft length, sharing across
// drafter objects and threads, and robustness against any history.
//
// To add a case: make an NgramModPool of a chosen size (small to force
// collisions), one or more NgramMod drafters over it, and feed them histories.
#include <gtest/gtest.h>

#include <thread>

#include "ngram_mod.h"

namespace ngram {
namespace {

using Tokens = std::vector<int32_t>;

NgramParams params_ngram_mod(uint32_t n, uint32_t n_vocab = 1000) {
    NgramParams p;
    p.n = n;
    p.n_vocab = n_vocab;
    return p;
}

Tokens propose_ngram_mod(SeqDrafter& d, const Tokens& h, size_t max) {
    Tokens out(max, -7);
    out.resize(d.propose(h, out));
    return out;
}

TEST(NgramModPool, rolling_the_hash_equals_folding_the_new_window) {
    const Tokens t = {5, 17, 3, 3, 900, 41, 7, 0, 12, -1, 65535};
    for (uint32_t n : {1u, 2u, 4u, 7u}) {
        const uint64_t pow = NgramModPool::power(n);
        uint64_t h = NgramModPool::hash(std::span(t).first(n));
        for (size_t i = 0; i + n < t.size(); ++i) {
            h = NgramModPool::roll(h, t[i], t[i + n], pow);
            EXPECT_EQ(h, NgramModPool::hash(std::span(t).subspan(i + 1, n))) << "n=" << n << " i=" << i;
        }
    }
    // the fold is llama.cpp's: res = res * A + token
    EXPECT_EQ(NgramModPool::hash(Tokens{2, 3}), 2 * NgramModPool::kMul + 3);
}

TEST(NgramModPool, insertion_lookup_and_occupancy) {
    NgramModPool pool(1024);
    EXPECT_EQ(pool.bytes(), 4096u);
    const uint64_t a = NgramModPool::hash(Tokens{1, 2, 3}), b = NgramModPool::hash(Tokens{3, 2, 1});
    EXPECT_EQ(pool.get(a), NgramModPool::kEmpty);
    pool.add(a, 4);
    pool.add(b, 9);
    EXPECT_EQ(pool.get(a), 4);
    EXPECT_EQ(pool.get(b), 9);
    EXPECT_EQ(pool.used(), pool.slot(a) == pool.slot(b) ? 1u : 2u);
    pool.add(a, 4);  // the same fact again: no overwrite
    EXPECT_EQ(pool.overwrites(), pool.slot(a) == pool.slot(b) ? 1u : 0u);
    pool.add(a, 5);  // the n-gram is now followed by another token: newest wins
    EXPECT_EQ(pool.get(a), 5);
    pool.reset();
    EXPECT_EQ(pool.get(a), NgramModPool::kEmpty);
    EXPECT_EQ(pool.used(), 0u);
    EXPECT_EQ(pool.resets(), 1u);
}

TEST(NgramModPool, collisions_in_a_tiny_pool_overwrite_and_never_exceed_its_size) {
    NgramModPool pool(8);
    std::vector<uint64_t> hashes;
    for (int32_t i = 0; i < 64; ++i) {
        hashes.push_back(NgramModPool::hash(Tokens{i, i + 1}));
        pool.add(hashes.back(), i);
    }
    EXPECT_LE(pool.used(), 8u);
    EXPECT_EQ(pool.used() + pool.overwrites(), 64u);  // each add filled a slot or replaced another's token
    // every slot holds the token of the last n-gram that hashed there
    for (size_t s = 0; s < 8; ++s) {
        int32_t want = NgramModPool::kEmpty;
        for (int32_t i = 0; i < 64; ++i)
            if (pool.slot(hashes[size_t(i)]) == s) want = i;
        for (int32_t i = 0; i < 64; ++i) {
            if (pool.slot(hashes[size_t(i)]) == s) {
                EXPECT_EQ(pool.get(hashes[size_t(i)]), want);
            }
        }
    }
}

TEST(NgramMod, walks_the_pool_for_a_draft_of_variable_length) {
    auto pool = std::make_shared<NgramModPool>(1 << 12);
    NgramMod d(params_ngram_mod(3), pool);
    const Tokens prompt = {10, 11, 12, 13, 14, 15, 16, 50, 60, 10, 11, 12};
    d.begin(prompt);
    // [10 11 12] -> 13 -> [11 12 13] -> 14 ... up to 16 -> 50 -> 60 -> 10 -> 11 -> 12 -> 13 ...
    EXPECT_EQ(propose_ngram_mod(d, prompt, 4), (Tokens{13, 14, 15, 16}));
    EXPECT_EQ(propose_ngram_mod(d, prompt, 12), (Tokens{13, 14, 15, 16, 50, 60, 10, 11, 12, 13, 14, 15}));
    // an unknown window: nothing
    EXPECT_TRUE(propose_ngram_mod(d, Tokens{1, 2, 3}, 8).empty());
    // a window whose chain ends: the draft stops there (variable length)
    auto pool2 = std::make_shared<NgramModPool>(1 << 12);
    NgramMod e(params_ngram_mod(2), pool2);
    const Tokens p2 = {1, 2, 3, 4, 1, 2};
    e.begin(p2);
    EXPECT_EQ(propose_ngram_mod(e, p2, 8), (Tokens{3, 4, 1, 2, 3, 4, 1, 2}));  // cycle: [4 1] -> 2 was learnt
    const Tokens p3 = {7, 8, 9, 7, 8};
    NgramMod f(params_ngram_mod(2), std::make_shared<NgramModPool>(1 << 12));
    f.begin(p3);
    EXPECT_EQ(propose_ngram_mod(f, p3, 8), (Tokens{9, 7, 8, 9, 7, 8, 9, 7}));
    const Tokens p4 = {7, 8, 9, 5, 7, 8};
    NgramMod g(params_ngram_mod(2), std::make_shared<NgramModPool>(1 << 12));
    g.begin(p4);
    EXPECT_EQ(propose_ngram_mod(g, p4, 8), (Tokens{9, 5, 7, 8, 9, 5, 7, 8}));
    const Tokens p5 = {7, 8, 9, 5};
    NgramMod k(params_ngram_mod(2), std::make_shared<NgramModPool>(1 << 12));
    k.begin(p5);
    EXPECT_TRUE(propose_ngram_mod(k, Tokens{7, 8, 9, 5, 3, 7}, 8).empty());  // [3 7] never seen
    EXPECT_EQ(propose_ngram_mod(k, Tokens{7, 8, 9, 5, 3, 7, 8}, 8), (Tokens{9, 5, 3, 7, 8, 9, 5, 3}));  // learnt from history
}

TEST(NgramMod, the_pool_is_shared_by_every_drafter_object) {
    auto pool = std::make_shared<NgramModPool>(1 << 12);
    NgramMod a(params_ngram_mod(2), pool), b(params_ngram_mod(2), pool);
    a.begin(Tokens{1, 2, 3, 4, 5});
    b.begin(Tokens{9});
    EXPECT_EQ(propose_ngram_mod(b, Tokens{9, 1, 2}, 3), (Tokens{3, 4, 5}));  // learnt by a, drafted by b
}

TEST(NgramMod, begin_empties_a_pool_more_than_a_quarter_full) {
    auto pool = std::make_shared<NgramModPool>(16);
    NgramMod d(params_ngram_mod(1), pool);
    Tokens many;
    for (int32_t i = 0; i < 40; ++i) many.push_back(i);
    d.begin(many);
    EXPECT_GT(pool->used(), 4u);
    d.begin(Tokens{100, 101});
    EXPECT_EQ(pool->resets(), 1u);
    EXPECT_EQ(pool->used(), 1u);  // just the new prompt's [100] -> 101
}

TEST(NgramMod, three_low_acceptance_drafts_in_a_row_empty_the_pool) {
    auto pool = std::make_shared<NgramModPool>(1 << 12);
    NgramMod other(params_ngram_mod(1), pool), d(params_ngram_mod(1), pool);
    other.begin(Tokens{77, 78});  // another sequence's knowledge
    Tokens h = {1, 2, 3, 4, 5, 6, 7, 8};
    d.begin(h);
    for (int round = 0; round < 3; ++round) {
        h.push_back(int32_t(20 + round));
        d.accept(h, 4, round == 2 ? 2 : 1);  // 1/4, 1/4 (two low), then 2/4: not low, breaks the streak
    }
    EXPECT_EQ(pool->resets(), 0u);
    EXPECT_EQ(propose_ngram_mod(other, Tokens{77}, 1), (Tokens{78}));
    for (int round = 0; round < 3; ++round) {
        EXPECT_EQ(pool->resets(), 0u) << round;
        h.push_back(int32_t(30 + round));
        d.accept(h, 4, 0);
    }
    EXPECT_EQ(pool->resets(), 1u);
    EXPECT_TRUE(propose_ngram_mod(other, Tokens{77}, 1).empty());  // gone for every sequence
    EXPECT_EQ(propose_ngram_mod(d, h, 2), (Tokens{}));            // [32] was never followed
    h.push_back(1);
    EXPECT_EQ(propose_ngram_mod(d, h, 2), (Tokens{2, 3}));  // the sequence relearnt its own text
}

TEST(NgramMod, ids_outside_the_vocabulary_are_neither_learnt_nor_drafted) {
    auto pool = std::make_shared<NgramModPool>(1 << 12);
    NgramMod big(params_ngram_mod(1, 1000), pool), small(params_ngram_mod(1, 10), pool);
    big.begin(Tokens{1, 500, 2, 3});  // another model's vocabulary shares the pool
    EXPECT_EQ(propose_ngram_mod(big, Tokens{1}, 2), (Tokens{500, 2}));
    EXPECT_TRUE(propose_ngram_mod(small, Tokens{1}, 2).empty());  // 500 is outside small's vocabulary
    EXPECT_EQ(propose_ngram_mod(small, Tokens{2}, 2), (Tokens{3}));
    small.begin(Tokens{-4, 5, 6});
    EXPECT_TRUE(propose_ngram_mod(small, Tokens{-4}, 2).empty());
    for (const Tokens& h : {Tokens{}, Tokens{3}, Tokens{-1, -1, -1}, Tokens{1 << 30, 2}}) {
        const Tokens p = propose_ngram_mod(small, h, 4);
        for (int32_t t : p) EXPECT_TRUE(t >= 0 && t < 10);
        small.accept(h, p.size(), 0);
    }
}

TEST(NgramMod, concurrent_sequences_on_one_pool_only_ever_draft_learnt_tokens) {
    // Four threads, each its own drafter and text over disjoint id ranges, on
    // one small pool (collisions across threads): every draft token must be
    // one some thread learnt, and the pool's counters stay consistent.
    auto pool = std::make_shared<NgramModPool>(1 << 10);
    std::vector<std::thread> th;
    std::vector<int> bad(4, 0);
    for (int w = 0; w < 4; ++w)
        th.emplace_back([&, w] {
            NgramMod d(params_ngram_mod(2, 4000), pool);
            Tokens h;
            for (int32_t i = 0; i < 64; ++i) h.push_back(int32_t(w * 1000 + i % 16));
            d.begin(h);
            for (int r = 0; r < 300; ++r) {
                Tokens out(8);
                out.resize(d.propose(h, out));
                for (int32_t t : out)
                    if (t % 1000 >= 16) bad[size_t(w)]++;
                h.push_back(int32_t(w * 1000 + r % 16));
                d.accept(h, out.size(), out.size() / 2 + 1);
            }
        });
    for (auto& t : th) t.join();
    for (int w = 0; w < 4; ++w) EXPECT_EQ(bad[size_t(w)], 0) << "thread " << w;
    EXPECT_LE(pool->used(), pool->size());
}

}  // namespace
}  // namespace ngram
