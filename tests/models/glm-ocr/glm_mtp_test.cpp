// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_mtp_test.cpp: GLM-OCR's MTP layer as a drafter (draft head glm-mtp through
// DraftHeadDrafter) on synthetic GLM-OCR models.
//
// (1) Exactness: MTP speculative greedy output equals plain greedy output on 40 prompts, in
//     both layouts. A random head rarely agrees with a random trunk, so on even prompts its
//     proposals go through ForcedDrafter (the head does all its work; its tokens are replaced
//     so rounds accept random counts): every accepted count and its KV rollback is exercised.
// (2) The head's drafts equal the reference head's (tests/support/glm_reference.h), prefilled
//     over the prompt pairs and again after rounds of every accepted count; chained steps
//     are fed the block output before shared_head.norm, as the reference's are.
// (3) The repeating model's head drafts what the trunk emits: every draft accepted.
// (4) A file without the MTP layer is refused with a message saying how to get one; an
//     MTP-only side file drafts like the layer in the full file; options.
#include "glm_helpers.h"

#include "engine/generate.h"
#include "formats/gguf.h"
#include "speculative/forced_drafter.h"
#include "support/glm_reference.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

using testglm::greedy;
using testglm::make_mtp;
using testglm::random_prompt;

class GlmMtp : public test::DeviceTest, public ::testing::WithParamInterface<bool> {};

TEST_P(GlmMtp, mtp_speculative_greedy_output_equals_plain_greedy_output_on_40_prompts) {
    const bool hf = GetParam();
    const uint32_t k = 3;
    testglm::Target t = testglm::load_target(testglm::synth({hf ? DType::BF16 : DType::Q8_0, hf}));
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    auto mtp = make_mtp(t);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    SpecParams sp;
    sp.draft_max = int(k);
    uint64_t accepted = 0, drafted = 0;
    for (int i = 0; i < 40; ++i) {
        const auto prompt = random_prompt(3000 + uint64_t(i), 3 + size_t(i % 11), 500);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy(32), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        ForcedDrafter forced(plain->tokens, prompt.size(), 0.6, t.model->info().n_vocab, uint64_t(i), mtp->get());
        Drafter* chain[] = {i % 2 ? static_cast<Drafter*>(mtp->get()) : &forced};
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(32), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        ASSERT_EQ(spec->gen.tokens, plain->tokens) << (hf ? "hf" : "gguf") << " prompt " << i;
        accepted += spec->stats.accepted;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(accepted, 0u);
    EXPECT_LT(accepted, drafted);
}

INSTANTIATE_TEST_SUITE_P(Layouts, GlmMtp, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "hf" : "gguf"; });

// GGUF and HF heads, and a file whose MTP layer has no embedding/head copies of its own (the
// head then reads the trunk's; with copies, their values differ from the trunk's, so reading
// the wrong ones changes the drafts).
struct RefCase {
    const char* name;
    bool hf;
    bool copies;
};

class GlmMtpReference : public test::DeviceTest, public ::testing::WithParamInterface<RefCase> {};

TEST_P(GlmMtpReference, drafts_equal_the_reference_heads_after_every_accepted_count) {
    const RefCase c = GetParam();
    const uint32_t k = 3;
    testglm::ModelSpec spec{DType::F32, c.hf};
    spec.mtp_copies = c.copies;
    const std::string path = testglm::synth(spec);
    testglm::Target t = testglm::load_target(path);
    ASSERT_TRUE(t.kv);
    ref::GlmRefOptions ro;
    ro.f16_kv = true;
    auto ref = ref::GlmReference::open(path, ro);
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    ASSERT_TRUE(ref->has_mtp());
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    auto mtp = make_mtp(t);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    ASSERT_EQ((*mtp)->hidden_point(), TDM_HIDDEN_POST_NORM);  // the trunk's LM-head input (spec §3.2)
    runner.set_hidden_point((*mtp)->hidden_point());
    const uint32_t E = t.model->info().n_embd;

    const std::vector<int32_t> prompt = {5, 88, 201, 13, 400, 7, 66};
    const std::vector<int32_t> truth = ref->generate(prompt, 40);
    std::vector<int32_t> history = prompt;
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE((*mtp)->begin(prompt).ok());
    ASSERT_TRUE((*mtp)->observe({prompt, 0, out->hidden, E}).ok());
    size_t g = 0;
    history.push_back(truth[g++]);

    auto reference_drafts = [&](const std::vector<int32_t>& h) {
        const std::span<const int32_t> committed(h.data(), h.size() - 1);
        const auto fw = ref->forward(committed);
        ref::GlmMtpCache cache;
        ref->mtp_prefill(committed, fw.hidden, cache);
        const int64_t n = int64_t(committed.size());
        const std::span<const float> last(fw.hidden.data() + size_t(n - 1) * E, E);
        return ref->mtp_draft(h.back(), last, int32_t(n), int(k), cache);
    };

    for (uint32_t m : {2u, 0u, 3u, 1u, 3u, 0u}) {
        const uint32_t p = uint32_t(history.size() - 1);
        DraftRequest req{history, p, k};
        auto drafts = (*mtp)->draft(req);
        ASSERT_TRUE(drafts.ok()) << drafts.error().message();
        EXPECT_EQ(*drafts, reference_drafts(history)) << "before a round accepting " << m << " at position " << p;
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
        std::vector<float> hid(v->hidden, v->hidden + size_t(m + 1) * E);
        ASSERT_TRUE((*mtp)->observe({std::span<const int32_t>(vt.data(), m + 1), p, hid.data(), E, v->hidden_on_device}).ok());
        for (uint32_t j = 0; j < m; ++j) history.push_back(truth[g++]);
        history.push_back(truth[g++]);
        ASSERT_TRUE((*mtp)->accept(history, k, m).ok());
    }
}

INSTANTIATE_TEST_SUITE_P(Files, GlmMtpReference,
                         ::testing::Values(RefCase{"gguf", false, true}, RefCase{"hf", true, true},
                                           RefCase{"gguf_without_copies", false, false}),
                         [](const auto& p) { return std::string(p.param.name); });

TEST_F(GlmMtp, repeating_models_head_drafts_what_the_trunk_emits) {
    const uint32_t k = 4;
    for (bool hf : {false, true}) {
        testglm::Target t = testglm::load_target(testglm::synth({hf ? DType::BF16 : DType::Q8_0, hf, true}));
        ASSERT_TRUE(t.kv);
        Runner runner(*t.model, *t.kv, device(), pipelines());
        const int seq = *t.kv->add_sequence();
        auto mtp = make_mtp(t);
        ASSERT_TRUE(mtp.ok()) << mtp.error().message();
        Drafter* chain[] = {mtp->get()};
        SpecParams sp;
        sp.draft_max = int(k);
        const auto prompt = random_prompt(7, 9, 500);
        auto plain = generate(runner, nullptr, seq, prompt, greedy(41), {});
        ASSERT_TRUE(plain.ok());
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(41), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens);
        EXPECT_EQ(spec->stats.accepted, spec->stats.drafted) << (hf ? "hf" : "gguf");
        EXPECT_EQ(spec->stats.rounds, 8u);  // 41 tokens = 8 rounds of 4 drafts + 1 bonus, the first from prefill
    }
}

TEST_F(GlmMtp, a_file_without_the_mtp_layer_is_refused_with_a_message_saying_how_to_get_one) {
    for (bool hf : {false, true}) {
        testglm::ModelSpec s{hf ? DType::BF16 : DType::Q8_0, hf};
        s.mtp = false;
        testglm::Target t = testglm::load_target(testglm::synth(s));
        ASSERT_TRUE(t.kv);
        auto mtp = make_mtp(t);
        ASSERT_FALSE(mtp.ok());
        const std::string& msg = mtp.error().message();
        EXPECT_NE(msg.find("no NextN/MTP layer"), std::string::npos) << msg;
        EXPECT_NE(msg.find(hf ? "num_nextn_predict_layers" : "nextn_predict_layers"), std::string::npos) << msg;
    }
}

// An MTP-only GGUF (the MTP layer's tensors and the metadata, no trunk tensors) given beside
// the target (--mtp-head) drafts as the layer in the target's own file does.
TEST_F(GlmMtp, an_mtp_only_side_file_drafts_like_the_layer_in_the_full_file) {
    const uint32_t k = 3;
    const std::string full = testglm::synth({DType::Q8_0, false, /*repeating=*/true});
    const std::string side = test::make_temp_dir("glmside") + "/mtp.gguf";
    {
        auto f = GgufFile::open(full);
        ASSERT_TRUE(f.ok());
        GgufWriter w;
        for (const GgufKV& kv : (*f)->kvs()) w.add_value(kv.key, kv.value);
        const int64_t block = *(*f)->get_int("glm4.block_count") - 1;
        const std::string prefix = "blk." + std::to_string(block) + ".";
        int n = 0;
        for (const GgufTensorInfo& ti : (*f)->tensors()) {
            if (ti.name.rfind(prefix, 0) != 0) continue;
            ASSERT_TRUE(w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims),
                                     (*f)->tensor_data(ti), ti.nbytes)
                            .ok());
            ++n;
        }
        ASSERT_GT(n, 12);
        ASSERT_TRUE(w.write_file(side).ok());
    }
    testglm::Target t = testglm::load_target(full);
    ASSERT_TRUE(t.kv);
    auto src = ModelSource::open(side);
    ASSERT_TRUE(src.ok()) << src.error().message();
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    ASSERT_NE(e, nullptr);
    DraftHeadOptions o;
    o.kv.n_ctx = 256;
    auto mtp = DraftHeadDrafter::create(*e, "mtp", std::shared_ptr<const ModelSource>(std::move(*src)), *t.model,
                                        *t.kv, test::test_device(), test::test_pipelines(), o);
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    Drafter* chain[] = {mtp->get()};
    SpecParams sp;
    sp.draft_max = int(k);
    const auto prompt = random_prompt(3, 8, 500);
    auto plain = generate(runner, nullptr, seq, prompt, greedy(24), {});
    ASSERT_TRUE(plain.ok());
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(24), chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_GT(spec->stats.drafted, 0u);
    EXPECT_EQ(spec->stats.accepted, spec->stats.drafted);
}

TEST_F(GlmMtp, options_the_layer_cannot_honour_are_refused_and_draft_vocab_bounds_the_drafts) {
    testglm::Target t = testglm::load_target(testglm::synth({DType::Q8_0, false}));
    ASSERT_TRUE(t.kv);
    auto pre = make_mtp(t, {{"mtp_hidden", "pre-norm"}});
    ASSERT_FALSE(pre.ok());
    EXPECT_NE(pre.error().message().find("post-norm hidden only"), std::string::npos) << pre.error().message();

    const uint32_t n_draft_vocab = 100;
    auto mtp = make_mtp(t, {{"draft_vocab", std::to_string(n_draft_vocab)}});
    ASSERT_TRUE(mtp.ok()) << mtp.error().message();
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    Drafter* chain[] = {mtp->get()};
    SpecParams sp;
    sp.draft_max = 3;
    uint64_t drafted = 0;
    for (int i = 0; i < 6; ++i) {
        const auto prompt = random_prompt(500 + uint64_t(i), 6, 500);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy(16), {});
        ASSERT_TRUE(plain.ok());
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(16), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(drafted, 0u);
    // the drafts themselves: ids below the reduced vocabulary
    const std::vector<int32_t> prompt = {5, 88, 201, 13, 400, 7, 66};
    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    runner.set_hidden_point((*mtp)->hidden_point());
    std::vector<int32_t> pos(prompt.size()), rows(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) pos[i] = int32_t(i), rows[i] = int32_t(i);
    auto out = runner.forward({prompt, pos, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE((*mtp)->begin(prompt).ok());
    ASSERT_TRUE((*mtp)->observe({prompt, 0, out->hidden, t.model->info().n_embd}).ok());
    std::vector<int32_t> history = prompt;
    history.push_back(out->argmax[prompt.size() - 1]);
    auto drafts = (*mtp)->draft(DraftRequest{history, uint32_t(prompt.size()), 3});
    ASSERT_TRUE(drafts.ok()) << drafts.error().message();
    ASSERT_EQ(drafts->size(), 3u);
    for (int32_t d : *drafts) EXPECT_LT(d, int32_t(n_draft_vocab));
}

}  // namespace
}  // namespace tdm
