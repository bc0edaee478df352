// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/qwen35_mtp_drafter_test.cpp: the Qwen3.5 MTP head as a drafter (draft
// head qwen35-mtp through DraftHeadDrafter) on synthetic qwen35 / qwen35moe
// models with the head.
//
// (1) Exactness: MTP speculative greedy output equals plain greedy output on 50
//     prompts. Random heads rarely agree with random trunks, so the head's
//     proposals are also run through ForcedDrafter (the head does all its work;
//     its tokens are replaced so each round accepts a random number of drafts):
//     every accepted count and its KV/state rollback is exercised.
// (2) The head's drafts equal the plain-C++ reference head's (prefilled over
//     the prompt pairs, and again after rounds of every accepted count, from a
//     fresh reference prefill of the whole history).
// (3) The repeating model's head drafts what the trunk emits: every draft accepted.
// (4) A file without the head, and an MTP-only side file (--mtp-head).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "engine/generate.h"
#include "formats/gguf.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "speculative/draft_head.h"
#include "speculative/forced_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"
#include "support/qwen35_reference.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

struct TargetQwen35Mtp {
    std::string path;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

TargetQwen35Mtp load_target(const std::string& path, uint32_t draft_max) {
    TargetQwen35Mtp t;
    t.path = path;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_checkpoints = draft_max + 2;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "test", t.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

std::string synth(const char* preset, DType type, bool repeating = false, bool mtp = true) {
    auto shape = synth::qwen35_preset(preset);
    EXPECT_TRUE(shape.ok());
    synth::Qwen35SynthOptions o;
    o.weight_type = type;
    o.seed = 9;
    o.repeating = repeating;
    o.mtp = mtp;
    const std::string path = test::make_temp_dir("mtp") + "/m.gguf";
    const Status st = synth::synth_qwen35_gguf(path, *shape, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

Result<std::unique_ptr<DraftHeadDrafter>> make_mtp(const TargetQwen35Mtp& t, std::shared_ptr<const ModelSource> src = nullptr,
                                                   std::map<std::string, std::string> options = {},
                                                   bool rows_on_device = true,
                                                   const DraftVocabPolicy* auto_vocab = nullptr) {
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    if (!e) return Error("no draft head answers --spec-type mtp");
    DraftHeadOptions o;
    o.options = std::move(options);
    o.rows_on_device = rows_on_device;
    o.kv.n_ctx = 256;
    if (auto_vocab) {
        o.auto_vocab = true;
        o.vocab_policy = *auto_vocab;
    }
    return DraftHeadDrafter::create(*e, "mtp", src ? src : t.model->shared_source(), *t.model, *t.kv,
                                    test::test_device(), test::test_pipelines(), o);
}

std::vector<int32_t> random_prompt_qwen35_mtp(uint64_t seed, size_t len, int32_t hi) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(len);
    for (auto& t : p) t = int32_t(rng() % uint64_t(hi));
    return p;
}

GenerateParams greedy_qwen35_mtp(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

// Passes a drafter's proposals through, failing the round when one is at or above the
// bound of its request (limit(req); 0: any id).
struct BoundCheckedDrafter : Drafter {
    Drafter* inner = nullptr;
    std::function<uint32_t(const DraftRequest&)> limit;
    std::string n = "checked";
    uint64_t outside = 0;  // proposals that broke the bound
    const std::string& name() const override { return n; }
    Status begin(std::span<const int32_t> p) override { return inner->begin(p); }
    tdm_hidden_point hidden_point() const override { return inner->hidden_point(); }
    Status observe(const TargetRows& r) override { return inner->observe(r); }
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override {
        auto d = TDM_TRY(inner->draft(req));
        const uint32_t bound = limit(req);
        for (int32_t id : d)
            if (id < 0 || (bound && uint32_t(id) >= bound)) {
                ++outside;
                return Error::format("draft id {} outside the draft vocabulary of {}", id, bound);
            }
        return d;
    }
    Status accept(std::span<const int32_t> h, uint32_t nd, uint32_t na) override { return inner->accept(h, nd, na); }
};

class Qwen35Mtp : public test::DeviceTest {};

// ---------------------------------------------------------------- (1) exactness

TEST_F(Qwen35Mtp, mtp_speculative_greedy_output_equals_plain_greedy_output_on_50_prompts) {
    for (const char* preset : {"tiny", "tiny-moe"}) {
        const uint32_t k = 3;
        TargetQwen35Mtp t = load_target(synth(preset, DType::Q8_0), k);
        ASSERT_TRUE(t.kv);
        Runner runner(*t.model, *t.kv, device(), pipelines());
        const int seq = *t.kv->add_sequence();
        auto mtp = make_mtp(t);
        ASSERT_TRUE(mtp.ok()) << mtp.error().message();
        auto mtp_host = make_mtp(t, nullptr, {}, /*rows_on_device=*/false);  // rows from host copies only
        ASSERT_TRUE(mtp_host.ok()) << mtp_host.error().message();
        SpecParams sp;
        sp.draft_max = int(k);
        uint64_t accepted = 0, drafted = 0;
        const int n_prompts = std::string(preset) == "tiny" ? 50 : 10;
        for (int i = 0; i < n_prompts; ++i) {
            const auto prompt = random_prompt_qwen35_mtp(2000 + uint64_t(i), 3 + size_t(i % 11), 500);
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            auto plain = generate(runner, nullptr, seq, prompt, greedy_qwen35_mtp(32), {});
            ASSERT_TRUE(plain.ok()) << plain.error().message();
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            // odd prompts: the head's own tokens; even: forced to acceptance 0.6
            ForcedDrafter forced(plain->tokens, prompt.size(), 0.6, t.model->info().n_vocab, uint64_t(i), mtp->get());
            Drafter* chain[] = {i % 2 ? static_cast<Drafter*>(mtp->get()) : &forced};
            auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(32), chain, sp, {});
            ASSERT_TRUE(spec.ok()) << spec.error().message();
            ASSERT_EQ(spec->gen.tokens, plain->tokens) << preset << " prompt " << i;
            accepted += spec->stats.accepted;
            drafted += spec->stats.drafted;
            if (i % 2 == 0) continue;
            // the same drafts whether the rows are read on the device or from the host: the
            // same acceptance, round by round (the drafts decide it; exactness alone would not)
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            Drafter* host_chain[] = {mtp_host->get()};
            auto host = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(32), host_chain, sp, {});
            ASSERT_TRUE(host.ok()) << host.error().message();
            EXPECT_EQ(host->stats.rounds, spec->stats.rounds) << preset << " prompt " << i;
            EXPECT_EQ(host->stats.accepted, spec->stats.accepted) << preset << " prompt " << i;
            EXPECT_EQ(host->stats.accepted_at, spec->stats.accepted_at) << preset << " prompt " << i;
        }
        EXPECT_EQ((*mtp_host)->rows_read_on_device(), 0u);
        EXPECT_GT(accepted, 0u) << preset;
        EXPECT_LT(accepted, drafted) << preset;
        // rounds read the verify's rows where it left them (so do these short prompts')
        EXPECT_GT((*mtp)->rows_read_on_device(), 0u) << preset;
    }
}

// ---------------------------------------------------------------- (2) vs the reference head

// The head's drafts against the reference's, from the prompt and after rounds
// that accept 0..k drafts (oracle drafts: the trunk's own greedy tokens); the
// rounds' target rows read on the device where the verify left them, and from
// host copies.
class Qwen35MtpRows : public Qwen35Mtp, public ::testing::WithParamInterface<bool> {};

// The reference head's k drafts for `h`: a fresh reference prefill of everything committed
// (all of h but its last token), then k chained drafts from h.back().
std::vector<int32_t> reference_drafts_qwen35_mtp(const ref::Qwen35Reference& ref, std::span<const int32_t> h,
                                                 uint32_t E, uint32_t k) {
    const std::span<const int32_t> committed = h.first(h.size() - 1);
    const auto fw = ref.forward(committed);
    ref::Qwen35MtpCache cache;
    ref.mtp_prefill(committed, fw.hidden, cache);
    const size_t n = committed.size();
    const std::span<const float> last(fw.hidden.data() + (n - 1) * E, E);
    return ref.mtp_draft(h.back(), last, int32_t(n), int(k), cache);
}

TEST_P(Qwen35MtpRows, drafts_equal_the_reference_heads_after_every_accepted_count) {
    const bool on_device = GetParam();
    const uint32_t k = 3;
    const std::string path = synth("tiny", DType::F32);
    TargetQwen35Mtp t = load_target(path, k);
    ASSERT_TRUE(t.kv);
    auto ref = ref::Qwen35Reference::open(path, {true, true, std::nullopt});
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    runner.set_hidden_point(TDM_HIDDEN_POST_NORM);
    const int seq = *t.kv->add_sequence();
    auto mtp = make_mtp(t);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    const uint32_t E = t.model->info().n_embd;

    const std::vector<int32_t> prompt = {5, 88, 201, 13, 400, 7, 66};
    std::vector<int32_t> truth = ref->generate(prompt, 40);  // the trunk's greedy continuation
    std::vector<int32_t> history = prompt;
    // prefill with hidden rows for the head
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE((*mtp)->begin(prompt).ok());
    ASSERT_TRUE((*mtp)->observe({prompt, 0, out->hidden, E}).ok());
    size_t g = 0;  // tokens of `truth` emitted
    history.push_back(truth[g++]);

    for (uint32_t m : {2u, 0u, 3u, 1u, 3u, 0u}) {
        const uint32_t p = uint32_t(history.size() - 1);
        DraftRequest req{history, p, k};
        auto drafts = (*mtp)->draft(req);
        ASSERT_TRUE(drafts.ok()) << drafts.error().message();
        EXPECT_EQ(*drafts, reference_drafts_qwen35_mtp(*ref, history, E, k)) << "before a round accepting " << m << " at position " << p;
        // verify [last, oracle drafts with the (m+1)-th wrong], accept m
        std::vector<int32_t> vt = {history.back()}, vp = {int32_t(p)}, vr = {0};
        for (uint32_t j = 0; j < k; ++j) {
            vt.push_back(j == m ? (truth[g + j] + 1) % 500 : truth[g + j]);
            vp.push_back(int32_t(p + 1 + j));
            vr.push_back(int32_t(j + 1));
        }
        auto v = runner.forward({vt, vp, seq, vr});
        ASSERT_TRUE(v.ok()) << v.error().message();
        for (uint32_t j = 0; j < m; ++j) ASSERT_EQ(v->argmax[j], truth[g + j]) << "oracle draft rejected";
        ASSERT_TRUE(t.kv->truncate(seq, p + 1 + m).ok());
        ASSERT_EQ(v->hidden_on_device != nullptr, true) << "a verify-sized pass keeps its rows on the device";
        std::vector<float> hid(v->hidden, v->hidden + size_t(m + 1) * E);
        ASSERT_TRUE((*mtp)
                        ->observe({std::span<const int32_t>(vt.data(), m + 1), p, hid.data(), E,
                                   on_device ? v->hidden_on_device : nullptr})
                        .ok());
        for (uint32_t j = 0; j < m; ++j) history.push_back(truth[g++]);
        history.push_back(truth[g++]);  // the target's own next token
        ASSERT_TRUE((*mtp)->accept(history, k, m).ok());
    }
    // the prompt's 7 rows come from the host; each later draft reads the m + 1
    // rows of the round before it (m = 2, 0, 3, 1, 3)
    EXPECT_EQ((*mtp)->rows_read_on_device(), on_device ? 14u : 0u);
    EXPECT_EQ((*mtp)->rows_read_from_host(), on_device ? 7u : 21u);
}

// A prompt longer than a catch-up chunk (64 rows): the head catches up over it in chunks
// whose one logit row is dropped (they ask for a draft vocabulary of one id), then drafts
// what the reference head drafts after a prefill of the whole prompt.
TEST_F(Qwen35Mtp, drafts_after_a_prompt_caught_up_in_chunks_equal_the_reference_heads) {
    const uint32_t k = 3;
    const std::string path = synth("tiny", DType::F32);
    TargetQwen35Mtp t = load_target(path, k);
    ASSERT_TRUE(t.kv);
    auto ref = ref::Qwen35Reference::open(path, {true, true, std::nullopt});
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    runner.set_hidden_point(TDM_HIDDEN_POST_NORM);
    const int seq = *t.kv->add_sequence();
    auto mtp = make_mtp(t);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    const uint32_t E = t.model->info().n_embd;
    const std::vector<int32_t> prompt = random_prompt_qwen35_mtp(21, 150, 500);
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE((*mtp)->begin(prompt).ok());
    ASSERT_TRUE((*mtp)->observe({prompt, 0, out->hidden, E}).ok());
    std::vector<int32_t> history = prompt;
    history.push_back(ref->generate(prompt, 1)[0]);
    auto drafts = (*mtp)->draft(DraftRequest{history, uint32_t(prompt.size()), k});
    ASSERT_TRUE(drafts.ok()) << drafts.error().message();
    EXPECT_EQ(*drafts, reference_drafts_qwen35_mtp(*ref, history, E, k));
}

TEST_F(Qwen35Mtp, a_prepared_draft_cancelled_then_asked_again_at_its_position_drafts_the_same) {
    // The engine cancels a prepared chain when the round wants another length or a tree; the
    // head must then draft at the same position instead of refusing (and being turned off).
    const uint32_t k = 3;
    const std::string path = synth("tiny", DType::F32);
    TargetQwen35Mtp t = load_target(path, k);
    ASSERT_TRUE(t.kv);
    auto ref = ref::Qwen35Reference::open(path, {true, true, std::nullopt});
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    runner.set_hidden_point(TDM_HIDDEN_POST_NORM);
    const int seq = *t.kv->add_sequence();
    auto mtp = make_mtp(t);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    const uint32_t E = t.model->info().n_embd;
    const std::vector<int32_t> prompt = random_prompt_qwen35_mtp(23, 12, 500);
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE((*mtp)->begin(prompt).ok());
    ASSERT_TRUE((*mtp)->observe({prompt, 0, out->hidden, E}).ok());
    std::vector<int32_t> history = prompt;
    history.push_back(ref->generate(prompt, 1)[0]);
    const DraftRequest req{history, uint32_t(prompt.size()), k};
    ASSERT_TRUE((*mtp)->prepare(req).ok());
    (*mtp)->cancel();
    auto drafts = (*mtp)->draft(req);
    ASSERT_TRUE(drafts.ok()) << drafts.error().message();
    EXPECT_EQ(*drafts, reference_drafts_qwen35_mtp(*ref, history, E, k));
}

INSTANTIATE_TEST_SUITE_P(Rows, Qwen35MtpRows, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "on_device" : "from_host"; });

// ---------------------------------------------------------------- (3) agreement

TEST_F(Qwen35Mtp, repeating_models_head_drafts_what_the_trunk_emits) {
    const uint32_t k = 4;
    TargetQwen35Mtp t = load_target(synth("tiny", DType::Q8_0, /*repeating=*/true), k);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    auto mtp = make_mtp(t);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Drafter* chain[] = {mtp->get()};
    SpecParams sp;
    sp.draft_max = int(k);
    const auto prompt = random_prompt_qwen35_mtp(7, 9, 500);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_qwen35_mtp(41), {});
    ASSERT_TRUE(plain.ok());
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(41), chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_EQ(spec->stats.accepted, spec->stats.drafted);
    EXPECT_EQ(spec->stats.rounds, 8u);  // 41 tokens = 8 rounds of 4 drafts + 1 bonus, the first from prefill
}

// The default of every front end: the goodput controller chooses k each round. On the
// random head (acceptance near 0: it stops drafting and probes) and on the repeating
// model's head (everything accepted: it drafts long), greedy output is plain output.
TEST_F(Qwen35Mtp, with_the_goodput_controller_greedy_output_equals_plain_greedy_output_on_50_prompts) {
    const uint32_t k = 6;
    for (const bool repeating : {false, true}) {
        TargetQwen35Mtp t = load_target(synth("tiny", DType::Q8_0, repeating), k);
        ASSERT_TRUE(t.kv);
        Runner runner(*t.model, *t.kv, device(), pipelines());
        const int seq = *t.kv->add_sequence();
        auto mtp = make_mtp(t);
        ASSERT_TRUE(mtp.ok()) << mtp.error().message();
        Drafter* chain[] = {mtp->get()};
        SpecParams sp;
        sp.draft_max = int(k);
        sp.auto_k = true;
        uint64_t drafted = 0, accepted = 0;
        const int n_prompts = repeating ? 10 : 50;
        for (int i = 0; i < n_prompts; ++i) {
            const auto prompt = random_prompt_qwen35_mtp(5000 + uint64_t(i), 3 + size_t(i % 11), 500);
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            auto plain = generate(runner, nullptr, seq, prompt, greedy_qwen35_mtp(40), {});
            ASSERT_TRUE(plain.ok()) << plain.error().message();
            ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
            auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(40), chain, sp, {});
            ASSERT_TRUE(spec.ok()) << spec.error().message();
            ASSERT_EQ(spec->gen.tokens, plain->tokens) << (repeating ? "repeating" : "random") << " prompt " << i;
            drafted += spec->stats.drafted;
            accepted += spec->stats.accepted;
        }
        EXPECT_GT(drafted, 0u);
        if (repeating) {
            EXPECT_EQ(accepted, drafted);
        }
    }
}

// While the controller has drafting off, a step costs what a plain step does: the head runs no
// graph (it catches up on the rows it was shown when drafting comes back, in the probe's own
// draft graph), and the target's decode graph is the plain one plus one copy (its hidden row
// into the device table the head reads). The head's drafts are all made wrong (ForcedDrafter
// at acceptance 0: the head still does all its work), so most steps are plain whatever the
// timings; every head graph is a verified round's. One prompt: a count, not a distribution.
TEST_F(Qwen35Mtp, with_drafting_off_a_step_runs_no_head_graph_and_the_plain_steps_graph_plus_one_copy) {
    const uint32_t k = 6;
    TargetQwen35Mtp t = load_target(synth("tiny", DType::Q8_0), k);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const auto plain_step = runner.graph_counts(1, 1);  // no drafter: no hidden output
    ASSERT_TRUE(plain_step.ok()) << plain_step.error().message();
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_qwen35_mtp(7000, 9, 500);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_qwen35_mtp(60), {});
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto mtp = make_mtp(t);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    ForcedDrafter never(plain->tokens, prompt.size(), 0.0, t.model->info().n_vocab, 1, mtp->get());
    Drafter* chain[] = {&never};
    SpecParams sp;
    sp.draft_max = int(k);
    sp.auto_k = true;
    const auto head_graphs = [&] {
        uint64_t n = 0;
        for (const auto& [width, rounds] : (*mtp)->rounds_by_vocab()) n += rounds;
        return n;
    };
    const uint64_t before = head_graphs();
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(60), chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_EQ(spec->stats.accepted, 0u);
    EXPECT_GT(spec->stats.plain_steps, 40u) << "the controller kept drafting";
    EXPECT_EQ(head_graphs() - before, spec->stats.rounds) << "a head graph ran on a plain step";
    runner.set_hidden_point((*mtp)->hidden_point());  // as the engine sets it for the head
    const auto step = runner.graph_counts(1, 1);
    ASSERT_TRUE(step.ok()) << step.error().message();
    EXPECT_EQ(step->dispatches, plain_step->dispatches + 1);
    EXPECT_EQ(step->barriers, plain_step->barriers);
}

// ---------------------------------------------------------------- (4) files

TEST_F(Qwen35Mtp, a_file_without_the_head_is_refused_with_a_message_saying_how_to_get_one) {
    TargetQwen35Mtp t = load_target(synth("tiny", DType::Q8_0, false, /*mtp=*/false), 3);
    ASSERT_TRUE(t.kv);
    auto mtp = make_mtp(t);
    ASSERT_FALSE(mtp.ok());
    const std::string& msg = mtp.error().message();
    EXPECT_NE(msg.find("no NextN/MTP layers"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--mtp-head"), std::string::npos) << msg;
}

// An MTP-only GGUF (the head's block and the metadata, no trunk tensors)
// loaded beside the target behaves as the head in the target's own file.
TEST_F(Qwen35Mtp, an_mtp_only_side_file_drafts_like_the_head_in_the_full_file) {
    const uint32_t k = 3;
    const std::string full = synth("tiny", DType::Q8_0, /*repeating=*/true);
    const std::string side = test::make_temp_dir("mtpside") + "/mtp.gguf";
    {
        auto f = GgufFile::open(full);
        ASSERT_TRUE(f.ok());
        GgufWriter w;
        for (const GgufKV& kv : (*f)->kvs()) w.add_value(kv.key, kv.value);
        const int64_t block = *(*f)->get_int("qwen35.block_count") - 1;
        const std::string prefix = "blk." + std::to_string(block) + ".";
        int n = 0;
        for (const GgufTensorInfo& ti : (*f)->tensors()) {
            if (ti.name.rfind(prefix, 0) != 0) continue;
            ASSERT_TRUE(w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims),
                                     (*f)->tensor_data(ti), ti.nbytes)
                            .ok());
            ++n;
        }
        ASSERT_GT(n, 10);
        ASSERT_TRUE(w.write_file(side).ok());
    }
    TargetQwen35Mtp t = load_target(full, k);
    ASSERT_TRUE(t.kv);
    auto src = ModelSource::open(side);
    ASSERT_TRUE(src.ok()) << src.error().message();
    auto mtp = make_mtp(t, std::shared_ptr<const ModelSource>(std::move(*src)));
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    Drafter* chain[] = {mtp->get()};
    SpecParams sp;
    sp.draft_max = int(k);
    const auto prompt = random_prompt_qwen35_mtp(3, 8, 500);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_qwen35_mtp(24), {});
    ASSERT_TRUE(plain.ok());
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(24), chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_GT(spec->stats.drafted, 0u);
    EXPECT_EQ(spec->stats.accepted, spec->stats.drafted);
}

// A reduced draft vocabulary: logits over the first ids only (a prefix view of
// the LM head). Drafts stay below it and the output stays exact.
TEST_F(Qwen35Mtp, reduced_draft_vocabulary_drafts_only_its_ids_and_stays_exact) {
    const uint32_t k = 3, n_draft_vocab = 200;
    TargetQwen35Mtp t = load_target(synth("tiny", DType::Q8_0, /*repeating=*/true), k);
    ASSERT_TRUE(t.kv);
    auto mtp = make_mtp(t, nullptr, {{"draft_vocab", std::to_string(n_draft_vocab)}});
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    BoundCheckedDrafter checked;
    checked.inner = mtp->get();
    checked.limit = [&](const DraftRequest&) { return n_draft_vocab; };
    Drafter* chain[] = {&checked};
    SpecParams sp;
    sp.draft_max = int(k);
    // the repeating model continues a prompt with ids near its last token: ids
    // below the cut are drafted (and accepted), ids above it cannot be
    uint64_t accepted = 0, drafted = 0;
    for (int32_t last : {7, 400}) {
        std::vector<int32_t> prompt = random_prompt_qwen35_mtp(uint64_t(last), 11, 500);
        prompt.push_back(last);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy_qwen35_mtp(30), {});
        ASSERT_TRUE(plain.ok());
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(30), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << "last prompt token " << last;
        accepted += spec->stats.accepted;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(accepted, 0u);
    EXPECT_LT(accepted, drafted);
    auto bad = make_mtp(t, nullptr, {{"draft_vocab", "-3"}});
    EXPECT_FALSE(bad.ok());
}

// The automatic draft vocabulary (speculative/draft_vocab.h): each round drafts over the
// smallest prefix of the ladder outside which at most 5% of the sequence's recent ids lie.
// A text of low ids gets a prefix, and its drafts stay below it; a text spread over the
// vocabulary gets all of it. Output stays exact either way.
TEST_F(Qwen35Mtp, automatic_draft_vocabulary_follows_the_ids_of_the_text_and_stays_exact) {
    const uint32_t k = 3;
    TargetQwen35Mtp t = load_target(synth("tiny", DType::Q8_0, /*repeating=*/true), k);
    ASSERT_TRUE(t.kv);
    const uint32_t n_vocab = t.model->info().n_vocab;
    DraftVocabPolicy policy;
    policy.smallest = 32;  // the tiny model's vocabulary is small: a ladder of 32, 48, 64, ...
    policy.min_tokens = 16;
    ASSERT_LT(policy.smallest * 4, n_vocab);
    auto mtp = make_mtp(t, nullptr, {}, true, &policy);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    BoundCheckedDrafter checked;
    checked.inner = mtp->get();
    checked.limit = [&](const DraftRequest& req) { return choose_draft_vocab(req.history, n_vocab, policy); };
    Drafter* chain[] = {&checked};
    SpecParams sp;
    sp.draft_max = int(k);
    // low ids: 40 tokens below 24, then 400 (one miss in 41: a prefix of 32 serves). The
    // repeating model continues near its last token, so the full head would draft ids
    // near 400: the first rounds' drafts show that the head honoured the prefix.
    // spread: 40 tokens over the whole vocabulary
    std::vector<int32_t> low = random_prompt_qwen35_mtp(5, 40, 24);
    low.push_back(400);
    const std::vector<int32_t> spread = random_prompt_qwen35_mtp(6, 40, int32_t(n_vocab));
    std::map<uint32_t, uint64_t> before;
    for (const std::vector<int32_t>* prompt : {static_cast<const std::vector<int32_t>*>(&low), &spread}) {
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, *prompt, greedy_qwen35_mtp(24), {});
        ASSERT_TRUE(plain.ok());
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, *prompt, greedy_qwen35_mtp(24), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens);
        EXPECT_EQ(checked.outside, 0u) << "a draft outside the prefix of its round";
        std::map<uint32_t, uint64_t> rounds = (*mtp)->rounds_by_vocab();
        for (auto& [vocab, n] : before) rounds[vocab] -= n;
        before = (*mtp)->rounds_by_vocab();
        uint64_t reduced = 0, all = rounds[0];
        for (auto& [vocab, n] : rounds)
            if (vocab) reduced += n;
        EXPECT_TRUE((*mtp)->asks_vocab()) << "the head honours the request";
        if (prompt == &low) {
            EXPECT_GT(reduced, 0u) << "a text of low ids drafts over a prefix";
            EXPECT_GT(spec->stats.accepted, 0u);
        } else {
            EXPECT_EQ(reduced, 0u) << "ids spread over the vocabulary need all of it";
            EXPECT_GT(all, 0u);
        }
    }
}

TEST_F(Qwen35Mtp, pre_norm_hidden_switch_is_validated_and_stays_exact) {
    TargetQwen35Mtp t = load_target(synth("tiny", DType::Q8_0), 3);
    ASSERT_TRUE(t.kv);
    auto bad = make_mtp(t, nullptr, {{"mtp_hidden", "middle"}});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("pre-norm"), std::string::npos) << bad.error().message();
    auto mtp = make_mtp(t, nullptr, {{"mtp_hidden", "pre-norm"}});
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    EXPECT_EQ((*mtp)->hidden_point(), TDM_HIDDEN_PRE_NORM);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    const auto prompt = random_prompt_qwen35_mtp(11, 10, 500);
    auto plain = generate(runner, nullptr, seq, prompt, greedy_qwen35_mtp(20), {});
    ASSERT_TRUE(plain.ok());
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    ForcedDrafter forced(plain->tokens, prompt.size(), 0.7, t.model->info().n_vocab, 1, mtp->get());
    Drafter* chain[] = {&forced};
    SpecParams sp;
    sp.draft_max = 3;
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy_qwen35_mtp(20), chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
}

}  // namespace
}  // namespace tdm
