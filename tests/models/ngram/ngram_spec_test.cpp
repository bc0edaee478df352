// SPDX-License-Identifier: Apache-2.0
// tests/models/ngram/ngram_spec_test.cpp: the built ngram plugin, loaded through the
// registry like any third-party plugin and run as PluginDrafter by the
// speculative round on synthetic Qwen3 targets:
//   - exactness (DESIGN invariant 1): for every drafter and for chains, the
//     speculative tokens equal plain greedy decoding's, on prompts where drafts
//     are mostly accepted and on prompts where they are mostly rejected;
//   - acceptance: on repetitive prompts (a listing to be repeated with one
//     change; a list that repeats) every drafter gets more than 60% of its
//     drafted tokens accepted by a model whose greedy output repeats;
//   - the ABI path: llama.cpp's statistics names, option errors and a corrupt
//     ngram-cache file reported through create.
//
// To add a case: pick a Target (repeating period), build a prompt, and call
// run() with the spec types and options; it checks exactness itself.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>

#include "engine/generate.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_model.h"
#include "speculative/plugin_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

using Tokens = std::vector<int32_t>;
using Options = std::map<std::string, std::string>;

const char* const kDrafterTypes[] = {"ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache"};
constexpr int kGen = 48;

// A tiny synthetic target whose greedy successor of token t is fixed
// (qwen3_repeat_successor): ids cycle in groups of `period`.
struct Target {
    synth::Qwen3Shape shape;
    synth::Qwen3SynthOptions opts;
    std::string path;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;

    int32_t succ(int32_t t) const { return synth::qwen3_repeat_successor(shape, opts, t); }
};

std::unique_ptr<Target> make_target(int period, bool repeating, uint64_t seed) {
    auto t = std::make_unique<Target>();
    t->shape = *synth::qwen3_preset("tiny");
    t->opts.weight_type = DType::Q8_0;
    t->opts.seed = seed;
    t->opts.repeating = repeating;
    t->opts.repeat_period = period;
    t->path = test::make_temp_dir("ngram-spec") + "/target.gguf";
    EXPECT_TRUE(synth::synth_qwen3_gguf(t->path, t->shape, t->opts).ok());
    auto m = Model::load(t->path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    t->model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    auto kv = KvPool::create(test::test_device(), t->model->attention_layers(), kc, "ngram-test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    t->kv = std::move(kv).value();
    t->runner = std::make_unique<Runner>(*t->model, *t->kv, test::test_device(), test::test_pipelines());
    return t;
}

// Period 64 in the tiny vocabulary: a 56-token "listing" l_i = 64 + i whose
// greedy continuation is itself. Period 8: a short list that cycles.
Target& listing_target() {
    static std::unique_ptr<Target> t = make_target(64, true, 5);
    return *t;
}
Target& list_target() {
    static std::unique_ptr<Target> t = make_target(8, true, 6);
    return *t;
}
Tokens random_tokens(uint64_t seed, size_t n, int32_t lo, int32_t hi) {
    std::mt19937_64 rng(seed);
    Tokens t(n);
    for (auto& x : t) x = lo + int32_t(rng() % uint64_t(hi - lo));
    return t;
}

// "Repeat this listing, with one change": S, the listing with one token
// changed, S again and the listing's first token. The model's continuation is
// the listing itself, so a drafter finds it in the prompt but is wrong once,
// at the changed token. `first`: the listing's first id (a multiple of 64 below
// 256, so the listing stays inside one cycle and clear of S's ids).
Tokens listing_prompt(const Target& t, uint64_t seed, int32_t first = 64) {
    const Tokens s = random_tokens(seed, 8, 300, 400);
    Tokens listing = {first};
    while (listing.size() < 56) listing.push_back(t.succ(listing.back()));
    Tokens changed = listing;
    changed[24] = 399;
    Tokens p = s;
    p.insert(p.end(), changed.begin(), changed.end());
    p.insert(p.end(), s.begin(), s.end());
    p.push_back(listing[0]);
    return p;
}

// "A list that repeats": S, then an 8-item list three times; the model goes on
// listing it.
Tokens list_prompt(const Target& t, uint64_t seed) {
    Tokens p = random_tokens(seed, 8, 300, 400);
    int32_t x = 256;
    for (int i = 0; i < 24; ++i) {
        p.push_back(x);
        x = t.succ(x);
    }
    return p;
}

GenerateParams greedy(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

Options ngram_options(const Target& t, Options extra = {}) {
    Options o = {{"ngram_size_n", "3"}, {"ngram_size_m", "16"}, {"ngram_min_hits", "1"}, {"draft_max", "8"},
                 {"n_vocab", std::to_string(t.model->info().n_vocab)}};
    for (auto& [k, v] : extra) o[k] = v;
    return o;
}

std::unique_ptr<PluginDrafter> make_drafter(const std::string& type, const Options& o) {
    const DrafterEntry* e = test::build_tree_plugins().find_drafter(type);
    EXPECT_NE(e, nullptr) << type;
    if (!e) return nullptr;
    auto d = PluginDrafter::create(*e, o);
    EXPECT_TRUE(d.ok()) << d.error().message();
    return d.ok() ? std::move(d).value() : nullptr;
}

// Plain greedy, then speculative with `chain`, each on a fresh sequence; the
// tokens must match. Returns the speculative statistics. Fixed k unless `controller`.
SpecStats run(Target& t, const Tokens& prompt, std::span<Drafter* const> chain, int draft_max = 8,
              bool controller = false) {
    int seq = *t.kv->add_sequence();
    auto plain = generate(*t.runner, nullptr, seq, prompt, greedy(kGen), {});
    t.kv->free_sequence(seq);
    EXPECT_TRUE(plain.ok()) << plain.error().message();
    SpecParams sp;
    sp.draft_max = draft_max;
    sp.auto_k = controller;
    seq = *t.kv->add_sequence();
    auto spec = generate_speculative(*t.runner, nullptr, seq, prompt, greedy(kGen), chain, sp, {});
    t.kv->free_sequence(seq);
    EXPECT_TRUE(spec.ok()) << spec.error().message();
    if (!plain.ok() || !spec.ok()) return {};
    EXPECT_EQ(spec->gen.tokens, plain->tokens) << "speculative output differs from plain greedy decoding";
    return spec->stats;
}

class NgramSpec : public test::DeviceTest {};

// ---------------------------------------------------------------- registration

TEST_F(NgramSpec, the_plugin_registers_five_drafters_under_llama_cpp_names) {
    const std::map<std::string, std::string> want = {{"ngram-simple", "ngram_simple"},
                                                     {"ngram-map-k", "ngram_map_k"},
                                                     {"ngram-map-k4v", "ngram_map_k4v"},
                                                     {"ngram-mod", "ngram_mod"},
                                                     {"ngram-cache", "ngram_cache"}};
    for (const auto& [type, name] : want) {
        const DrafterEntry* e = test::build_tree_plugins().find_drafter(type);
        ASSERT_NE(e, nullptr) << type;
        EXPECT_EQ(std::string(e->desc->name), name);
        EXPECT_EQ(e->plugin->name, "ngram");
    }
}

TEST_F(NgramSpec, bad_options_and_a_corrupt_cache_file_fail_create_with_a_clear_message) {
    const DrafterEntry* e = test::build_tree_plugins().find_drafter("ngram-map-k");
    ASSERT_NE(e, nullptr);
    auto bad = PluginDrafter::create(*e, {{"ngram_size_n", "0"}});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("ngram_size_n (--spec-ngram-size-n) must be in [1, 1024], got 0"),
              std::string::npos)
        << bad.error().message();
    auto word = PluginDrafter::create(*e, {{"ngram_min_hits", "many"}});
    ASSERT_FALSE(word.ok());
    EXPECT_NE(word.error().message().find("'many' is not an integer"), std::string::npos) << word.error().message();

    const std::string path = test::make_temp_dir("ngram-corrupt") + "/cache.bin";
    std::ofstream(path, std::ios::binary) << "TDMNGRAM\x01";
    const DrafterEntry* c = test::build_tree_plugins().find_drafter("ngram-cache");
    ASSERT_NE(c, nullptr);
    auto corrupt = PluginDrafter::create(*c, {{"ngram_cache", path}});
    ASSERT_FALSE(corrupt.ok());
    EXPECT_NE(corrupt.error().message().find(path + ": truncated header"), std::string::npos)
        << corrupt.error().message();
}

// ---------------------------------------------------------------- acceptance + exactness

class EachDrafter : public NgramSpec, public ::testing::WithParamInterface<const char*> {};

TEST_P(EachDrafter, repeats_a_listing_with_one_change_exactly_and_accepts_most_drafts) {
    Target& t = listing_target();
    const std::string dir = test::make_temp_dir("ngram-listing");
    auto d = make_drafter(GetParam(), ngram_options(t, {{"ngram_cache", dir + "/cache.bin"}}));
    ASSERT_TRUE(d);
    Drafter* chain[] = {d.get()};
    uint64_t drafted = 0, accepted = 0;
    for (uint64_t i = 0; i < 2; ++i) {
        const SpecStats st = run(t, listing_prompt(t, 100 + i), chain);
        drafted += st.drafted;
        accepted += st.accepted;
        ASSERT_EQ(st.drafters.size(), 1u);
        EXPECT_EQ(st.drafters[0].name, test::build_tree_plugins().find_drafter(GetParam())->desc->name);
    }
    RecordProperty("acceptance", std::to_string(double(accepted) / double(std::max<uint64_t>(drafted, 1))));
    EXPECT_GE(drafted, 2u * 16) << GetParam();
    EXPECT_GT(double(accepted) / double(std::max<uint64_t>(drafted, 1)), 0.6)
        << GetParam() << ": " << accepted << " of " << drafted << " accepted";
    EXPECT_LT(accepted, drafted) << GetParam() << ": the changed token was never drafted, the reject path is untested";
}

TEST_P(EachDrafter, continues_a_list_that_repeats_exactly_and_accepts_most_drafts) {
    Target& t = list_target();
    auto d = make_drafter(GetParam(), ngram_options(t));
    ASSERT_TRUE(d);
    Drafter* chain[] = {d.get()};
    uint64_t drafted = 0, accepted = 0;
    for (uint64_t i = 0; i < 2; ++i) {
        const SpecStats st = run(t, list_prompt(t, 200 + i), chain);
        drafted += st.drafted;
        accepted += st.accepted;
    }
    RecordProperty("acceptance", std::to_string(double(accepted) / double(std::max<uint64_t>(drafted, 1))));
    EXPECT_GE(drafted, 2u * 16) << GetParam();
    EXPECT_GT(double(accepted) / double(std::max<uint64_t>(drafted, 1)), 0.6)
        << GetParam() << ": " << accepted << " of " << drafted << " accepted";
}

TEST_P(EachDrafter, stays_exact_when_most_drafts_are_rejected) {
    // The listing's copy in the prompt has every fifth token changed: a key
    // found in it drafts one right token, then a wrong one. Listings of ids no
    // other test uses: ngram-mod's pool is shared by the whole process.
    Target& t = listing_target();
    auto d = make_drafter(GetParam(), ngram_options(t));
    ASSERT_TRUE(d);
    Drafter* chain[] = {d.get()};
    uint64_t drafted = 0, accepted = 0;
    for (uint64_t i = 0; i < 2; ++i) {
        Tokens p = listing_prompt(t, 300 + i, int32_t(128 + 64 * i));
        for (size_t k = 8 + 4; k < 8 + 56; k += 5) p[k] = int32_t(300 + k);  // listing_prompt: S(8), listing(56)
        const SpecStats st = run(t, p, chain);
        drafted += st.drafted;
        accepted += st.accepted;
    }
    RecordProperty("acceptance", std::to_string(double(accepted) / double(std::max<uint64_t>(drafted, 1))));
    EXPECT_GT(drafted, 0u) << GetParam();
    EXPECT_LT(2 * accepted, drafted) << GetParam() << ": " << accepted << " of " << drafted << " accepted";
}

TEST_P(EachDrafter, stays_exact_with_the_goodput_controller_choosing_the_draft_length) {
    // The default of every front end: a listing that repeats (drafts pay), and one whose copy
    // has every fifth token changed (most drafts rejected). Ids no other test uses.
    Target& t = listing_target();
    auto d = make_drafter(GetParam(), ngram_options(t));
    ASSERT_TRUE(d);
    Drafter* chain[] = {d.get()};
    uint64_t drafted = 0;
    for (uint64_t i = 0; i < 2; ++i) {
        Tokens p = listing_prompt(t, 900 + i, int32_t(448 + 8 * i));
        drafted += run(t, p, chain, 8, /*controller=*/true).drafted;
        for (size_t k = 8 + 4; k < 8 + 56; k += 5) p[k] = int32_t(300 + k);
        drafted += run(t, p, chain, 8, /*controller=*/true).drafted;
    }
    EXPECT_GT(drafted, 0u) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Ngram, EachDrafter, ::testing::ValuesIn(kDrafterTypes), [](const auto& p) {
    std::string s = p.param;
    for (char& c : s)
        if (c == '-') c = '_';
    return s;
});

// ---------------------------------------------------------------- chains

TEST_F(NgramSpec, a_chain_asks_its_drafters_in_order_and_keeps_statistics_per_drafter) {
    // map-k4v with min_hits 3 rarely proposes on a single listing; ngram-simple
    // fills in. Both get begin and accept every round, only the winner's
    // proposal counts for it.
    Target& t = listing_target();
    auto first = make_drafter("ngram-map-k4v", ngram_options(t, {{"ngram_min_hits", "3"}}));
    auto second = make_drafter("ngram-simple", ngram_options(t));
    ASSERT_TRUE(first && second);
    Drafter* chain[] = {first.get(), second.get()};
    const SpecStats st = run(t, listing_prompt(t, 400), chain);
    ASSERT_EQ(st.drafters.size(), 2u);
    EXPECT_EQ(st.drafters[0].name, "ngram_map_k4v");
    EXPECT_EQ(st.drafters[1].name, "ngram_simple");
    EXPECT_EQ(st.drafters[0].calls_begin, 1u);
    EXPECT_EQ(st.drafters[1].calls_begin, 1u);
    EXPECT_EQ(st.drafters[0].calls_acc, st.drafters[1].calls_acc);
    EXPECT_GT(st.drafters[0].calls_gen, st.drafters[0].gen_drafts);
    EXPECT_GT(st.drafters[1].gen_drafts, 0u);
    EXPECT_EQ(st.drafters[0].gen_tokens + st.drafters[1].gen_tokens, st.drafted);
    EXPECT_NE(st.drafters[1].line().find("statistics ngram_simple: #calls(b,g,a) = 1 "), std::string::npos)
        << st.drafters[1].line();
}

TEST_F(NgramSpec, ngram_mod_chained_before_a_draft_model_stays_exact) {
    // --spec-type ngram-mod,draft: the draft model drafts where the pool has
    // nothing (the first rounds of an unseen text), ngram-mod once it has.
    Target& t = list_target();
    const std::string draft_path = test::make_temp_dir("ngram-draft") + "/draft.gguf";
    ASSERT_TRUE(synth::synth_qwen3_gguf(draft_path, t.shape, synth::qwen3_draft_options(t.opts, 0.02f)).ok());
    auto dm = Model::load(draft_path, test::build_tree_plugins(), device());
    ASSERT_TRUE(dm.ok()) << dm.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    auto dkv = KvPool::create(device(), (*dm)->attention_layers(), kc, "ngram-draft");
    ASSERT_TRUE(dkv.ok());
    DraftModelDrafter draft(std::move(dm).value(), std::move(dkv).value(), device(), pipelines());
    auto mod = make_drafter("ngram-mod", ngram_options(t, {{"ngram_size_n", "4"}}));
    ASSERT_TRUE(mod);
    Drafter* chain[] = {mod.get(), &draft};
    // a prompt whose list starts only at its end: ngram-mod cannot draft at first
    Tokens p = random_tokens(500, 12, 300, 400);
    p.push_back(256);
    const SpecStats st = run(t, p, chain);
    ASSERT_EQ(st.drafters.size(), 2u);
    EXPECT_EQ(st.drafters[0].name, "ngram_mod");
    EXPECT_EQ(st.drafters[1].name, "draft");
    EXPECT_GT(st.drafters[0].gen_drafts, 0u);
    EXPECT_GT(st.drafters[1].gen_drafts, 0u);
}

}  // namespace
}  // namespace tdm
