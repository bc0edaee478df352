// SPDX-License-Identifier: Apache-2.0
// tests/models/ngram/ngram_cache_test.cpp: ngram-cache's statistics, its draft rule,
// and its file (compiled in directly): counting, lookup thresholds, the
// static/dynamic tiers, save/load round trips, the merge policy, and the
// rejection of missing-header, truncated, corrupt and malformed files with a
// message naming the file and the problem.
//
// To add a case: build an NgramCache by update()/add(), or a drafter with
// NgramParams::cache_path, and check draft output or the file round trip.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache_file.h"
#include "ngram_cache.h"
#include "support/fixtures.h"

namespace ngram {
namespace {

using Tokens = std::vector<int32_t>;

CacheNgram g(std::initializer_list<int32_t> t) { return CacheNgram::of(std::span<const int32_t>(t.begin(), t.size())); }

Tokens draft(std::span<const int32_t> h, const NgramCache& dyn, const NgramCache& stat, size_t max, int max_n = 4,
             uint32_t n_vocab = 1000) {
    Tokens out(max);
    out.resize(ngram_cache_draft(h, dyn, stat, max_n, n_vocab, out));
    return out;
}

std::string temp_path(const std::string& name) {
    static const std::string dir = tdm::test::make_temp_dir("ngram-cache");
    return dir + "/" + name;
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

NgramParams cache_params(const std::string& path) {
    NgramParams p;
    p.n = 12;
    p.n_vocab = 1000;
    p.cache_path = path;
    return p;
}

// ---------------------------------------------------------------- table

TEST(NgramCache, update_counts_every_n_gram_of_sizes_1_to_4_with_its_follower) {
    NgramCache c;
    const Tokens t = {1, 2, 3, 1, 2, 3, 1, 2, 4};
    c.update(t, 0, 1000);
    EXPECT_EQ(c.count(g({1, 2}), 3), 2u);
    EXPECT_EQ(c.count(g({1, 2}), 4), 1u);
    EXPECT_EQ(c.count(g({2}), 3), 2u);
    EXPECT_EQ(c.count(g({3, 1, 2}), 3), 1u);
    EXPECT_EQ(c.count(g({2, 3, 1, 2}), 4), 1u);
    EXPECT_EQ(c.find(g({9})), nullptr);
    EXPECT_NE(g({1, 2}), g({1, 2, 0}));  // sizes differ even when the padding matches
    // incremental updates equal one update of the whole
    NgramCache inc;
    inc.update(std::span(t).first(4), 0, 1000);
    inc.update(t, 4, 1000);
    EXPECT_TRUE(inc == c);
    // ids outside the vocabulary make no n-gram
    NgramCache v;
    v.update(Tokens{1, 2, 50, 3, -1, 4}, 0, 10);
    EXPECT_EQ(v.count(g({1}), 2), 1u);
    EXPECT_EQ(v.find(g({2})), nullptr);
    EXPECT_EQ(v.find(g({3})), nullptr);
    EXPECT_EQ(v.find(g({50})), nullptr);
}

TEST(NgramCache, merge_adds_counts_and_saturates) {
    NgramCache a, b;
    a.add(g({1}), 2, 3);
    b.add(g({1}), 2, 4);
    b.add(g({1}), 5, 1);
    b.add(g({7, 8}), 9, UINT32_MAX);
    a.add(g({7, 8}), 9, 10);
    a.merge(b);
    EXPECT_EQ(a.count(g({1}), 2), 7u);
    EXPECT_EQ(a.count(g({1}), 5), 1u);
    EXPECT_EQ(a.count(g({7, 8}), 9), UINT32_MAX);
}

// ---------------------------------------------------------------- drafting

TEST(NgramCache, the_longest_n_gram_that_passes_the_lax_thresholds_decides) {
    NgramCache dyn, none;
    // [5 6 7] seen once -> 8 (size 3: one sample suffices); [7] -> 9 twice, -> 8 once
    const Tokens t = {5, 6, 7, 8, 0, 7, 9, 0, 7, 9};
    dyn.update(t, 0, 1000);
    EXPECT_EQ(draft(Tokens{5, 6, 7}, dyn, none, 1), (Tokens{8}));
    EXPECT_EQ(draft(Tokens{4, 4, 7}, dyn, none, 1), (Tokens{9}));  // falls back to [7]: 2 of 3 = 66%
    // a 1-gram needs two samples: [8] -> 0 was seen once
    EXPECT_TRUE(draft(Tokens{8}, dyn, none, 1).empty());
    // the draft continues through its own tokens: [5 6 7] -> 8, then [6 7 8]... -> 0, [8 0] -> 7 ...
    EXPECT_EQ(draft(Tokens{5, 6, 7}, dyn, none, 4), (Tokens{8, 0, 7, 9}));
}

TEST(NgramCache, static_statistics_weight_candidates_and_draft_under_strict_thresholds) {
    NgramCache dyn, stat;
    dyn.add(g({3}), 10, 2);
    dyn.add(g({3}), 11, 2);  // 50%: not enough for a 1-gram (66%) ...
    EXPECT_TRUE(draft(Tokens{2, 3}, dyn, stat, 1).empty());
    stat.add(g({2, 3}), 11, 1);  // ... the static 2-gram [2 3] -> 11 picks 11, but 2/4 < 66% still fails
    EXPECT_TRUE(draft(Tokens{2, 3}, dyn, stat, 1).empty());
    dyn.add(g({2, 3}), 10, 1);
    dyn.add(g({2, 3}), 11, 1);
    // [2 3]: two samples, 50% passes for size 2; the static weight breaks the tie for 11
    EXPECT_EQ(draft(Tokens{2, 3}, dyn, stat, 1), (Tokens{11}));
    // static alone: strict thresholds (size 2: 3 samples, 66%)
    NgramCache empty, st2;
    st2.add(g({4, 5}), 6, 2);
    EXPECT_TRUE(draft(Tokens{4, 5}, empty, st2, 1).empty());
    st2.add(g({4, 5}), 6, 1);
    EXPECT_EQ(draft(Tokens{4, 5}, empty, st2, 1), (Tokens{6}));
    // max_n limits the n-gram sizes used: with max_n 1 only [5] counts
    EXPECT_TRUE(draft(Tokens{4, 5}, empty, st2, 1, 1).empty());
}

TEST(NgramCache, counts_near_saturation_still_pick_the_most_frequent_token) {
    // count x 100 x static count is ~1.8e21 here: past 64-bit integers
    NgramCache dyn, stat;
    dyn.add(g({3}), 10, UINT32_MAX);
    dyn.add(g({3}), 11, 1u << 31);
    stat.add(g({2, 3}), 10, UINT32_MAX);
    stat.add(g({2, 3}), 11, UINT32_MAX);
    EXPECT_EQ(draft(Tokens{2, 3}, dyn, stat, 1), (Tokens{10}));
}

TEST(NgramCache, drafting_from_any_history_is_safe) {
    NgramCache dyn, stat;
    dyn.update(Tokens{1, 2, 3, 1, 2, 3, 1, 2, 77}, 0, 1000);
    EXPECT_TRUE(draft(Tokens{}, dyn, stat, 4).empty());
    EXPECT_EQ(draft(Tokens{1, 2}, dyn, stat, 1, 4, 1000), (Tokens{3}));
    EXPECT_TRUE(draft(Tokens{2}, dyn, stat, 4, 4, 3).empty());  // 3 is outside a vocabulary of 3
    EXPECT_TRUE(draft(Tokens{-5, -6}, dyn, stat, 4).empty());
}

// ---------------------------------------------------------------- file

TEST(NgramCacheFile, save_then_load_round_trips_exactly_and_deterministically) {
    NgramCache c;
    c.update(Tokens{1, 2, 3, 4, 1, 2, 3, 5, 100000, 7, 1, 2}, 0, 200000);
    c.add(g({9, 9, 9, 9}), 0, 123456789);
    const std::string path = temp_path("round.bin");
    std::string err;
    ASSERT_TRUE(save_ngram_cache(path, c, &err)) << err;
    NgramCache back;
    ASSERT_EQ(load_ngram_cache(path, &back, &err), CacheLoad::ok) << err;
    EXPECT_TRUE(back == c);
    EXPECT_EQ(encode_ngram_cache(back), encode_ngram_cache(c));  // same content, same bytes
    EXPECT_EQ(std::filesystem::file_size(path), encode_ngram_cache(c).size());
    // an empty cache is a valid file too
    ASSERT_TRUE(save_ngram_cache(path, NgramCache{}, &err)) << err;
    ASSERT_EQ(load_ngram_cache(path, &back, &err), CacheLoad::ok) << err;
    EXPECT_TRUE(back.empty());
    // no temporary file is left behind
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
        EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(NgramCacheFile, a_missing_file_is_not_an_error) {
    NgramCache c;
    std::string err;
    EXPECT_EQ(load_ngram_cache(temp_path("does-not-exist.bin"), &c, &err), CacheLoad::missing);
    EXPECT_TRUE(err.empty());
}

TEST(NgramCacheFile, corrupt_truncated_and_foreign_files_are_rejected_naming_the_file_and_the_problem) {
    NgramCache c;
    c.update(Tokens{1, 2, 3, 4, 5, 1, 2, 3, 6}, 0, 1000);
    const std::string good = encode_ngram_cache(c);
    std::string flipped = good;
    flipped[40] ^= 0x10;  // inside the n-gram data
    std::string bad_version = good;
    bad_version[8] = 7;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"", "not an n-gram cache file"},
        {"hello world, this is text", "not an n-gram cache file"},
        {good.substr(0, 20), "truncated header"},
        {good.substr(0, good.size() - 1), "truncated"},
        {good.substr(0, good.size() / 2), "truncated"},
        {good + "x", "1 unexpected bytes after the checksum"},
        {flipped, "checksum mismatch"},
        {bad_version, "unsupported version 7"},
    };
    int i = 0;
    for (const auto& [bytes, want] : cases) {
        const std::string path = temp_path("bad" + std::to_string(i++) + ".bin");
        write_bytes(path, bytes);
        NgramCache out;
        std::string err;
        EXPECT_EQ(load_ngram_cache(path, &out, &err), CacheLoad::error) << want;
        EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
        EXPECT_NE(err.find(want), std::string::npos) << err;
    }
    // a directory is not a cache file
    NgramCache out;
    std::string err;
    EXPECT_EQ(load_ngram_cache(std::filesystem::path(temp_path("x")).parent_path().string(), &out, &err),
              CacheLoad::error);
    EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
}

TEST(NgramCacheFile, well_checksummed_but_malformed_payloads_are_rejected) {
    // Hand-built files with a valid checksum: only a foreign writer makes these.
    auto build = [](uint64_t n_entries, const std::vector<uint32_t>& words) {
        std::string payload;
        for (uint32_t w : words)
            for (int b = 0; b < 4; ++b) payload += char((w >> (8 * b)) & 0xff);
        std::string f = "TDMNGRAM";
        auto put = [&](uint64_t v, int bytes) {
            for (int b = 0; b < bytes; ++b) f += char((v >> (8 * b)) & 0xff);
        };
        put(1, 4);
        put(4, 4);
        put(n_entries, 8);
        put(payload.size(), 8);
        f += payload;
        uint64_t h = 0xcbf29ce484222325ull;
        for (char ch : f) h = (h ^ uint8_t(ch)) * 0x100000001b3ull;
        put(h, 8);
        return f;
    };
    NgramCache out;
    std::string err;
    EXPECT_TRUE(decode_ngram_cache(build(1, {2, 5, 6, 1, 7, 3}), "f", &out, &err)) << err;
    EXPECT_EQ(out.count(g({5, 6}), 7), 3u);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {build(1, {5, 1, 2, 3, 4, 5, 1, 7, 3}), "size 5 outside 1..4"},
        {build(1, {2, 5, 6, 0}), "no following tokens"},
        {build(1, {2, 5, 6, 1, 7, 0}), "count 0"},
        {build(1, {1, 0xffffffffu, 1, 7, 3}), "negative token id -1"},
        {build(2, {1, 5, 1, 7, 3, 1, 5, 1, 8, 3}), "the same n-gram appears twice"},
        {build(1, {1, 5, 2, 7, 3, 7, 4}), "the same following token appears twice"},
        {build(2, {1, 5, 1, 7, 3}), "ends early"},
        {build(1, {1, 5, 1, 7, 3, 99}), "left over"},
    };
    for (const auto& [bytes, want] : cases) {
        EXPECT_FALSE(decode_ngram_cache(bytes, "f", &out, &err)) << want;
        EXPECT_NE(err.find(want), std::string::npos) << err;
    }
}

// ---------------------------------------------------------------- drafter

TEST(NgramCacheDrafter, a_missing_file_is_created_by_save_and_loaded_by_the_next_drafter) {
    const std::string path = temp_path("grow.bin");
    std::string err;
    auto a = NgramCacheDrafter::create(cache_params(path), &err);
    ASSERT_TRUE(a) << err;
    const Tokens text = {10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10, 11};
    a->begin(text);
    ASSERT_TRUE(a->save(&err)) << err;
    ASSERT_TRUE(std::filesystem::exists(path));
    // a fresh drafter on an unrelated prompt drafts from the file's statistics
    // (strict thresholds: a 2-gram needs 3 samples, a 3- or 4-gram 2)
    auto b = NgramCacheDrafter::create(cache_params(path), &err);
    ASSERT_TRUE(b) << err;
    EXPECT_EQ(b->static_cache().count(g({10, 11}), 12), 4u);
    b->begin(Tokens{99});
    Tokens out(3);
    const Tokens h = {99, 10, 11};
    out.resize(b->propose(h, out));
    EXPECT_EQ(out, (Tokens{12, 13, 10}));
}

TEST(NgramCacheDrafter, save_merges_what_each_drafter_learnt_into_the_file_once) {
    const std::string path = temp_path("merge.bin");
    std::string err;
    auto a = NgramCacheDrafter::create(cache_params(path), &err);
    auto b = NgramCacheDrafter::create(cache_params(path), &err);
    ASSERT_TRUE(a && b) << err;
    a->begin(Tokens{1, 2, 3});
    b->begin(Tokens{1, 2, 4});
    a->accept(Tokens{1, 2, 3, 1, 2}, 0, 0);
    ASSERT_TRUE(a->save(&err)) << err;
    ASSERT_TRUE(b->save(&err)) << err;  // re-reads the file: a's counts survive
    ASSERT_TRUE(a->save(&err)) << err;  // nothing new: no double counting
    NgramCache file;
    ASSERT_EQ(load_ngram_cache(path, &file, &err), CacheLoad::ok) << err;
    EXPECT_EQ(file.count(g({1, 2}), 3), 1u);
    EXPECT_EQ(file.count(g({1, 2}), 4), 1u);
    EXPECT_EQ(file.count(g({3}), 1), 1u);
    // a later sequence of a adds only its own new text
    a->begin(Tokens{1, 2, 3});
    ASSERT_TRUE(a->save(&err)) << err;
    ASSERT_EQ(load_ngram_cache(path, &file, &err), CacheLoad::ok) << err;
    EXPECT_EQ(file.count(g({1, 2}), 3), 2u);
    EXPECT_TRUE(a->static_cache() == file);
}

TEST(NgramCacheDrafter, a_corrupt_file_fails_create_and_is_never_overwritten) {
    const std::string path = temp_path("corrupt.bin");
    NgramCache c;
    c.update(Tokens{1, 2, 3, 4}, 0, 1000);
    std::string bytes = encode_ngram_cache(c);
    bytes[bytes.size() - 3] ^= 1;  // the checksum
    write_bytes(path, bytes);
    std::string err;
    EXPECT_FALSE(NgramCacheDrafter::create(cache_params(path), &err));
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_NE(err.find("checksum mismatch"), std::string::npos) << err;
    // a drafter created before the file went bad refuses to replace it
    const std::string path2 = temp_path("later-corrupt.bin");
    auto d = NgramCacheDrafter::create(cache_params(path2), &err);
    ASSERT_TRUE(d);
    d->begin(Tokens{5, 6, 7});
    write_bytes(path2, "garbage");
    EXPECT_FALSE(d->save(&err));
    EXPECT_NE(err.find("not overwritten"), std::string::npos) << err;
    EXPECT_EQ(tdm::test::read_file(path2), "garbage");
}

TEST(NgramCacheDrafter, an_unwritable_path_fails_save_with_the_reason) {
    std::string err;
    auto d = NgramCacheDrafter::create(cache_params(temp_path("no-such-dir/cache.bin")), &err);
    ASSERT_TRUE(d) << err;
    d->begin(Tokens{1, 2, 3});
    EXPECT_FALSE(d->save(&err));
    EXPECT_NE(err.find("no-such-dir/cache.bin: cannot write"), std::string::npos) << err;
}

}  // namespace
}  // namespace ngram
