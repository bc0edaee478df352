// SPDX-License-Identifier: Apache-2.0
// tests/models/eagle3/eagle3_synth_test.cpp: the eagle3 synthesizer and the reference, without a
// device:
//   - a head's shapes follow its target (width, heads, vocabulary, the three layers it reads);
//   - its reduced vocabulary is distinct ascending target ids, stored as ids in GGUF and as
//     offsets in HF (with t2d marking the same ids);
//   - the GGUF and HF copies of one head give the reference the same states and drafts, with
//     and without llama3 rope scaling (which changes them);
//   - the request refuses a missing target and options it does not take;
//   - --draft-vocab N writes N rows of lm_head and d2t in both layouts, which the reference
//     loads; an N that is no multiple of 4 in 4..vocabulary is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "eagle3/synth/eagle3_request.h"
#include "eagle3/synth/eagle3_synth.h"
#include "eagle3_reference.h"
#include "eagle3_targets.h"
#include "formats/model_source.h"
#include "support/fixtures.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::eagle3::Target;

std::vector<int64_t> int64s(const ModelSource& src, const std::string& name) {
    const SourceTensor* t = src.find(name);
    if (!t) return {};
    std::vector<int64_t> v(t->nbytes / 8);
    std::memcpy(v.data(), t->data, t->nbytes);
    return v;
}

TEST(Eagle3Synth, a_head_follows_its_target) {
    for (Target t : {Target::qwen3, Target::llama}) {
        const std::string target = test::eagle3::write_target(t, test::make_temp_dir("eagle3-shape"));
        auto s = synth::eagle3_shape_for_target(target);
        ASSERT_TRUE(s.ok()) << s.error().message();
        EXPECT_EQ(s->n_embd, 64);
        EXPECT_EQ(s->n_embd_target, 64);
        EXPECT_EQ(s->n_head, 4);
        EXPECT_EQ(s->n_head_kv, 2);
        EXPECT_EQ(s->head_dim, 16);
        EXPECT_EQ(s->n_vocab, 512);
        EXPECT_EQ(s->n_vocab_draft, 256);
        EXPECT_EQ(s->target_layers, (std::vector<int32_t>{0, 2, 3}));
    }
}

TEST(Eagle3Synth, the_draft_vocabulary_is_ids_in_gguf_and_offsets_in_hf) {
    const std::string dir = test::make_temp_dir("eagle3-d2t");
    const std::string target = test::eagle3::write_target(Target::qwen3, dir);
    auto gguf = ModelSource::open(test::eagle3::write_head(target, false, dir));
    auto hf = ModelSource::open(test::eagle3::write_head(target, true, dir));
    ASSERT_TRUE(gguf.ok() && hf.ok());
    EXPECT_EQ((*gguf)->architecture(), "eagle3");
    const std::vector<int64_t> ids = int64s(**gguf, "d2t"), offsets = int64s(**hf, "d2t");
    ASSERT_EQ(ids.size(), 256u);
    ASSERT_EQ(offsets.size(), ids.size());
    const SourceTensor* t2d = (*hf)->find("t2d");
    ASSERT_TRUE(t2d);
    ASSERT_EQ(t2d->nbytes, 512u);
    for (size_t j = 0; j < ids.size(); ++j) {
        EXPECT_EQ(ids[j], int64_t(j) + offsets[j]) << j;
        if (j) {
            EXPECT_LT(ids[j - 1], ids[j]);
        }
        EXPECT_EQ(t2d->data[ids[j]], 1u);
    }
}

// Four committed pairs of random taps, then three chained steps; the last step.
test::Eagle3Step run_synth_steps(test::Eagle3Reference& r) {
    const int64_t width = r.hparams().n_taps * r.hparams().n_embd_target;
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    test::Eagle3Step s;
    for (int32_t pos = 0; pos < 4; ++pos) {
        std::vector<float> taps(static_cast<size_t>(width));
        for (float& x : taps) x = nd(rng);
        s = r.step(int32_t(rng() % 512), pos, taps, true);
    }
    for (int32_t pos = 4; pos < 7; ++pos) s = r.step(s.token, pos, s.hidden, false);
    return s;
}

TEST(Eagle3Synth, llama3_rope_scaling_reaches_both_layouts_alike) {
    const std::string dir = test::make_temp_dir("eagle3-scaling");
    const std::string target = test::eagle3::write_target(Target::llama, dir);
    auto plain = test::Eagle3Reference::open(test::eagle3::write_head(target, false, dir), target);
    auto gguf = test::Eagle3Reference::open(test::eagle3::write_head(target, false, dir, 3, true), target);
    auto hf = test::Eagle3Reference::open(test::eagle3::write_head(target, true, dir, 3, true), target);
    ASSERT_TRUE(plain.ok() && gguf.ok() && hf.ok());
    const test::Eagle3Step a = run_synth_steps(*gguf), b = run_synth_steps(*hf), c = run_synth_steps(*plain);
    EXPECT_EQ(a.token, b.token);
    EXPECT_LT(ref::nmse(a.hidden, b.hidden), 1e-10);  // rope_freqs (f32) against HF's own (double)
    EXPECT_GT(ref::nmse(a.hidden, c.hidden), 1e-6) << "the scaling changed nothing";
}

TEST(Eagle3Synth, gguf_and_hf_copies_give_the_reference_the_same_drafts) {
    for (Target t : {Target::qwen3, Target::llama}) {
        const std::string dir = test::make_temp_dir("eagle3-layouts");
        const std::string target = test::eagle3::write_target(t, dir);
        auto a = test::Eagle3Reference::open(test::eagle3::write_head(target, false, dir), target);
        auto b = test::Eagle3Reference::open(test::eagle3::write_head(target, true, dir), target);
        ASSERT_TRUE(a.ok()) << a.error().message();
        ASSERT_TRUE(b.ok()) << b.error().message();
        const int64_t width = a->hparams().n_taps * a->hparams().n_embd_target;
        std::mt19937 rng(11);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        // four committed pairs, then three chained steps
        test::Eagle3Step sa, sb;
        for (int32_t pos = 0; pos < 4; ++pos) {
            std::vector<float> taps(static_cast<size_t>(width));
            for (float& x : taps) x = nd(rng);
            const int32_t token = int32_t(rng() % 512);
            sa = a->step(token, pos, taps, true);
            sb = b->step(token, pos, taps, true);
        }
        for (int32_t pos = 4; pos < 7; ++pos) {
            EXPECT_EQ(sa.token, sb.token) << pos;
            EXPECT_LT(ref::nmse(sa.hidden, sb.hidden), 1e-12) << pos;
            sa = a->step(sa.token, pos, sa.hidden, false);
            sb = b->step(sb.token, pos, sb.hidden, false);
        }
        EXPECT_EQ(sa.token, sb.token);
    }
}

TEST(Eagle3Synth, the_request_needs_a_target_and_refuses_other_options) {
    const std::string dir = test::make_temp_dir("eagle3-request");
    auto no_target = synth::synthesize_eagle3_request("eagle3", dir + "/h.gguf", {});
    ASSERT_FALSE(no_target.ok());
    EXPECT_NE(no_target.error().message().find("--target"), std::string::npos) << no_target.error().message();
    const std::string target = test::eagle3::write_target(Target::llama, dir);
    auto preset = synth::synthesize_eagle3_request("eagle3", dir + "/h.gguf", {{"target", target}, {"preset", "tiny"}});
    ASSERT_FALSE(preset.ok());
    EXPECT_NE(preset.error().message().find("--preset"), std::string::npos) << preset.error().message();
    auto ok = synth::synthesize_eagle3_request("eagle3", dir + "/h", {{"target", target}, {"format", "hf"}});
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_NE(ok->find("draft vocabulary 256 of 512"), std::string::npos) << *ok;
}

TEST(Eagle3Synth, draft_vocab_sets_the_rows_of_lm_head_and_d2t) {
    const std::string dir = test::make_temp_dir("eagle3-draft-vocab");
    const std::string target = test::eagle3::write_target(Target::qwen3, dir);
    for (const char* format : {"gguf", "hf"}) {
        const std::string head = dir + "/h-" + format;
        auto r = synth::synthesize_eagle3_request(
            "eagle3", head, {{"target", target}, {"format", format}, {"type", "f16"}, {"draft-vocab", "64"}});
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_NE(r->find("draft vocabulary 64 of 512"), std::string::npos) << *r;
        auto src = ModelSource::open(head);
        ASSERT_TRUE(src.ok()) << src.error().message();
        const SourceTensor* lm = (*src)->find(std::string(format) == "hf" ? "lm_head.weight" : "output.weight");
        ASSERT_TRUE(lm) << format;
        EXPECT_EQ(lm->ne[1], 64) << format;
        EXPECT_EQ(lm->ne[0], 64) << format;  // n_embd
        EXPECT_EQ(int64s(**src, "d2t").size(), 64u) << format;
        auto ref = test::Eagle3Reference::open(head, target);
        ASSERT_TRUE(ref.ok()) << ref.error().message();
        EXPECT_EQ(ref->hparams().n_vocab_draft, 64) << format;
    }
    // the whole vocabulary is a draft vocabulary too
    auto whole = synth::eagle3_shape_for_target(target, 512);
    ASSERT_TRUE(whole.ok()) << whole.error().message();
    EXPECT_EQ(whole->n_vocab_draft, 512);
    for (const char* bad : {"30", "0", "-4", "516", "many"}) {
        auto r = synth::synthesize_eagle3_request("eagle3", dir + "/bad.gguf", {{"target", target}, {"draft-vocab", bad}});
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message().find("--draft-vocab"), std::string::npos) << r.error().message();
    }
    auto bad = synth::synthesize_eagle3_request("eagle3", dir + "/bad.gguf", {{"target", target}, {"draft-vocab", "516"}});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("a multiple of 4 from 4 to the target's vocabulary, 512 tokens"),
              std::string::npos)
        << bad.error().message();
}

}  // namespace
}  // namespace tdm
