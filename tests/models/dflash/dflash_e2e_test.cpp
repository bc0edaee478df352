// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_e2e_test.cpp: the DFlash head through the dflash plugin and the
// host's block rounds (tandem/ext/block_draft.h) on tiny Qwen3 and Llama targets, heads written
// by the dflash synthesizer in z-lab's HF layout and llama.cpp's GGUF layout:
//   - its drafts, after rounds that accepted 0..3 drafts (its KV rolled back to the committed
//     context, the block's entries dropped), equal the independent reference's
//     (dflash_reference.h), which computes every block from scratch with a non-causal block;
//     also when the prompt is caught up in several graphs;
//   - the GGUF and HF copies of the same head draft the same tokens, and so does a GGUF that
//     carries the target's tables as its own;
//   - greedy speculative output with it equals plain greedy output;
//   - all of it at several draft counts (1, 3, b - 1, ...): the plugin takes outputs for the
//     drafted rows only (tdm.block_draft version 2), and a head on a host that answers with
//     version 1 (TANDEM_HIDE_EXTENSIONS=tdm.block_draft@1) gets every block row's and drafts
//     the same.
// The models are tiny and the prompts few (5): these check a mechanism, not a distribution,
// and the program stays within CI's time budget.
#include <gtest/gtest.h>

#include <random>

#include "dflash_fixture.h"
#include "dflash_reference.h"
#include "engine/generate.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using Tokens = std::vector<int32_t>;
using test::dflash::Target;

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

// Rounds by hand: each asks the head for some drafts (1, 3, b - 1, ...), checks them against the
// reference, then verifies oracle drafts whose (m+1)-th is wrong, so that m are accepted and the
// head's KV rolls back past the rest. Returns how many drafts were compared; every draft of every
// round goes to *drafted when given.
int check_rounds_against_reference(Target& t, const std::string& head_path, size_t prompt_len,
                                   Tokens* drafted = nullptr) {
    auto ref = test::DflashReference::open(head_path, t.path);
    EXPECT_TRUE(ref.ok()) << ref.error().message();
    auto head = test::dflash::make_head(t, head_path);
    EXPECT_TRUE(head.ok()) << head.error().message();
    if (!ref.ok() || !head.ok()) return 0;
    const uint32_t b = uint32_t(ref->hparams().block_size);
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    const int32_t V = int32_t(t.model->info().n_vocab);

    const Tokens prompt = e2e_prompt(5, prompt_len);
    int seq = *t.kv->add_sequence();
    auto plain = generate(runner, nullptr, seq, prompt, greedy_params(24), {});
    t.kv->free_sequence(seq);
    EXPECT_TRUE(plain.ok()) << plain.error().message();
    if (!plain.ok()) return 0;
    const Tokens& truth = plain->tokens;

    seq = *t.kv->add_sequence();
    runner.set_hidden_point((*head)->hidden_point());
    std::vector<std::vector<float>> taps;  // the target's taps of each committed position
    auto keep_taps = [&](const ForwardOutput& o, uint32_t n) {
        for (uint32_t i = 0; i < n; ++i) taps.emplace_back(o.hidden + size_t(i) * o.hidden_width,
                                                           o.hidden + size_t(i + 1) * o.hidden_width);
    };
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    EXPECT_TRUE(out.ok()) << out.error().message();
    if (!out.ok()) return 0;
    EXPECT_EQ(out->hidden_width, uint32_t(ref->hparams().target_layers.size() * ref->hparams().n_embd));
    keep_taps(*out, uint32_t(prompt.size()));
    EXPECT_TRUE((*head)->begin(prompt).ok());
    EXPECT_TRUE((*head)->observe({prompt, 0, out->hidden, out->hidden_width, out->hidden_on_device}).ok());
    Tokens history = prompt;
    size_t g = 0;
    history.push_back(truth[g++]);
    int compared = 0;
    constexpr uint32_t k = 3;  // oracle tokens verified per round
    // (accepted, drafts asked): the drafts asked are the rows the block step outputs
    const std::pair<uint32_t, uint32_t> rounds[] = {{2, b - 1}, {0, 1}, {3, 3}, {1, b - 1}, {3, 2}};
    for (const auto& [m, asked] : rounds) {
        const uint32_t p = uint32_t(history.size() - 1);
        auto drafts = (*head)->draft({history, p, asked, seq});
        EXPECT_TRUE(drafts.ok()) << drafts.error().message();
        if (!drafts.ok()) return compared;
        EXPECT_EQ(drafts->size(), size_t(asked));
        if (drafted) drafted->insert(drafted->end(), drafts->begin(), drafts->end());
        const test::DflashBlock want = ref->block(history[p], int32_t(p), taps);
        for (size_t i = 0; i < drafts->size() && i < want.tokens.size(); ++i) {
            if (want.margins[i] < 1e-3f) continue;  // a near tie: f32 may pick either
            EXPECT_EQ((*drafts)[i], want.tokens[i]) << "draft " << i << " of the block at " << p;
            ++compared;
        }
        std::vector<int32_t> vt = {history.back()}, vp = {int32_t(p)}, vr = {0};
        for (uint32_t j = 0; j < k; ++j) {
            vt.push_back(j == m ? (truth[g + j] + 1) % V : truth[g + j]);
            vp.push_back(int32_t(p + 1 + j));
            vr.push_back(int32_t(j + 1));
        }
        auto v = runner.forward({vt, vp, seq, vr});
        EXPECT_TRUE(v.ok()) << v.error().message();
        if (!v.ok()) return compared;
        EXPECT_TRUE(t.kv->truncate(seq, p + 1 + m).ok());
        keep_taps(*v, m + 1);
        EXPECT_TRUE((*head)
                        ->observe({std::span<const int32_t>(vt.data(), m + 1), p, v->hidden, v->hidden_width,
                                   v->hidden_on_device})
                        .ok());
        for (uint32_t j = 0; j < m; ++j) history.push_back(truth[g++]);
        history.push_back(truth[g++]);
        EXPECT_TRUE((*head)->accept(history, b - 1, m).ok());
    }
    t.kv->free_sequence(seq);
    return compared;
}

class DflashEndToEnd : public test::DeviceTest {};

TEST_F(DflashEndToEnd, drafts_equal_the_reference_over_rounds_with_rollback) {
    const std::string dir = test::make_temp_dir("dflash-rounds");
    Target t = test::dflash::load_target(dir);
    ASSERT_TRUE(t.model && t.kv);
    const std::string head = test::dflash::write_head(t.path, dir + "/head");
    Tokens from_hf, from_gguf;
    EXPECT_GE(check_rounds_against_reference(t, head, 11, &from_hf), 20) << "too many near ties to compare the drafts";
    // a prompt longer than one catch-up graph (64 rows): caught up in chunks, then the block
    EXPECT_GE(check_rounds_against_reference(t, head, 70), 20) << "too many near ties to compare the drafts";
    // the same head as llama.cpp's GGUF: the reference's drafts, and exactly the HF copy's
    EXPECT_GE(
        check_rounds_against_reference(t, test::dflash::write_gguf_head(t.path, dir + "/head.gguf"), 11, &from_gguf),
        20)
        << "the GGUF head against the reference";
    EXPECT_FALSE(from_hf.empty());
    EXPECT_EQ(from_gguf, from_hf) << "the GGUF and HF copies of one head drafted differently";
    // its own token_embd / output (here the target's values) replace the borrowed ones
    Tokens from_own;
    check_rounds_against_reference(
        t, test::dflash::with_target_tables(dir + "/head.gguf", t.path, dir + "/head-own.gguf"), 11, &from_own);
    EXPECT_EQ(from_own, from_hf) << "a GGUF head with its own tables";
}

// Greedy speculative output with the head at `head_path` equals plain greedy output on 5 prompts.
void check_greedy_equals_plain(Target& t, const std::string& head_path) {
    auto head = test::dflash::make_head(t, head_path);
    ASSERT_TRUE(head.ok()) << head.error().message();
    Runner runner(*t.model, *t.kv, test::test_device(), test::test_pipelines());
    runner.set_hidden_point((*head)->hidden_point());
    uint64_t drafted = 0;
    for (int i = 0; i < 5; ++i) {  // 5 prompts: an exactness check of the mechanism
        const Tokens prompt = e2e_prompt(100 + uint64_t(i), size_t(3 + 5 * i));
        int seq = *t.kv->add_sequence();
        auto plain = generate(runner, nullptr, seq, prompt, greedy_params(16), {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        Drafter* chain[] = {head->get()};
        SpecParams sp;
        const int draft_max[] = {1, 3, 7, 2, 10};  // k = 1, 3, b - 1 of the block of 8, and more
        sp.draft_max = draft_max[i];
        seq = *t.kv->add_sequence();
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_params(16), chain, sp, {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << head_path << ", prompt " << i;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(drafted, 0u) << head_path << ": the head never drafted";
}

TEST_F(DflashEndToEnd, greedy_speculative_output_equals_plain_greedy) {
    const std::string dir = test::make_temp_dir("dflash-spec");
    Target t = test::dflash::load_target(dir);
    ASSERT_TRUE(t.model && t.kv);
    check_greedy_equals_plain(t, test::dflash::write_head(t.path, dir + "/head"));
}

// A head on a host that answers tdm.block_draft version 1 (as a head built against version 1
// meets every host): its block steps output every block row, one graph per context length, and
// it still drafts as the reference and keeps greedy output.
TEST_F(DflashEndToEnd, on_a_version_1_host_the_head_outputs_every_block_row_and_drafts_the_same) {
    const std::string dir = test::make_temp_dir("dflash-v1");
    Target t = test::dflash::load_target(dir);
    ASSERT_TRUE(t.model && t.kv);
    const std::string head = test::dflash::write_head(t.path, dir + "/head");
    {
        auto h = test::dflash::make_head(t, head);
        ASSERT_TRUE(h.ok()) << h.error().message();
        EXPECT_TRUE((*h)->graph_per_draft_count()) << "the plugin takes version 2 where the host offers it";
    }
    const test::ScopedEnv v1("TANDEM_HIDE_EXTENSIONS", "tdm.block_draft@1");
    {
        auto h = test::dflash::make_head(t, head);
        ASSERT_TRUE(h.ok()) << h.error().message();
        EXPECT_FALSE((*h)->graph_per_draft_count()) << "a version 1 host: every block row is an output";
    }
    EXPECT_GE(check_rounds_against_reference(t, head, 11), 20) << "too many near ties to compare the drafts";
    check_greedy_equals_plain(t, head);
}

// The head on a Llama 3.x target, in both layouts: drafts over rounds as the reference's, and
// greedy speculative output as plain greedy output.
TEST_F(DflashEndToEnd, on_a_llama_target_both_layouts_draft_as_the_reference_and_keep_greedy_output) {
    const std::string dir = test::make_temp_dir("dflash-llama");
    Target t = test::dflash::load_target(dir, 256, test::dflash::TargetArch::llama);
    ASSERT_TRUE(t.model && t.kv);
    for (const std::string& head :
         {test::dflash::write_head(t.path, dir + "/head"), test::dflash::write_gguf_head(t.path, dir + "/head.gguf")}) {
        EXPECT_GE(check_rounds_against_reference(t, head, 11), 20) << head;
        check_greedy_equals_plain(t, head);
    }
}

}  // namespace
}  // namespace tdm
