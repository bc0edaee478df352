// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_synth_assistant_test.cpp: assistants written by the gemma4 synthesizer
// (plugins/gemma4/synth/gemma4_assistant.h) with the targets it writes, through the gemma4
// plugin, for every tiny preset in both layouts (and one quantized assistant):
//   - the assistant loads as the target's draft head, and its drafts after rounds that
//     accepted 0..k drafts equal the independent reference's; greedy speculative output equals
//     plain greedy output (gemma4_assistant_harness.h);
//   - its files hold the keys, tensors and config.json of the tests' own writer
//     (gemma4_tiny_assistant.h) for the same preset, so either can stand in for the other.
//
// To add a case: add a SynthAssistantCase.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "formats/model_source.h"
#include "gemma4/synth/gemma4_request.h"
#include "gemma4_assistant_harness.h"
#include "gemma4_tiny_assistant.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

namespace g4 = test::g4;
using Options = std::vector<std::pair<std::string, std::string>>;

struct SynthAssistantCase {
    const char* name;
    const char* preset;
    bool hf;
    const char* assistant_type;  // "" = the synthesizer's default (bf16)
};

// The target and its assistant through the synthesizer's requests, as `tandem synth` makes them.
std::pair<std::string, std::string> synthesize_pair(const SynthAssistantCase& c) {
    const std::string dir = test::make_temp_dir("gemma4-synth-asst");
    const std::string target = dir + (c.hf ? "/target" : "/target.gguf");
    const std::string assistant = dir + (c.hf ? "/assistant" : "/assistant.gguf");
    Options common = {{"preset", c.preset}, {"seed", "11"}};
    if (c.hf) common.emplace_back("format", "hf");
    auto t = synth::synthesize_gemma4_request("gemma4", target, common);
    EXPECT_TRUE(t.ok()) << t.error().message();
    Options a = common;
    if (*c.assistant_type) a.emplace_back("type", c.assistant_type);
    auto s = synth::synthesize_gemma4_request("gemma4-assistant", assistant, a);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return {target, assistant};
}

class Gemma4SynthAssistant : public test::DeviceTest, public ::testing::WithParamInterface<SynthAssistantCase> {};

TEST_P(Gemma4SynthAssistant, drafts_like_the_reference_and_keeps_greedy_output) {
    const SynthAssistantCase c = GetParam();
    const auto [target, assistant] = synthesize_pair(c);
    {
        g4::AssistantPair pair = g4::load_assistant_pair(target, assistant);
        g4::check_drafts_match_reference(pair, c.name);
    }
    // a fresh cache: the reference check leaves its sequence behind
    g4::AssistantPair pair = g4::load_assistant_pair(target, assistant);
    g4::check_speculative_equals_plain(pair, c.name, 2);
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, Gemma4SynthAssistant,
                         ::testing::Values(SynthAssistantCase{"e2b_gguf", "tiny-e2b", false, ""},
                                           SynthAssistantCase{"e2b_hf", "tiny-e2b", true, ""},
                                           SynthAssistantCase{"31b_gguf", "tiny-31b", false, ""},
                                           SynthAssistantCase{"31b_hf", "tiny-31b", true, ""},
                                           SynthAssistantCase{"26b_gguf", "tiny-26b", false, ""},
                                           SynthAssistantCase{"26b_hf", "tiny-26b", true, ""},
                                           SynthAssistantCase{"e2b_gguf_q8_0", "tiny-e2b", false, "q8_0"}),
                         [](const auto& p) { return std::string(p.param.name); });

// Keys and values equal as GGUF stores them (type, count and bytes).
bool same_value(const GgufValue& a, const GgufValue& b) {
    return a.type == b.type && a.elem_type == b.elem_type && a.count == b.count && a.nbytes == b.nbytes &&
           std::equal(a.data, a.data + a.nbytes, b.data);
}

// Every field `want` sets, `got` sets to an equal value (got may hold more, e.g. dtype fields).
void expect_superset(const nlohmann::json& got, const nlohmann::json& want, const std::string& where) {
    for (auto it = want.begin(); it != want.end(); ++it) {
        const std::string key = where + "." + it.key();
        ASSERT_TRUE(got.contains(it.key())) << key;
        if (it->is_object())
            expect_superset(got[it.key()], *it, key);
        else
            EXPECT_EQ(got[it.key()], *it) << key;
    }
}

TEST(Gemma4SynthAssistantFiles, tiny_assistants_match_the_tests_writer_key_for_key_and_tensor_for_tensor) {
    for (const char* preset : {"tiny-e2b", "tiny-31b", "tiny-26b"}) {
        const std::string dir = test::make_temp_dir("gemma4-asst-files");
        const g4::AssistantPreset ap = g4::assistant_preset(preset);
        const g4::AssistantWeights aw = g4::make_assistant_weights(ap, 3);
        const std::string theirs = g4::write_assistant_gguf(ap, aw, dir + "/theirs.gguf");
        const std::string theirs_hf = g4::write_assistant_hf(ap, aw, dir + "/theirs");
        const Options o = {{"preset", preset}, {"type", "f32"}};
        ASSERT_TRUE(synth::synthesize_gemma4_request("gemma4-assistant", dir + "/ours.gguf", o).ok());
        Options ohf = o;
        ohf.emplace_back("format", "hf");
        ASSERT_TRUE(synth::synthesize_gemma4_request("gemma4-assistant", dir + "/ours", ohf).ok());

        // GGUF: their keys all present and equal; ours adds only general.* keys
        auto a = GgufFile::open(dir + "/ours.gguf");
        auto b = GgufFile::open(theirs);
        ASSERT_TRUE(a.ok() && b.ok());
        for (const GgufKV& kv : (*b)->kvs()) {
            const GgufValue* v = (*a)->find(kv.key);
            ASSERT_TRUE(v) << preset << ": " << kv.key;
            EXPECT_TRUE(same_value(*v, kv.value)) << preset << ": " << kv.key;
        }
        for (const GgufKV& kv : (*a)->kvs()) {
            const bool theirs_too = (*b)->find(kv.key) != nullptr;
            EXPECT_TRUE(theirs_too || kv.key.rfind("general.", 0) == 0) << preset << ": " << kv.key;
        }
        ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size()) << preset;
        for (const GgufTensorInfo& t : (*b)->tensors()) {
            const GgufTensorInfo* u = (*a)->find_tensor(t.name);
            ASSERT_TRUE(u) << preset << ": " << t.name;
            EXPECT_EQ(u->type, t.type) << preset << ": " << t.name;
            EXPECT_EQ(u->n_dims, t.n_dims) << preset << ": " << t.name;
            EXPECT_TRUE(std::equal(t.ne, t.ne + 4, u->ne)) << preset << ": " << t.name;
        }

        // HF: config.json holds their fields (the cluster fields only matter with the ordered
        // head: HF's defaults here, the struct's there); the same tensors, dtypes and shapes
        auto sa = ModelSource::open(dir + "/ours");
        auto sb = ModelSource::open(theirs_hf);
        ASSERT_TRUE(sa.ok() && sb.ok());
        nlohmann::json want = *(*sb)->hf_config();
        if (!ap.ordered) want.erase("num_centroids"), want.erase("centroid_intermediate_top_k");
        expect_superset(*(*sa)->hf_config(), want, preset);
        ASSERT_EQ((*sa)->tensors().size(), (*sb)->tensors().size()) << preset;
        for (const SourceTensor& t : (*sb)->tensors()) {
            const SourceTensor* u = (*sa)->find(t.name);
            ASSERT_TRUE(u) << preset << ": " << t.name;
            EXPECT_EQ(u->dtype, t.dtype) << preset << ": " << t.name;
            EXPECT_TRUE(std::equal(t.ne, t.ne + 4, u->ne)) << preset << ": " << t.name;
        }
    }
}

}  // namespace
}  // namespace tdm
