// SPDX-License-Identifier: Apache-2.0
// tests/model/nan_origin_test.cpp: with the NaN debugging mode (TANDEM_CHECK_NAN=1,
// Runner::set_nan_debug) a forward pass whose logits are NaN fails with an error that
// names the first op and layer whose output became non-finite; without it the error is
// the generic one. Synthetic qwen3 and qwen35 (hybrid: Gated DeltaNet and attention
// layers) models with one element of one layer's weight set to NaN, loaded with the
// load-time weight scan off (as --no-check-weights does); and a qwen35 MTP draft head
// poisoned the same way, whose draft graphs the mode probes too.
// To add a case: a row of kCases (model, poisoned tensor, the op and layer to name).
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>

#include "model/runner.h"
#include "speculative/draft_head.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/gguf_edit.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

const std::string& dir() {
    static const std::string d = test::make_temp_dir("nan-origin");
    return d;
}

std::string clean_model(const std::string& arch) {
    const std::string p = dir() + "/" + arch + ".gguf";
    if (std::ifstream(p).good()) return p;
    Status st;
    if (arch == "qwen3") {
        auto shape = synth::qwen3_preset("tiny");
        EXPECT_TRUE(shape.ok());
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::F16;
        st = synth::synth_qwen3_gguf(p, *shape, o);
    } else {
        auto shape = synth::qwen35_preset("tiny");  // layers: GDN, GDN, GDN, attention
        EXPECT_TRUE(shape.ok());
        synth::Qwen35SynthOptions o;
        o.weight_type = DType::F16;
        st = synth::synth_qwen35_gguf(p, *shape, o);
    }
    EXPECT_TRUE(st.ok()) << st.error().message();
    return p;
}

// A copy of `src` with element `index` of `tensor` set to NaN.
std::string poisoned(const std::string& src, const std::string& tensor, uint64_t index) {
    const std::string p = dir() + "/" + tensor + ".gguf";
    test::GgufEdit e;
    e.nan_tensor = tensor;
    e.nan_element = index;
    const Status st = test::copy_gguf_with_edit(src, p, e);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return p;
}

struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

Loaded load_unchecked(const std::string& path) {
    Loaded l;
    ModelLoadOptions mo;
    mo.check_weights = false;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device(), mo);
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(test::test_device(), l.model->attention_layers(), kc, "test", l.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) l.kv = std::move(kv).value();
    return l;
}

// Prefills four tokens and returns the forward's result (logits of the last row).
Result<ForwardOutput> prefill(Loaded& l, Runner& runner) {
    const int seq = TDM_TRY(l.kv->add_sequence());
    const std::vector<int32_t> tokens = {11, 42, 7, 99}, positions = {0, 1, 2, 3}, rows = {3};
    return runner.forward({tokens, positions, seq, rows});
}

struct NanCase {
    const char* arch;
    const char* tensor;  // poisoned at element 5
    const char* names;   // what the debugging error says
};

const NanCase kCases[] = {
    {"qwen3", "blk.1.ffn_down.weight", "first non-finite value in blk.1 ffn_out (op matmul, output 'ffn_out'"},
    {"qwen3", "blk.0.attn_q_norm.weight", "first non-finite value in blk.0 q_norm (op rms_norm"},
    // a Gated DeltaNet layer: its recurrent state is probed as it runs, never replayed
    {"qwen35", "blk.1.ssm_norm.weight", "first non-finite value in blk.1 gated_norm (op gated_rms_norm"},
    {"qwen35", "blk.3.attn_k_norm.weight", "first non-finite value in blk.3 k_norm (op rms_norm"},
};

class NanOrigin : public test::DeviceTest, public ::testing::WithParamInterface<NanCase> {};

TEST_P(NanOrigin, the_debug_mode_names_the_first_non_finite_op_and_its_layer) {
    const NanCase& c = GetParam();
    const std::string path = poisoned(clean_model(c.arch), c.tensor, 5);
    Loaded l = load_unchecked(path);
    ASSERT_TRUE(l.kv);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    runner.set_nan_debug(true);
    auto out = prefill(l, runner);
    ASSERT_FALSE(out.ok());
    const std::string& msg = out.error().message();
    EXPECT_NE(msg.find("the model produced NaN logits at position 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.names), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("reads ") + c.tensor), std::string::npos) << msg;
}

TEST_P(NanOrigin, without_the_debug_mode_the_error_is_the_generic_one) {
    const NanCase& c = GetParam();
    Loaded l = load_unchecked(poisoned(clean_model(c.arch), c.tensor, 5));
    ASSERT_TRUE(l.kv);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    runner.set_nan_debug(false);
    auto out = prefill(l, runner);
    ASSERT_FALSE(out.ok());
    const std::string& msg = out.error().message();
    EXPECT_NE(msg.find("the model produced NaN logits at position 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("TANDEM_CHECK_NAN=1 names the first layer"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("first non-finite value"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Poisoned, NanOrigin, ::testing::ValuesIn(kCases), [](const ::testing::TestParamInfo<NanCase>& p) {
    std::string n = std::string(p.param.arch) + "_" + p.param.tensor;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
});

class NanDebugDraftHead : public test::DeviceTest {};

class NanDebugClean : public test::DeviceTest, public ::testing::WithParamInterface<const char*> {};

// The probes only read: a clean model's logits are the same with and without them.
TEST_P(NanDebugClean, probes_leave_a_clean_model_s_logits_unchanged) {
    const std::string path = clean_model(GetParam());
    std::vector<std::vector<float>> logits;
    for (bool debug : {false, true}) {
        Loaded l = load_unchecked(path);
        ASSERT_TRUE(l.kv);
        Runner runner(*l.model, *l.kv, device(), pipelines());
        runner.set_nan_debug(debug);
        auto out = prefill(l, runner);
        ASSERT_TRUE(out.ok()) << out.error().message();
        logits.emplace_back(out->logits, out->logits + l.model->info().n_vocab);
    }
    EXPECT_EQ(logits[0], logits[1]);
}

INSTANTIATE_TEST_SUITE_P(Models, NanDebugClean, ::testing::Values("qwen3", "qwen35"));

// A draft head's graphs are probed too: with the MTP head's hidden norm poisoned (the
// trunk is clean, so the target's passes succeed), a draft fails in the debugging mode with
// the head's first non-finite op; without it the head drafts (tokens nobody will accept)
// and says nothing, as the target's passes would.
TEST_F(NanDebugDraftHead, the_debug_mode_names_the_draft_head_s_first_non_finite_op) {
    const std::string path = poisoned(clean_model("qwen35"), "blk.4.nextn.hnorm.weight", 5);
    Loaded l = load_unchecked(path);
    ASSERT_TRUE(l.kv);
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", l.model->arch().desc->name);
    ASSERT_NE(e, nullptr);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    runner.set_hidden_point(TDM_HIDDEN_POST_NORM);
    const int seq = *l.kv->add_sequence();
    const std::vector<int32_t> prompt = {11, 42, 7, 99}, positions = {0, 1, 2, 3}, rows = {0, 1, 2, 3};
    auto out = runner.forward({prompt, positions, seq, rows});
    ASSERT_TRUE(out.ok()) << out.error().message();
    std::vector<int32_t> history = prompt;
    history.push_back(out->argmax[3]);
    for (bool debug : {true, false}) {
        DraftHeadOptions o;
        o.kv.n_ctx = 64;
        o.check_weights = false;
        o.nan_debug = debug;
        auto head = DraftHeadDrafter::create(*e, "mtp", l.model->shared_source(), *l.model, *l.kv, device(),
                                             pipelines(), o);
        ASSERT_TRUE(head.ok()) << head.error().message();
        ASSERT_TRUE((*head)->begin(prompt).ok());
        ASSERT_TRUE((*head)->observe({prompt, 0, out->hidden, l.model->info().n_embd}).ok());
        auto drafts = (*head)->draft({history, 4, 3, seq});
        if (!debug) {
            EXPECT_TRUE(drafts.ok()) << drafts.error().message();
            continue;
        }
        ASSERT_FALSE(drafts.ok());
        const std::string& msg = drafts.error().message();
        EXPECT_NE(msg.find("draft head qwen35-mtp: a draft produced a NaN or infinity"), std::string::npos) << msg;
        EXPECT_NE(msg.find("first non-finite value in blk.4 "), std::string::npos) << msg;
        EXPECT_NE(msg.find("reads blk.4.nextn.hnorm.weight"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace tdm
