// SPDX-License-Identifier: Apache-2.0
// tests/models/eagle3/eagle3_e2e_test.cpp: the EAGLE-3 head through the eagle3 plugin on tiny
// Qwen3 and Llama targets (4 layers, taps 0, 2 and 3), heads written by the eagle3 synthesizer:
//   - its drafts, after rounds that accepted 0..3 drafts (its own KV rolled back), equal the
//     independent reference's (eagle3_reference.h) fed the same target taps; the GGUF and HF
//     forms of one head draft the same tokens, also with llama3 rope scaling;
//   - on a host without tdm.weight_transforms (TANDEM_HIDE_EXTENSIONS), whose head builds its
//     d2t table in every step, it drafts the same tokens;
//   - greedy speculative output with it equals plain greedy output; asked for trees
//     (--draft-tree), a head with a draft vocabulary drafts chains
//     (tests/support/tree_drafter_check.h checks each round).
// The models are tiny and the prompts few (5 per target): these check a mechanism, not a
// distribution, and the program stays within CI's time budget.
#include <gtest/gtest.h>

#include <random>

#include <tandem/ext/weight_transforms.h>

#include "eagle3_reference.h"
#include "eagle3_targets.h"
#include "engine/generate.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"
#include "support/tree_drafter_check.h"

namespace tdm {
namespace {

using test::eagle3::Target;
using Tokens = std::vector<int32_t>;

struct E2eTarget {
    std::string path;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

E2eTarget load_e2e_target(Target which, const std::string& dir) {
    E2eTarget t;
    t.path = test::eagle3::write_target(which, dir);
    auto m = Model::load(t.path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "eagle3-e2e");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

Result<std::unique_ptr<DraftHeadDrafter>> make_eagle3_head(const E2eTarget& t, const std::string& head) {
    auto src = TDM_TRY(ModelSource::open(head));
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("eagle3", t.model->arch().desc->name);
    if (!e) return Error("no eagle3 head for this target");
    DraftHeadOptions o;
    o.kv.n_seq_max = 3;  // the tree test's three drafters of one head
    o.options = {{"n_vocab", std::to_string(t.model->info().n_vocab)},
                 {"target_n_layer", std::to_string(t.model->info().n_attention_layers)}};
    return DraftHeadDrafter::create(*e, "eagle3", std::shared_ptr<const ModelSource>(std::move(src)), *t.model, *t.kv,
                                    test::test_device(), test::test_pipelines(), o);
}

GenerateParams greedy_params(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

Tokens e2e_prompt(uint64_t seed, size_t n) {
    std::mt19937_64 rng(seed);
    Tokens p(n);
    for (auto& x : p) x = int32_t(3 + rng() % 400);
    return p;
}

// Rounds by hand: each asks the head for k drafts, checks them against the reference, then
// verifies oracle drafts whose (m+1)-th is wrong, so that m are accepted and the head's KV rolls
// back past the rest. Returns every draft the head made.
std::vector<Tokens> check_rounds_against_reference(E2eTarget& t, const std::string& head_path, const char* what) {
    constexpr uint32_t k = 3;
    std::vector<Tokens> made;
    auto ref = test::Eagle3Reference::open(head_path, t.path);
    EXPECT_TRUE(ref.ok()) << ref.error().message();
    auto head = make_eagle3_head(t, head_path);
    EXPECT_TRUE(head.ok()) << head.error().message();
    if (!ref.ok() || !head.ok()) return made;
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int32_t V = int32_t(t.model->info().n_vocab);

    const Tokens prompt = e2e_prompt(5, 11);
    int seq = *t.kv->add_sequence();
    auto plain = generate(runner, nullptr, seq, prompt, greedy_params(24), {});
    t.kv->free_sequence(seq);
    EXPECT_TRUE(plain.ok()) << plain.error().message();
    if (!plain.ok()) return made;
    const Tokens& truth = plain->tokens;

    seq = *t.kv->add_sequence();
    runner.set_hidden_point((*head)->hidden_point());  // after the plain run, which asks for none
    std::vector<std::vector<float>> taps;  // the target's taps of each committed position
    auto keep_taps = [&](const ForwardOutput& o, uint32_t n) {
        for (uint32_t i = 0; i < n; ++i) taps.emplace_back(o.hidden + size_t(i) * o.hidden_width,
                                                           o.hidden + size_t(i + 1) * o.hidden_width);
    };
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    EXPECT_TRUE(out.ok()) << out.error().message();
    if (!out.ok()) return made;
    EXPECT_EQ(out->hidden_width, uint32_t(ref->hparams().n_taps * ref->hparams().n_embd_target));
    keep_taps(*out, uint32_t(prompt.size()));
    EXPECT_TRUE((*head)->begin(prompt).ok());
    EXPECT_TRUE((*head)->observe({prompt, 0, out->hidden, out->hidden_width, out->hidden_on_device}).ok());
    Tokens history = prompt;
    size_t g = 0;
    history.push_back(truth[g++]);
    int compared = 0;
    for (uint32_t m : {2u, 0u, 3u, 1u, 3u, 0u, 2u}) {
        const uint32_t p = uint32_t(history.size() - 1);
        auto drafts = (*head)->draft({history, p, k, seq});
        EXPECT_TRUE(drafts.ok()) << drafts.error().message();
        if (!drafts.ok()) return made;
        made.push_back(*drafts);
        // the reference: every committed pair (taps of j, token j + 1) at position j, then the chain
        ref->truncate(0);
        test::Eagle3Step s;
        for (uint32_t j = 0; j < p; ++j) s = ref->step(history[j + 1], int32_t(j), taps[j], true);
        for (uint32_t i = 0; i < drafts->size(); ++i) {
            if (s.margin < 1e-3f) break;  // a near tie: f32 may pick either
            EXPECT_EQ((*drafts)[i], s.token) << what << ": draft " << i << " of the round at " << p;
            ++compared;
            s = ref->step(s.token, int32_t(p + i), s.hidden, false);
        }
        std::vector<int32_t> vt = {history.back()}, vp = {int32_t(p)}, vr = {0};
        for (uint32_t j = 0; j < k; ++j) {
            vt.push_back(j == m ? (truth[g + j] + 1) % V : truth[g + j]);
            vp.push_back(int32_t(p + 1 + j));
            vr.push_back(int32_t(j + 1));
        }
        auto v = runner.forward({vt, vp, seq, vr});
        EXPECT_TRUE(v.ok()) << v.error().message();
        if (!v.ok()) return made;
        for (uint32_t j = 0; j < m; ++j) EXPECT_EQ(v->argmax[j], truth[g + j]) << what << ": oracle draft rejected";
        EXPECT_TRUE(t.kv->truncate(seq, p + 1 + m).ok());
        keep_taps(*v, m + 1);
        EXPECT_TRUE((*head)
                        ->observe({std::span<const int32_t>(vt.data(), m + 1), p, v->hidden, v->hidden_width,
                                   v->hidden_on_device})
                        .ok());
        for (uint32_t j = 0; j < m; ++j) history.push_back(truth[g++]);
        history.push_back(truth[g++]);
        EXPECT_TRUE((*head)->accept(history, k, m).ok());
    }
    t.kv->free_sequence(seq);
    EXPECT_GE(compared, 15) << what << ": too many near ties to compare the drafts";
    return made;
}

class Eagle3EndToEnd : public test::DeviceTest {};

TEST_F(Eagle3EndToEnd, drafts_equal_the_reference_in_both_layouts) {
    const std::string dir = test::make_temp_dir("eagle3-rounds");
    E2eTarget q = load_e2e_target(Target::qwen3, dir);
    ASSERT_TRUE(q.model && q.kv);
    const std::vector<Tokens> gguf = check_rounds_against_reference(q, test::eagle3::write_head(q.path, false, dir),
                                                                    "qwen3, gguf head");
    const std::vector<Tokens> hf = check_rounds_against_reference(q, test::eagle3::write_head(q.path, true, dir),
                                                                  "qwen3, hf head");
    EXPECT_EQ(gguf.size(), 7u);
    EXPECT_EQ(gguf, hf) << "the GGUF and HF forms of one head draft differently";
    // llama3 rope scaling: rope_freqs.weight in the GGUF, divisors built in the graph for HF
    E2eTarget l = load_e2e_target(Target::llama, test::make_temp_dir("eagle3-rounds-llama"));
    ASSERT_TRUE(l.model && l.kv);
    const std::vector<Tokens> lg = check_rounds_against_reference(l, test::eagle3::write_head(l.path, false, dir, 3, true),
                                                                  "llama, scaled gguf head");
    const std::vector<Tokens> lh = check_rounds_against_reference(l, test::eagle3::write_head(l.path, true, dir, 3, true),
                                                                  "llama, scaled hf head");
    EXPECT_EQ(lg.size(), 7u);
    EXPECT_EQ(lg, lh) << "the GGUF and HF forms of one scaled head draft differently";
}

// A host without tdm.weight_transforms loads d2t as stored and the head's step builds the table
// of target ids itself (the offset form's iota included): the same drafts, in both layouts, as
// the table the host built at load.
TEST_F(Eagle3EndToEnd, on_a_host_without_load_transforms_the_step_builds_d2t_and_drafts_the_same) {
    const std::string dir = test::make_temp_dir("eagle3-old-host");
    E2eTarget q = load_e2e_target(Target::qwen3, dir);
    ASSERT_TRUE(q.model && q.kv);
    const std::string gguf = test::eagle3::write_head(q.path, false, dir), hf = test::eagle3::write_head(q.path, true, dir);
    const std::vector<Tokens> loaded = check_rounds_against_reference(q, hf, "qwen3, hf head, d2t transformed at load");
    const test::ScopedEnv hide("TANDEM_HIDE_EXTENSIONS", TDM_EXT_WEIGHT_TRANSFORMS);
    const std::vector<Tokens> hf_step = check_rounds_against_reference(q, hf, "qwen3, hf head, d2t built by its step");
    const std::vector<Tokens> gguf_step =
        check_rounds_against_reference(q, gguf, "qwen3, gguf head, d2t built by its step");
    EXPECT_EQ(loaded.size(), 7u);
    EXPECT_EQ(hf_step, loaded);
    EXPECT_EQ(gguf_step, loaded);
}

TEST_F(Eagle3EndToEnd, greedy_speculative_output_equals_plain_greedy) {
    for (auto [which, hf] : {std::pair{Target::qwen3, false}, std::pair{Target::llama, true}}) {
        const std::string dir = test::make_temp_dir("eagle3-spec");
        E2eTarget t = load_e2e_target(which, dir);
        ASSERT_TRUE(t.model && t.kv);
        auto head = make_eagle3_head(t, test::eagle3::write_head(t.path, hf, dir));
        ASSERT_TRUE(head.ok()) << head.error().message();
        Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
        runner.set_hidden_point((*head)->hidden_point());
        uint64_t drafted = 0;
        for (int i = 0; i < 5; ++i) {  // 5 prompts per target: an exactness check of the mechanism
            const Tokens prompt = e2e_prompt(100 + uint64_t(i), size_t(3 + 5 * i));
            int seq = *t.kv->add_sequence();
            auto plain = generate(runner, nullptr, seq, prompt, greedy_params(16), {});
            t.kv->free_sequence(seq);
            ASSERT_TRUE(plain.ok()) << plain.error().message();
            Drafter* chain[] = {head->get()};
            SpecParams sp;
            sp.draft_max = 1 + i % 4;
            seq = *t.kv->add_sequence();
            auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_params(16), chain, sp, {});
            t.kv->free_sequence(seq);
            ASSERT_TRUE(spec.ok()) << spec.error().message();
            EXPECT_EQ(spec->gen.tokens, plain->tokens) << (hf ? "hf" : "gguf") << " head, prompt " << i;
            drafted += spec->stats.drafted;
        }
        EXPECT_GT(drafted, 0u) << "the head never drafted";
    }
}

// With --draft-tree the head is asked for trees, but a head with a reduced draft vocabulary
// (d2t, as the synthesizer writes) picks its own tokens: it has no logits to rank children by
// and drafts chains, and output stays exact. 3 prompts: a check of the fallback.
TEST_F(Eagle3EndToEnd, a_head_with_a_draft_vocabulary_drafts_chains_when_trees_are_asked_for) {
    const std::string dir = test::make_temp_dir("eagle3-tree");
    E2eTarget t = load_e2e_target(Target::qwen3, dir);
    ASSERT_TRUE(t.model && t.kv);
    auto head = make_eagle3_head(t, test::eagle3::write_head(t.path, false, dir));
    ASSERT_TRUE(head.ok()) << head.error().message();
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    runner.set_hidden_point((*head)->hidden_point());
    SpecParams sp;
    sp.draft_max = 5;
    sp.tree = {3, 2, 6};
    uint64_t tree_rounds = 0, rounds = 0, branched = 0;
    for (int i = 0; i < 3; ++i) {
        const Tokens prompt = e2e_prompt(700 + uint64_t(i), size_t(3 + 5 * i));
        int seq = *t.kv->add_sequence();
        auto plain = generate(runner, nullptr, seq, prompt, greedy_params(16), {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        test::TreeDrafterCheck check((*head)->another(), (*head)->another(), (*head)->another());
        Drafter* chain[] = {&check};
        seq = *t.kv->add_sequence();
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_params(16), chain, sp, {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        tree_rounds += spec->stats.tree_rounds;
        rounds += check.rounds();
        branched += check.branched();
    }
    EXPECT_GT(rounds, 5u);
    EXPECT_EQ(branched, 0u);
    EXPECT_EQ(tree_rounds, 0u);
    EXPECT_FALSE((*head)->grows_trees());
}

}  // namespace
}  // namespace tdm
