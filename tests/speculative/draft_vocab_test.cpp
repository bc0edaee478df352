// SPDX-License-Identifier: Apache-2.0
// tests/speculative/draft_vocab_test.cpp: the automatic draft vocabulary's choice
// (speculative/draft_vocab.h), on hand-made id sequences whose answer is counted by hand.
#include <gtest/gtest.h>

#include <vector>

#include "speculative/draft_vocab.h"

namespace tdm {
namespace {

TEST(DraftVocab, ladder_climbs_in_half_octaves_below_the_vocabulary) {
    EXPECT_EQ(draft_vocab_ladder(151669, 4096),
              (std::vector<uint32_t>{4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304, 131072}));
    EXPECT_EQ(draft_vocab_ladder(12288, 4096), (std::vector<uint32_t>{4096, 6144, 8192}));
    EXPECT_TRUE(draft_vocab_ladder(4096, 4096).empty());
    EXPECT_TRUE(draft_vocab_ladder(1000, 4096).empty());
}

// n ids below `low` except every `stride`-th, which is `high`
std::vector<int32_t> text(size_t n, int32_t low, int32_t high, size_t stride) {
    std::vector<int32_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = stride && i % stride == stride - 1 ? high : int32_t(i % size_t(low));
    return ids;
}

TEST(DraftVocab, smallest_prefix_with_at_most_the_allowed_misses) {
    const DraftVocabPolicy p;  // 5% of the last 1024 tokens, from 64 tokens on
    // every id below 4096: the first rung
    EXPECT_EQ(choose_draft_vocab(text(200, 4000, 0, 0), 151669, p), 4096u);
    // 1 in 25 at 5000 (4%): still 4096; 1 in 10 (10%): 6144 holds them
    EXPECT_EQ(choose_draft_vocab(text(1000, 4000, 5000, 25), 151669, p), 4096u);
    EXPECT_EQ(choose_draft_vocab(text(1000, 4000, 5000, 10), 151669, p), 6144u);
    // 1 in 10 at 40000: 49152
    EXPECT_EQ(choose_draft_vocab(text(1000, 4000, 40000, 10), 151669, p), 49152u);
    // 1 in 10 above the last rung: the whole vocabulary
    EXPECT_EQ(choose_draft_vocab(text(1000, 4000, 150000, 10), 151669, p), 0u);
    // exactly at the bound: 50 of 1000 misses are allowed, 51 are not
    std::vector<int32_t> ids = text(1000, 4000, 0, 0);
    for (size_t i = 0; i < 50; ++i) ids[i * 20] = 9000;
    EXPECT_EQ(choose_draft_vocab(ids, 151669, p), 4096u);
    ids[1] = 9000;
    EXPECT_EQ(choose_draft_vocab(ids, 151669, p), 12288u);
}

TEST(DraftVocab, too_few_tokens_or_a_small_vocabulary_keep_every_id) {
    const DraftVocabPolicy p;
    EXPECT_EQ(choose_draft_vocab(text(63, 100, 0, 0), 151669, p), 0u);
    EXPECT_EQ(choose_draft_vocab(text(64, 100, 0, 0), 151669, p), 4096u);
    EXPECT_EQ(choose_draft_vocab({}, 151669, p), 0u);
    EXPECT_EQ(choose_draft_vocab(text(500, 100, 0, 0), 4096, p), 0u);  // no rung below the vocabulary
}

TEST(DraftVocab, only_the_recent_window_counts) {
    DraftVocabPolicy p;
    p.window = 100;
    // 400 tokens far up the vocabulary, then 100 low ones: the window sees only the latter
    std::vector<int32_t> ids(400, 100000);
    const std::vector<int32_t> tail = text(100, 1000, 0, 0);
    ids.insert(ids.end(), tail.begin(), tail.end());
    EXPECT_EQ(choose_draft_vocab(ids, 151669, p), 4096u);
    ids.push_back(100000);  // one of the last 100 is now high: 1% misses
    EXPECT_EQ(choose_draft_vocab(ids, 151669, p), 4096u);
    p.max_miss = 0;
    EXPECT_EQ(choose_draft_vocab(ids, 151669, p), 131072u);
}

TEST(DraftVocab, ids_outside_the_vocabulary_count_as_misses) {
    DraftVocabPolicy p;
    p.max_miss = 0;
    std::vector<int32_t> ids = text(100, 100, 0, 0);
    ids[7] = -1;
    EXPECT_EQ(choose_draft_vocab(ids, 151669, p), 0u);
}

}  // namespace
}  // namespace tdm
