// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_assistant_harness.cpp: loading a target and its assistant, and the two
// end-to-end checks (see gemma4_assistant_harness.h).
#include "gemma4_assistant_harness.h"

#include <gtest/gtest.h>

#include "engine/generate.h"
#include "gemma4_tiny_runtime.h"
#include "support/device_fixture.h"
#include "support/gemma4_assistant_reference.h"
#include "support/gemma4_reference.h"

namespace tdm::test::g4 {

using Tokens = std::vector<int32_t>;

AssistantPair load_assistant_pair(const std::string& target_path, const std::string& assistant_path) {
    AssistantPair p;
    p.target_path = target_path;
    p.assistant_path = assistant_path;
    auto m = Model::load(p.target_path, test::build_tree_plugins(), test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return p;
    p.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.rows_max = kRowsMax;
    auto kv = KvPool::create(test_device(), p.model->attention_layers(), kc, "test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) p.kv = std::move(kv).value();
    EXPECT_TRUE(!p.kv || p.kv->has_rings());
    return p;
}

Result<std::unique_ptr<DraftHeadDrafter>> make_assistant(const AssistantPair& p) {
    auto src = TDM_TRY(ModelSource::open(p.assistant_path));
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head_source(src->architecture(), p.model->arch().desc->name);
    if (!e) return Error::format("no draft head takes files of architecture {}", src->architecture());
    DraftHeadOptions o;
    return DraftHeadDrafter::create(*e, "assistant", std::shared_ptr<const ModelSource>(std::move(src)), *p.model,
                                    *p.kv, test_device(), test_pipelines(), o);
}

void check_drafts_match_reference(AssistantPair& pair, const std::string& what) {
    const uint32_t k = 3;
    ASSERT_TRUE(pair.kv);
    auto tref = ref::Gemma4Reference::open(pair.target_path, {true});
    ASSERT_TRUE(tref.ok()) << tref.error().message();
    auto aref = ref::Gemma4AssistantReference::open(pair.assistant_path, *tref);
    ASSERT_TRUE(aref.ok()) << aref.error().message();
    Runner runner(*pair.model, *pair.kv, test_device(), test_pipelines());
    runner.set_hidden_point(TDM_HIDDEN_POST_NORM);
    const int seq = *pair.kv->add_sequence();
    auto asst = make_assistant(pair);
    ASSERT_TRUE(asst.ok()) << asst.error().message();
    EXPECT_TRUE((*asst)->stateless());
    const uint32_t E = pair.model->info().n_embd;
    const int32_t V = int32_t(pair.model->info().n_vocab);

    const Tokens prompt = random_tokens(7, 11);  // longer than the window (8)
    const Tokens truth = tref->generate(prompt, 40);
    Tokens history = prompt;
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE((*asst)->begin(prompt).ok());
    ASSERT_TRUE((*asst)->observe({prompt, 0, out->hidden, E, out->hidden_on_device}).ok());
    size_t g = 0;
    history.push_back(truth[g++]);

    // the reference: the target's cache and hidden rows over everything committed (< p), then
    // one assistant round from the hidden of p - 1 and the token at p
    auto reference_drafts = [&](const Tokens& h) {
        const std::span<const int32_t> committed(h.data(), h.size() - 1);
        ref::Gemma4Cache cache;
        const ref::Gemma4Output fw = tref->run(committed, &cache);
        const int64_t p = int64_t(committed.size());
        const std::span<const float> h_prev(fw.hidden.data() + size_t(p - 1) * E, E);
        return aref->draft(*tref, cache, h_prev, h.back(), p, int(k));
    };

    // the target rows of odd rounds are read where the verify left them on the device,
    // those of even rounds from host copies
    int round = 0;
    for (uint32_t m : {2u, 0u, 3u, 1u, 3u, 0u, 2u}) {
        const bool on_device = round++ % 2 == 1;
        const uint32_t p = uint32_t(history.size() - 1);
        DraftRequest req{history, p, k, seq};
        auto drafts = (*asst)->draft(req);
        ASSERT_TRUE(drafts.ok()) << drafts.error().message();
        EXPECT_EQ(*drafts, reference_drafts(history)) << what << ": round at position " << p;
        // verify [last, oracle drafts with the (m+1)-th wrong], accept m
        std::vector<int32_t> vt = {history.back()}, vp = {int32_t(p)}, vr = {0};
        for (uint32_t j = 0; j < k; ++j) {
            vt.push_back(j == m ? (truth[g + j] + 1) % V : truth[g + j]);
            vp.push_back(int32_t(p + 1 + j));
            vr.push_back(int32_t(j + 1));
        }
        auto v = runner.forward({vt, vp, seq, vr});
        ASSERT_TRUE(v.ok()) << v.error().message();
        for (uint32_t j = 0; j < m; ++j) ASSERT_EQ(v->argmax[j], truth[g + j]) << what << ": oracle draft rejected";
        ASSERT_TRUE(pair.kv->truncate(seq, p + 1 + m).ok());
        std::vector<float> hid(v->hidden, v->hidden + size_t(m + 1) * E);
        ASSERT_TRUE((*asst)
                        ->observe({std::span<const int32_t>(vt.data(), m + 1), p, hid.data(), E,
                                   on_device ? v->hidden_on_device : nullptr})
                        .ok());
        for (uint32_t j = 0; j < m; ++j) history.push_back(truth[g++]);
        history.push_back(truth[g++]);
        ASSERT_TRUE((*asst)->accept(history, k, m).ok());
    }
    // one row per draft: the prompt's and the odd rounds' on the device (drafts 0, 2, 4, 6)
    EXPECT_EQ((*asst)->rows_read_on_device(), 4u) << what;
    EXPECT_EQ((*asst)->rows_read_from_host(), 3u) << what;
}

void check_speculative_equals_plain(AssistantPair& pair, const std::string& what, int n_prompts) {
    ASSERT_TRUE(pair.kv);
    Runner runner(*pair.model, *pair.kv, test_device(), test_pipelines());
    auto asst = make_assistant(pair);
    ASSERT_TRUE(asst.ok()) << asst.error().message();
    runner.set_hidden_point((*asst)->hidden_point());
    uint64_t drafted = 0;
    for (int i = 0; i < std::min(n_prompts, 4); ++i) {
        const Tokens prompt = random_tokens(200 + uint64_t(i), size_t(3 + 9 * i));
        int seq = *pair.kv->add_sequence();
        auto plain = generate(runner, nullptr, seq, prompt, greedy(40), {});
        pair.kv->free_sequence(seq);
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        Drafter* chain[] = {asst->get()};
        SpecParams sp;
        sp.draft_max = 1 + i;
        seq = *pair.kv->add_sequence();
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(40), chain, sp, {});
        pair.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << what << " prompt " << i;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(drafted, 0u) << what << ": the assistant never drafted";
    EXPECT_GT((*asst)->rows_read_on_device(), 0u) << what << ": no round read the verify's rows on the device";
}

}  // namespace tdm::test::g4
