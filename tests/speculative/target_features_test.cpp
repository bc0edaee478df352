// SPDX-License-Identifier: Apache-2.0
// tests/speculative/target_features_test.cpp: tdm.target_features end to end on a tiny
// Qwen3 target. A Runner asked for a head's taps returns their concatenation as its hidden
// rows: each slice matches the plain C++ reference's state at that point (layer inputs,
// post-norm) and, bit for bit, the pre-/post-norm hidden outputs of the same target. The
// test head (tests/plugins/features_head.c) drafts the argmax of each tap at the newest
// row, so its drafts show that its first step read exactly those rows (from the device
// table and from host copies alike) and that its chained steps saw TDM_ERR_NOT_FOUND;
// speculative decoding with it emits the plain greedy tokens.
// A head asking for what its target cannot give is refused, with a message naming both.
// One model, one short prompt: the mechanism is exact or not, more prompts add nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/generate.h"
#include "model/feature_taps.h"
#include "model/runner.h"
#include "plugin/plugin_loader.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/qwen3_reference.h"

namespace tdm {
namespace {

constexpr int64_t kTapEmbd = 64, kTapLayers = 2;

synth::Qwen3Shape features_shape() {
    synth::Qwen3Shape s;
    s.n_vocab = 512;
    s.n_embd = kTapEmbd;
    s.n_layer = kTapLayers;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 16;
    s.n_ff = 128;
    s.n_ctx_train = 2048;
    return s;
}

const std::string& features_model_path() {
    static const std::string path = [] {
        const std::string p = test::make_temp_dir("target-features") + "/m.gguf";
        synth::Qwen3SynthOptions o;
        o.seed = 23;
        EXPECT_TRUE(synth::synth_qwen3_gguf(p, features_shape(), o).ok());
        return p;
    }();
    return path;
}

// The build tree's plugins and the test head.
Registry& features_plugins() {
    static std::unique_ptr<Registry> reg = [] {
        PluginSearch s;
        s.use_env = false;
        s.files = {std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-features_head.so"};
        auto r = load_plugins(s);
        EXPECT_TRUE(r.ok()) << r.error().message();
        return std::move(r).value();
    }();
    return *reg;
}

const std::vector<int32_t> kFeaturesPrompt = {1, 17, 300, 42, 9, 255};

class TargetFeatures : public test::DeviceTest {
protected:
    void SetUp() override {
        DeviceTest::SetUp();
        auto m = Model::load(features_model_path(), features_plugins(), device());
        ASSERT_TRUE(m.ok()) << m.error().message();
        model = std::move(*m);
        KvPoolConfig kc;
        kc.n_ctx = 64;
        auto k = KvPool::create(device(), model->attention_layers(), kc, "test");
        ASSERT_TRUE(k.ok()) << k.error().message();
        kv = std::move(*k);
        seq = *kv->add_sequence();
        runner = std::make_unique<Runner>(*model, *kv, device(), pipelines());
    }

    Result<std::unique_ptr<DraftHeadDrafter>> head(const std::string& taps, const std::string& extra = {},
                                                   bool on_device = true) {
        const DraftHeadEntry* e = features_plugins().find_draft_head("features-head", "qwen3");
        if (!e) return Error("no features-head for qwen3");
        DraftHeadOptions o;
        o.options["taps"] = taps;
        o.options["n_embd"] = std::to_string(kTapEmbd);
        if (!extra.empty()) o.options["hidden"] = extra;
        o.rows_on_device = on_device;
        return DraftHeadDrafter::create(*e, "features-head", model->shared_source(), *model, *kv, device(),
                                        pipelines(), o);
    }

    // The hidden rows of a pass over the prompt with the runner at `point`.
    std::vector<float> hidden_rows(tdm_hidden_point point, uint32_t* width) {
        runner->set_hidden_point(point);
        EXPECT_TRUE(kv->truncate(seq, 0).ok());
        std::vector<int32_t> pos(kFeaturesPrompt.size()), rows(kFeaturesPrompt.size());
        for (size_t i = 0; i < kFeaturesPrompt.size(); ++i) pos[i] = rows[i] = int32_t(i);
        auto out = runner->forward({kFeaturesPrompt, pos, seq, rows});
        EXPECT_TRUE(out.ok()) << out.error().message();
        if (!out.ok() || !out->hidden) return {};
        *width = out->hidden_width;
        return std::vector<float>(out->hidden, out->hidden + kFeaturesPrompt.size() * out->hidden_width);
    }

    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;
    int seq = -1;
};

// Columns [c0, c0 + n) of every row of a [rows][width] table.
std::vector<float> tap_columns(const std::vector<float>& t, uint32_t width, uint32_t c0, uint32_t n) {
    std::vector<float> out;
    for (size_t r = 0; r < t.size() / width; ++r)
        out.insert(out.end(), t.begin() + long(r * width + c0), t.begin() + long(r * width + c0 + n));
    return out;
}

TEST_F(TargetFeatures, the_runner_concatenates_the_taps_a_head_asked_for) {
    const std::vector<tdm_feature_tap> taps = {{TDM_TAP_POST_NORM, 0},
                                               {TDM_TAP_LAYER_INPUT, 0},
                                               {TDM_TAP_LAYER_INPUT, 1},
                                               {TDM_TAP_LAYER_INPUT, kTapLayers}};
    const tdm_hidden_point point = hidden_point_for_taps(taps);
    EXPECT_EQ(hidden_point_for_taps(taps), point) << "one list, one point";
    EXPECT_GE(uint32_t(point), kFirstTapPoint);
    uint32_t width = 0, w_pre = 0, w_post = 0;
    const std::vector<float> got = hidden_rows(point, &width);
    ASSERT_EQ(width, 4 * kTapEmbd);
    const std::vector<float> pre = hidden_rows(TDM_HIDDEN_PRE_NORM, &w_pre);
    const std::vector<float> post = hidden_rows(TDM_HIDDEN_POST_NORM, &w_post);
    ASSERT_EQ(w_pre, kTapEmbd);
    EXPECT_TRUE(tap_columns(got, width, 0, kTapEmbd) == post) << "the post-norm tap is the post-norm hidden";
    EXPECT_TRUE(tap_columns(got, width, 3 * kTapEmbd, kTapEmbd) == pre) << "the input of layer n_layer is the pre-norm hidden";

    auto ref = ref::Qwen3Reference::open(features_model_path(), {true});  // f16 K/V, as the pool stores them
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    ref::Qwen3Trace trace;
    ref->forward(kFeaturesPrompt, 0, &trace);
    EXPECT_LT(ref::nmse(tap_columns(got, width, 0, kTapEmbd), trace.at("result_norm")), 1e-8);
    EXPECT_LT(ref::nmse(tap_columns(got, width, kTapEmbd, kTapEmbd), trace.at("inp_embd")), 1e-12);
    EXPECT_LT(ref::nmse(tap_columns(got, width, 2 * kTapEmbd, kTapEmbd), trace.at("l_out-0")), 1e-8);
    EXPECT_LT(ref::nmse(tap_columns(got, width, 3 * kTapEmbd, kTapEmbd), trace.at("l_out-1")), 1e-8);
}

// Step j of the test head drafts the argmax of tap j at the newest target row: the drafts
// are those argmaxes when its first step read the rows and its chained steps passed them on.
TEST_F(TargetFeatures, a_head_drafts_from_the_taps_it_requested) {
    const std::vector<tdm_feature_tap> taps = {{TDM_TAP_LAYER_INPUT, 0}, {TDM_TAP_LAYER_INPUT, 1}, {TDM_TAP_POST_NORM, 0}};
    for (bool on_device : {true, false}) {
        auto h = head("i0,i1,p0", {}, on_device);
        ASSERT_TRUE(h.ok()) << h.error().message();
        ASSERT_EQ((*h)->hidden_point(), hidden_point_for_taps(taps));
        uint32_t width = 0;
        runner->set_hidden_point((*h)->hidden_point());
        ASSERT_TRUE(kv->truncate(seq, 0).ok());
        std::vector<int32_t> pos(kFeaturesPrompt.size()), rows(kFeaturesPrompt.size());
        for (size_t i = 0; i < kFeaturesPrompt.size(); ++i) pos[i] = rows[i] = int32_t(i);
        auto out = runner->forward({kFeaturesPrompt, pos, seq, rows});
        ASSERT_TRUE(out.ok()) << out.error().message();
        width = out->hidden_width;
        ASSERT_EQ(width, 3 * kTapEmbd);
        ASSERT_TRUE((*h)->begin(kFeaturesPrompt).ok());
        ASSERT_TRUE((*h)->observe({kFeaturesPrompt, 0, out->hidden, width, out->hidden_on_device}).ok());
        std::vector<int32_t> history = kFeaturesPrompt;
        history.push_back(77);  // the newest token, at position n: the target has not run it
        auto drafts = (*h)->draft({history, uint32_t(kFeaturesPrompt.size()), 5, seq});
        ASSERT_TRUE(drafts.ok()) << drafts.error().message();
        ASSERT_EQ(drafts->size(), 5u);
        const float* last = out->hidden + (kFeaturesPrompt.size() - 1) * width;
        std::vector<int32_t> want;
        for (uint32_t j = 0; j < 5; ++j) {
            const float* s = last + (j % 3) * kTapEmbd;
            want.push_back(int32_t(std::max_element(s, s + kTapEmbd) - s));
        }
        EXPECT_EQ(*drafts, want) << (on_device ? "rows on the device" : "rows from the host");
        EXPECT_NE(want[0], want[2]) << "the taps' argmaxes should differ for the test to tell them apart";
        EXPECT_EQ((on_device ? (*h)->rows_read_on_device() : (*h)->rows_read_from_host()), 1u);
    }
}

// Through the engine: it sets the runner to the head's taps and shows the head rows of
// their width after the prompt and every verify; the output is plain greedy decoding's.
TEST_F(TargetFeatures, speculative_decoding_with_a_tapping_head_emits_the_plain_greedy_tokens) {
    GenerateParams gp;
    gp.max_tokens = 10;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    gp.n_batch = 4;  // a prompt in two chunks
    auto plain = generate(*runner, nullptr, seq, kFeaturesPrompt, gp, {});
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    ASSERT_TRUE(kv->truncate(seq, 0).ok());
    auto h = head("i2,i0,p0");
    ASSERT_TRUE(h.ok()) << h.error().message();
    Drafter* chain[] = {h->get()};
    SpecParams sp;
    sp.draft_max = 3;
    auto spec = generate_speculative(*runner, nullptr, seq, kFeaturesPrompt, gp, chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_GT(spec->stats.rounds, 0u);
    ASSERT_EQ(spec->stats.drafters.size(), 1u);
    EXPECT_EQ(spec->stats.drafters[0].failure, "") << "the head was never turned off";
    EXPECT_EQ(spec->stats.drafters[0].gen_drafts, spec->stats.rounds);
    EXPECT_GT((*h)->rows_read_on_device(), 0u) << "verify rows read where the target left them";
}

TEST_F(TargetFeatures, a_head_asking_for_what_the_target_cannot_give_is_refused) {
    auto beyond = head("i0,i9");
    ASSERT_FALSE(beyond.ok());
    EXPECT_NE(beyond.error().message().find("the features-head head asks for the input of layer 9; the qwen3 target "
                                            "provides layers 0..2"),
              std::string::npos)
        << beyond.error().message();
    auto twice = head("i1,p0,i1");
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.error().message().find("the input of layer 1 asked for twice"), std::string::npos)
        << twice.error().message();
    auto post1 = head("p1");
    ASSERT_FALSE(post1.ok());
    EXPECT_NE(post1.error().message().find("post-norm state has layer 0"), std::string::npos) << post1.error().message();
    auto too_many = head("i0,i1,i2,p0,i0,i1,i2,p0,i0,i1,i2,p0,i0,i1,i2,p0,i0");
    ASSERT_FALSE(too_many.ok());
    EXPECT_NE(too_many.error().message().find("17 taps"), std::string::npos) << too_many.error().message();
    auto with_hidden = head("i0", "1");
    ASSERT_FALSE(with_hidden.ok());
    EXPECT_NE(with_hidden.error().message().find("TDM_HIDDEN_NONE"), std::string::npos) << with_hidden.error().message();
}

TEST_F(TargetFeatures, a_target_that_provides_no_taps_is_named_in_the_refusal) {
    std::unique_ptr<Model> quiet;
    {
        // its plugin finds no extension, so it provides nothing (as one built before it)
        const test::ScopedEnv hide("TANDEM_HIDE_EXTENSIONS", "tdm.target_features");
        auto m = Model::load(features_model_path(), features_plugins(), device());
        ASSERT_TRUE(m.ok()) << m.error().message();
        quiet = std::move(*m);
    }
    EXPECT_FALSE(quiet->provided_taps().provided);
    EXPECT_TRUE(model->provided_taps().provided);
    EXPECT_EQ(model->provided_taps().n_layers, uint32_t(kTapLayers));
    const DraftHeadEntry* e = features_plugins().find_draft_head("features-head", "qwen3");
    ASSERT_NE(e, nullptr);
    DraftHeadOptions o;
    o.options["taps"] = "i1";
    o.options["n_embd"] = std::to_string(kTapEmbd);
    auto h = DraftHeadDrafter::create(*e, "features-head", quiet->shared_source(), *quiet, *kv, device(), pipelines(), o);
    ASSERT_FALSE(h.ok());
    EXPECT_NE(h.error().message().find("the features-head head asks for the input of layer 1; the qwen3 target "
                                       "provides no taps"),
              std::string::npos)
        << h.error().message();
    // and it still runs as a target: plain decoding is untouched
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto k = KvPool::create(device(), quiet->attention_layers(), kc, "quiet");
    ASSERT_TRUE(k.ok());
    Runner r(*quiet, **k, device(), pipelines());
    const int s = *(*k)->add_sequence();
    const std::vector<int32_t> pos = {0, 1}, rows = {1};
    auto out = r.forward({std::span(kFeaturesPrompt).first(2), pos, s, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
}

}  // namespace
}  // namespace tdm
