// SPDX-License-Identifier: Apache-2.0
// tests/models/ngram/map_tables_test.cpp: the key-lookup drafters of plugins/ngram as
// C++ tables (compiled in directly, no plugin loading): option checks,
// ngram-simple's search, ngram-map-k's and ngram-map-k4v's insertion, lookup,
// hit counts, accept feedback, value eviction, and robustness against any
// history (empty, shorter than n, ids outside the vocabulary, a history that is
// not an extension of the previous one).
//
// To add a case: build a drafter from NgramParams, feed begin/propose/accept
// with hand-made token lists, and check the proposal or lookup().
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "map_k.h"
#include "map_k4v.h"
#include "ngram_simple.h"

namespace ngram {
namespace {

using Tokens = std::vector<int32_t>;

NgramParams params(uint32_t n, uint32_t m, uint32_t min_hits = 1, uint32_t n_vocab = 1000) {
    NgramParams p;
    p.n = n;
    p.m = m;
    p.min_hits = min_hits;
    p.n_vocab = n_vocab;
    return p;
}

Tokens propose(SeqDrafter& d, const Tokens& h, size_t max) {
    Tokens out(max, -7);
    out.resize(d.propose(h, out));
    return out;
}

// ---------------------------------------------------------------- options

// A host API table with only the option getters, over a string map.
std::map<std::string, std::string> g_opts;
std::string g_last_error;
tdm_status get_string(const tdm_options*, const char* key, const char** out) {
    auto it = g_opts.find(key);
    if (it == g_opts.end()) return TDM_ERR_NOT_FOUND;
    *out = it->second.c_str();
    return TDM_OK;
}
tdm_status get_int(const tdm_options* o, const char* key, int64_t* out) {
    const char* s = nullptr;
    if (get_string(o, key, &s) != TDM_OK) return TDM_ERR_NOT_FOUND;
    char* end = nullptr;
    *out = std::strtoll(s, &end, 10);
    if (*end) {
        g_last_error = std::string("'") + s + "' is not an integer";
        return TDM_ERR_INVALID_ARGUMENT;
    }
    return TDM_OK;
}
const char* last_error() { return g_last_error.c_str(); }

tdm_host_api fake_host() {
    tdm_host_api h{};
    h.struct_size = sizeof h;
    h.option_get_int = get_int;
    h.option_get_string = get_string;
    h.last_error = last_error;
    return h;
}

TEST(NgramParams, absent_options_keep_llama_cpp_defaults_and_present_ones_are_read) {
    const tdm_host_api host = fake_host();
    const tdm_options* opts = reinterpret_cast<const tdm_options*>(&g_opts);  // any non-null handle
    g_opts = {};
    NgramParams p;
    std::string err;
    ASSERT_TRUE(read_params(&host, opts, &p, &err)) << err;
    EXPECT_EQ(p.n, 12u);
    EXPECT_EQ(p.m, 48u);
    EXPECT_EQ(p.min_hits, 1u);
    g_opts = {{"ngram_size_n", "3"}, {"ngram_size_m", "7"}, {"ngram_min_hits", "2"}, {"n_vocab", "512"},
              {"ngram_cache", "/tmp/x.bin"}};
    ASSERT_TRUE(read_params(&host, opts, &p, &err)) << err;
    EXPECT_EQ(p.n, 3u);
    EXPECT_EQ(p.m, 7u);
    EXPECT_EQ(p.min_hits, 2u);
    EXPECT_EQ(p.n_vocab, 512u);
    EXPECT_EQ(p.cache_path, "/tmp/x.bin");
}

TEST(NgramParams, zero_negative_and_non_integer_sizes_are_rejected_naming_the_option_and_flag) {
    const tdm_host_api host = fake_host();
    const tdm_options* opts = reinterpret_cast<const tdm_options*>(&g_opts);
    const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
        {{{"ngram_size_n", "0"}}, "ngram_size_n (--spec-ngram-size-n) must be in [1, 1024], got 0"},
        {{{"ngram_size_m", "-1"}}, "ngram_size_m (--spec-ngram-size-m) must be in [1, 1024], got -1"},
        {{{"ngram_min_hits", "0"}}, "ngram_min_hits (--spec-ngram-min-hits) must be in [1,"},
        {{{"ngram_size_n", "4096"}}, "got 4096"},
        {{{"ngram_size_n", "twelve"}}, "'twelve' is not an integer"},
    };
    for (const auto& [o, want] : cases) {
        g_opts = o;
        NgramParams p;
        std::string err;
        EXPECT_FALSE(read_params(&host, opts, &p, &err));
        EXPECT_NE(err.find(want), std::string::npos) << err;
    }
    NgramParams bad = params(1, 1, 0);
    std::string err;
    EXPECT_FALSE(validate_params(bad, &err));
    EXPECT_NE(err.find("ngram_min_hits"), std::string::npos) << err;
}

// ---------------------------------------------------------------- ngram-simple

TEST(NgramSimple, finds_the_most_recent_earlier_occurrence_of_the_last_n_tokens) {
    //                 0  1  2  3  4  5  6  7  8  9 10
    const Tokens h = {1, 2, 3, 9, 1, 2, 3, 8, 5, 1, 2};
    EXPECT_EQ(ngram_simple_find(h, 2), 4u);  // [1 2] at 4 (not 0, older; not 9, the key itself)
    EXPECT_EQ(ngram_simple_find(h, 3), std::nullopt);  // [5 1 2] occurs only at the end
    NgramSimple d(params(2, 3));
    EXPECT_EQ(propose(d, h, 8), (Tokens{3, 8, 5}));   // m = 3 tokens after [1 2] at 4
    EXPECT_EQ(propose(d, h, 2), (Tokens{3, 8}));      // the host's max wins over m
}

TEST(NgramSimple, a_short_cycle_drafts_whole_periods_by_overlapping_copy) {
    const Tokens h = {7, 1, 2, 3, 1, 2, 3, 1, 2};  // period 3
    NgramSimple d(params(2, 8));
    // the match one period back has only 3 tokens after it; the copy continues the cycle
    EXPECT_EQ(propose(d, h, 16), (Tokens{3, 1, 2, 3, 1, 2, 3, 1}));
}

TEST(NgramSimple, any_history_is_safe_and_ids_outside_the_vocabulary_are_never_proposed) {
    NgramSimple d(params(3, 4, 1, 10));
    EXPECT_TRUE(propose(d, {}, 4).empty());
    EXPECT_TRUE(propose(d, {1, 2}, 4).empty());        // shorter than n
    EXPECT_TRUE(propose(d, {1, 2, 3}, 4).empty());     // only the key itself
    EXPECT_TRUE(propose(d, {1, 2, 3, 1, 2, 3}, 0).empty());
    // the continuation holds 42 (>= n_vocab 10) and -5: the draft stops before them
    EXPECT_EQ(propose(d, {1, 2, 3, 4, 42, 1, 2, 3}, 4), (Tokens{4}));
    EXPECT_TRUE(propose(d, {1, 2, 3, -5, 6, 1, 2, 3}, 4).empty());
    EXPECT_EQ(propose(d, {-1, -2, -3, 4, -1, -2, -3}, 4), (Tokens{4}));  // negative keys are just ids
}

// ---------------------------------------------------------------- ngram-map-k

TEST(NgramMapK, insertion_counts_every_occurrence_followed_by_a_token) {
    NgramMapK d(params(2, 4));
    d.begin(Tokens{1, 2, 3, 1, 2, 4, 1, 2});
    // keys [1 2] (at 0 and 3; the one at 6 has no follower yet), [2 3], [3 1], [2 4], [4 1]
    EXPECT_EQ(d.n_keys(), 5u);
    const MapKEntry* e = d.lookup(Tokens{1, 2});
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->hits, 2u);
    EXPECT_EQ(e->last, 3u);
    EXPECT_EQ(d.lookup(Tokens{4, 1})->hits, 1u);
    EXPECT_EQ(d.lookup(Tokens{9, 9}), nullptr);
    EXPECT_EQ(d.lookup(Tokens{1}), nullptr);  // wrong size: no key
    // one more token: the trailing [1 2] now counts too
    d.accept(Tokens{1, 2, 3, 1, 2, 4, 1, 2, 5}, 0, 0);
    EXPECT_EQ(d.lookup(Tokens{1, 2})->hits, 3u);
    EXPECT_EQ(d.lookup(Tokens{1, 2})->last, 6u);
}

TEST(NgramMapK, lookup_drafts_after_the_latest_occurrence_and_min_hits_gates_it) {
    const Tokens h = {1, 2, 3, 4, 1, 2, 5, 6, 1, 2};
    NgramMapK one(params(2, 3, 1));
    one.begin(h);
    EXPECT_EQ(propose(one, h, 8), (Tokens{5, 6, 1}));  // after [1 2] at 4
    NgramMapK two(params(2, 3, 2));
    two.begin(h);
    EXPECT_EQ(propose(two, h, 8), (Tokens{5, 6, 1}));  // [1 2] occurred twice before
    NgramMapK three(params(2, 3, 3));
    three.begin(h);
    EXPECT_TRUE(propose(three, h, 8).empty());
}

TEST(NgramMapK, accepted_counts_are_kept_per_key_and_size_its_next_draft) {
    const Tokens h = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2};
    NgramMapK d(params(2, 6));
    d.begin(h);
    EXPECT_EQ(propose(d, h, 16).size(), 6u);
    Tokens h2 = h;
    h2.insert(h2.end(), {3, 4, 0});  // two drafts accepted, then the target's own token
    d.accept(h2, 6, 2);
    const MapKEntry* e = d.lookup(Tokens{1, 2});
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->n_drafts, 1u);
    EXPECT_EQ(e->n_drafted, 6u);
    EXPECT_EQ(e->n_accepted, 2u);
    EXPECT_EQ(e->next_len, 3u);  // one past what was accepted
    // the same key again: the draft is now 3 long; a full accept restores m
    Tokens h3 = h2;
    h3.insert(h3.end(), {1, 2});
    d.accept(h3, 0, 0);
    EXPECT_EQ(propose(d, h3, 16).size(), 3u);
    Tokens h4 = h3;
    h4.insert(h4.end(), {3, 4, 0, 7});
    d.accept(h4, 3, 3);
    EXPECT_EQ(d.lookup(Tokens{1, 2})->next_len, 0u);
    EXPECT_EQ(d.lookup(Tokens{1, 2})->n_accepted, 5u);
    // a wholly rejected draft still leaves a one-token probe
    Tokens h5 = h4;
    h5.insert(h5.end(), {1, 2});
    d.accept(h5, 0, 0);
    ASSERT_FALSE(propose(d, h5, 16).empty());
    h5.push_back(9);
    d.accept(h5, 6, 0);
    EXPECT_EQ(d.lookup(Tokens{1, 2})->next_len, 1u);
}

TEST(NgramMapK, a_history_that_is_not_an_extension_rebuilds_the_table) {
    NgramMapK d(params(2, 3));
    d.begin(Tokens{1, 2, 3, 1, 2});
    ASSERT_NE(d.lookup(Tokens{1, 2}), nullptr);
    const Tokens other = {5, 6, 7, 5, 6};
    EXPECT_EQ(propose(d, other, 4), (Tokens{7, 5, 6}));
    EXPECT_EQ(d.lookup(Tokens{1, 2}), nullptr);
    EXPECT_EQ(d.lookup(Tokens{5, 6})->hits, 1u);
    EXPECT_TRUE(propose(d, {}, 4).empty());
    EXPECT_EQ(d.n_keys(), 0u);
}

TEST(NgramMapK, ids_outside_the_vocabulary_never_reach_a_draft) {
    NgramMapK d(params(2, 4, 1, 10));
    const Tokens h = {1, 2, 3, 99, 4, 1, 2};
    d.begin(h);
    EXPECT_EQ(propose(d, h, 8), (Tokens{3}));
    d.begin(Tokens{});
    EXPECT_TRUE(propose(d, Tokens{-1, -1}, 8).empty());
}

// ---------------------------------------------------------------- ngram-map-k4v

TEST(NgramMapK4v, values_are_counted_once_their_m_tokens_exist) {
    NgramMapK4v d(params(2, 2));
    d.begin(Tokens{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 5});
    const K4vEntry* e = d.lookup(Tokens{1, 2});
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->hits, 3u);
    // [3 4] twice; [5] after the last [1 2] is not yet a whole 2-gram
    int used = 0;
    for (const K4vValue& v : e->values)
        if (v.count) {
            ++used;
            EXPECT_EQ(v.count, 2u);
            EXPECT_EQ(d.value_tokens(v)[0], 3);
            EXPECT_EQ(v.pos, 6u);  // the most recent occurrence
        }
    EXPECT_EQ(used, 1);
}

TEST(NgramMapK4v, drafts_only_when_one_value_dominates_three_to_one) {
    // [1 2] -> [3 3] three times and -> [4 4] once: 3 < 3 x 1 is false -> drafts
    Tokens h = {1, 2, 3, 3, 1, 2, 3, 3, 1, 2, 3, 3, 1, 2, 4, 4, 1, 2};
    NgramMapK4v d(params(2, 2));
    d.begin(h);
    EXPECT_EQ(propose(d, h, 8), (Tokens{3, 3}));
    // one more [4 4]: 3 < 3 x 2 -> no value dominates
    h = {1, 2, 3, 3, 1, 2, 3, 3, 1, 2, 3, 3, 1, 2, 4, 4, 1, 2, 4, 4, 1, 2};
    d.begin(h);
    EXPECT_TRUE(propose(d, h, 8).empty());
}

TEST(NgramMapK4v, min_hits_counts_key_occurrences) {
    const Tokens h = {1, 2, 7, 8, 1, 2};
    NgramMapK4v one(params(2, 2, 1));
    one.begin(h);
    EXPECT_EQ(propose(one, h, 8), (Tokens{7, 8}));
    NgramMapK4v two(params(2, 2, 2));
    two.begin(h);
    EXPECT_TRUE(propose(two, h, 8).empty());
}

TEST(NgramMapK4v, a_fifth_value_evicts_the_least_frequent_then_oldest) {
    // values after [1 2]: a=[10] x3, b=[11] x1, c=[12] x2, d=[13] x1, then e=[14]
    Tokens h;
    auto occ = [&](int32_t v) { h.insert(h.end(), {1, 2, v}); };
    for (int32_t v : {10, 11, 10, 12, 13, 10, 12, 14}) occ(v);
    NgramMapK4v d(params(2, 1));
    d.begin(h);
    const K4vEntry* e = d.lookup(Tokens{1, 2});
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->evictions, 1u);
    std::map<int32_t, uint32_t> counts;
    for (const K4vValue& v : e->values)
        if (v.count) counts[d.value_tokens(v)[0]] = v.count;
    // b (count 1, older than d) made room for e
    EXPECT_EQ(counts, (std::map<int32_t, uint32_t>{{10, 3}, {12, 2}, {13, 1}, {14, 1}}));
}

TEST(NgramMapK4v, accept_feedback_sizes_the_next_draft_of_that_value) {
    const Tokens h = {1, 2, 3, 4, 5, 6, 1, 2};
    NgramMapK4v d(params(2, 4));
    d.begin(h);
    EXPECT_EQ(propose(d, h, 8), (Tokens{3, 4, 5, 6}));
    Tokens h2 = h;
    h2.insert(h2.end(), {3, 9});
    d.accept(h2, 4, 1);
    const K4vEntry* e = d.lookup(Tokens{1, 2});
    EXPECT_EQ(e->n_drafted, 4u);
    EXPECT_EQ(e->n_accepted, 1u);
    h2.insert(h2.end(), {7, 7, 1, 2});
    d.accept(h2, 0, 0);
    EXPECT_EQ(propose(d, h2, 8).size(), 0u);  // [3 4 5 6] and [3 9 7 7]: 1 vs 1, none dominates
}

TEST(NgramMapK4v, any_history_is_safe) {
    NgramMapK4v d(params(3, 2, 1, 5));
    for (const Tokens& h : {Tokens{}, Tokens{1}, Tokens{1, 2, 3}, Tokens{1, 2, 3, 4, 9, 1, 2, 3}, Tokens{-3, -3, -3, -3}}) {
        d.begin(h);
        const Tokens p = propose(d, h, 4);
        for (int32_t t : p) EXPECT_TRUE(t >= 0 && t < 5) << t;
        d.accept(h, p.size(), 0);
    }
}

}  // namespace
}  // namespace ngram
