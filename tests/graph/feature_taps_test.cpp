// SPDX-License-Identifier: Apache-2.0
// tests/graph/feature_taps_test.cpp: every in-tree target family provides the states a
// draft head may tap (tdm.target_features: the input of each layer, the last layer's
// output, the post-norm state) and taps each of them in its graph, so a Runner asked for
// them returns their concatenation; the last layer's output is the family's pre-norm
// hidden and the post-norm tap its post-norm hidden, to the bit. One short pass per tap
// list on each family's tiny synthetic model.
// (The extension's calls: tests/plugin/target_features_ext_test.cpp; a head reading taps:
// tests/speculative/target_features_test.cpp.)
#include <gtest/gtest.h>

#include <functional>
#include <ostream>

#include "gemma4/synth/gemma4_synth.h"
#include "glm-ocr/synth/glm_synth.h"
#include "llama/synth/llama_synth.h"
#include "model/feature_taps.h"
#include "model/runner.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

struct TapFamily {
    const char* name;
    std::function<Status(const std::string& path)> synthesize;  // a tiny F32 model of the family
};

// ctest's test names show the family, not the bytes of the struct
std::ostream& operator<<(std::ostream& os, const TapFamily& f) { return os << f.name; }

class FamilyFeatureTaps : public test::DeviceTest, public ::testing::WithParamInterface<TapFamily> {};

TEST_P(FamilyFeatureTaps, every_provided_point_is_tapped_and_the_ends_match_the_hidden_outputs) {
    const TapFamily& f = GetParam();
    const std::string path = test::make_temp_dir("taps") + "/m.gguf";
    const Status st = f.synthesize(path);
    ASSERT_TRUE(st.ok()) << st.error().message();
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();
    const ProvidedTaps& p = (*model)->provided_taps();
    ASSERT_TRUE(p.provided) << f.name << " provides no taps";
    ASSERT_GT(p.n_layers, 0u);
    KvPoolConfig kc;
    kc.n_ctx = 32;
    kc.n_seq_max = 4;
    auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test", (*model)->recurrent_states());
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(**model, **kv, device(), pipelines());
    const uint32_t E = (*model)->info().n_embd;
    const std::vector<int32_t> tokens = {2, 7, 11}, pos = {0, 1, 2}, rows = {0, 1, 2};

    // one fresh sequence per pass (a recurrent family's states start anew too)
    auto pass = [&](tdm_hidden_point point, uint32_t* width) {
        runner.set_hidden_point(point);
        const int seq = *(*kv)->add_sequence();
        auto out = runner.forward({tokens, pos, seq, rows});
        EXPECT_TRUE(out.ok()) << out.error().message();
        std::vector<float> h;
        if (out.ok() && out->hidden) {
            *width = out->hidden_width;
            h.assign(out->hidden, out->hidden + tokens.size() * out->hidden_width);
        }
        (*kv)->free_sequence(seq);
        return h;
    };
    // the post-norm state, the last layer's output, then layer inputs from 0 (16 at most)
    std::vector<tdm_feature_tap> taps = {{TDM_TAP_POST_NORM, 0}, {TDM_TAP_LAYER_INPUT, p.n_layers}};
    for (uint32_t l = 0; l < p.n_layers && taps.size() < TDM_MAX_FEATURE_TAPS; ++l)
        taps.push_back({TDM_TAP_LAYER_INPUT, l});
    uint32_t width = 0, w_pre = 0, w_post = 0;
    const std::vector<float> all = pass(hidden_point_for_taps(taps), &width);
    ASSERT_EQ(width, uint32_t(taps.size()) * E);
    const std::vector<float> pre = pass(TDM_HIDDEN_PRE_NORM, &w_pre), post = pass(TDM_HIDDEN_POST_NORM, &w_post);
    ASSERT_EQ(w_pre, E);
    ASSERT_EQ(w_post, E);
    for (size_t r = 0; r < tokens.size(); ++r) {
        const float* row = all.data() + r * width;
        EXPECT_TRUE(std::equal(row, row + E, post.data() + r * E)) << f.name << " post-norm, row " << r;
        EXPECT_TRUE(std::equal(row + E, row + 2 * E, pre.data() + r * E)) << f.name << " last layer's output, row " << r;
    }
}

Status tap_qwen3(const std::string& path) {
    return synth::synth_qwen3_gguf(path, TDM_TRY(synth::qwen3_preset("tiny")), {});
}
Status tap_qwen35(const std::string& path) {
    return synth::synth_qwen35_gguf(path, TDM_TRY(synth::qwen35_preset("tiny")), {});
}
Status tap_gemma4(const std::string& path) {
    return synth::synth_gemma4_gguf(path, TDM_TRY(synth::gemma4_preset("tiny-e2b")), {});
}
Status tap_glm(const std::string& path) { return synth::synth_glm_gguf(path, TDM_TRY(synth::glm_preset("tiny")), {}); }
Status tap_llama(const std::string& path) {
    return synth::synth_llama_gguf(path, TDM_TRY(synth::llama_preset("tiny")), {});
}

INSTANTIATE_TEST_SUITE_P(InTreeTargets, FamilyFeatureTaps,
                         ::testing::Values(TapFamily{"qwen3", tap_qwen3}, TapFamily{"qwen35", tap_qwen35},
                                           TapFamily{"gemma4", tap_gemma4}, TapFamily{"glm4", tap_glm},
                                           TapFamily{"llama", tap_llama}),
                         [](const auto& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace tdm
