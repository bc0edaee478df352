// SPDX-License-Identifier: Apache-2.0
// tests/plugin/target_features_ext_test.cpp: extension tdm.target_features as a plugin meets
// it, call by call. provide() and request() are recorded for the create the host has open
// (and only checked otherwise); request() refuses empty, oversized and repeated lists, a
// post-norm tap of a layer and a head that also names a hidden state; tap() takes only the
// points its model provided, each once, only in a target's graph, and records only what the
// attached head wants; features() is the first step's target rows and TDM_ERR_NOT_FOUND in
// a chained step.
// (End to end with a target and a head: tests/speculative/target_features_test.cpp.)
#include <gtest/gtest.h>

#include "plugin/handles.h"

namespace tdm {
namespace {

const tdm_ext_target_features& ext() {
    uint32_t version = 0;
    auto e = static_cast<const tdm_ext_target_features*>(
        host_api()->get_extension(TDM_EXT_TARGET_FEATURES, TDM_EXT_TARGET_FEATURES_VERSION, &version));
    EXPECT_NE(e, nullptr);
    EXPECT_EQ(version, TDM_EXT_TARGET_FEATURES_VERSION);
    return *e;
}
std::string last_error_features() { return host_api()->last_error(); }

TEST(TargetFeaturesExt, provide_is_recorded_for_the_create_the_host_has_open) {
    tdm_model_info info{}, other{};
    EXPECT_EQ(ext().provide(&info, 28), TDM_OK) << "outside a create: checked, not recorded";
    TargetCreateScope scope(&info);
    EXPECT_EQ(ext().provide(&other, 12), TDM_OK);
    EXPECT_FALSE(scope.result.provided) << "another model's info";
    EXPECT_EQ(ext().provide(&info, 28), TDM_OK);
    EXPECT_TRUE(scope.result.provided);
    EXPECT_EQ(scope.result.n_layers, 28u);
    EXPECT_EQ(ext().provide(&info, 0), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ext().provide(nullptr, 2), TDM_ERR_INVALID_ARGUMENT);
}

TEST(TargetFeaturesExt, request_takes_one_to_sixteen_distinct_points_once_per_create) {
    tdm_draft_head_info info{};
    HeadCreateScope scope(&info);
    const tdm_feature_tap dup[] = {{TDM_TAP_LAYER_INPUT, 2}, {TDM_TAP_POST_NORM, 0}, {TDM_TAP_LAYER_INPUT, 2}};
    EXPECT_EQ(ext().request(&info, dup, 3), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_features().find("the input of layer 2 asked for twice (taps 0 and 2)"), std::string::npos)
        << last_error_features();
    const tdm_feature_tap post1[] = {{TDM_TAP_POST_NORM, 1}};
    EXPECT_EQ(ext().request(&info, post1, 1), TDM_ERR_INVALID_ARGUMENT);
    const tdm_feature_tap odd[] = {{tdm_tap_kind(7), 0}};
    EXPECT_EQ(ext().request(&info, odd, 1), TDM_ERR_INVALID_ARGUMENT);
    std::vector<tdm_feature_tap> many(TDM_MAX_FEATURE_TAPS + 1);
    for (uint32_t i = 0; i < many.size(); ++i) many[i] = {TDM_TAP_LAYER_INPUT, i};
    EXPECT_EQ(ext().request(&info, many.data(), uint32_t(many.size())), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ext().request(&info, many.data(), 0), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ext().request(&info, nullptr, 1), TDM_ERR_INVALID_ARGUMENT);
    info.hidden = TDM_HIDDEN_POST_NORM;
    EXPECT_EQ(ext().request(&info, many.data(), 1), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_features().find("TDM_HIDDEN_NONE"), std::string::npos) << last_error_features();
    info.hidden = TDM_HIDDEN_NONE;
    EXPECT_FALSE(scope.requested) << "refused requests record nothing";
    EXPECT_EQ(ext().request(&info, many.data(), TDM_MAX_FEATURE_TAPS), TDM_OK);
    ASSERT_EQ(scope.taps.size(), TDM_MAX_FEATURE_TAPS);
    EXPECT_EQ(scope.taps[5].layer, 5u);
    EXPECT_EQ(ext().request(&info, many.data(), 1), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_features().find("called twice"), std::string::npos) << last_error_features();
}

// A target graph of 3 tokens whose model provided 4 layers, for a head that wants the
// input of layer 2 and the post-norm state.
struct TargetGraph {
    tdm_graph g;
    tdm_tensor x{}, narrow{};
    TargetGraph() {
        tdm_batch_desc b{sizeof(tdm_batch_desc), 3, 1, 0};
        init_graph_inputs(g, b, false);
        g.taps.provided = true;
        g.taps.n_layers = 4;
        g.taps.width = 8;
        g.taps.wanted = {{TDM_TAP_LAYER_INPUT, 2}, {TDM_TAP_POST_NORM, 0}};
        g.taps.values.assign(2, kNoTensor);
        x.id = g.graph.input(DType::F32, {8, 3}, "x");
        narrow.id = g.graph.input(DType::F32, {4, 3}, "narrow");
    }
};

TEST(TargetFeaturesExt, tap_takes_each_provided_point_once_and_keeps_the_wanted_ones) {
    TargetGraph t;
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_LAYER_INPUT, 0, t.x), TDM_OK) << "not wanted: a no-op";
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_LAYER_INPUT, 2, t.x), TDM_OK);
    EXPECT_EQ(t.g.taps.values[0], t.x.id);
    EXPECT_EQ(t.g.taps.values[1], kNoTensor);
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_LAYER_INPUT, 2, t.x), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_features().find("the input of layer 2 was tapped twice"), std::string::npos)
        << last_error_features();
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_LAYER_INPUT, 4, t.x), TDM_OK) << "layer n_layers: the last layer's output";
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_LAYER_INPUT, 5, t.x), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_features().find("the input of layer 5 is not a point the model provided (layer inputs 0..4"),
              std::string::npos)
        << last_error_features();
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_POST_NORM, 1, t.x), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_POST_NORM, 0, t.narrow), TDM_ERR_SHAPE);
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_POST_NORM, 0, tdm_tensor{9999}), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_POST_NORM, 0, t.x), TDM_OK);
    EXPECT_EQ(t.g.taps.values[1], t.x.id);
    EXPECT_EQ(ext().tap(nullptr, TDM_TAP_POST_NORM, 0, t.x), TDM_ERR_INVALID_ARGUMENT);
}

TEST(TargetFeaturesExt, tap_needs_a_model_that_provided_and_a_target_graph) {
    TargetGraph t;
    t.g.taps.provided = false;
    EXPECT_EQ(ext().tap(&t.g, TDM_TAP_LAYER_INPUT, 0, t.x), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_features().find("provided no taps"), std::string::npos) << last_error_features();
    TargetGraph h;
    h.g.n_embd_target = 8;  // a draft head's step
    EXPECT_EQ(ext().tap(&h.g, TDM_TAP_LAYER_INPUT, 0, h.x), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_features().find("only in a target model's build_graph"), std::string::npos)
        << last_error_features();
}

TEST(TargetFeaturesExt, features_are_the_first_steps_target_rows_and_not_found_in_a_chained_step) {
    tdm_graph g;
    tdm_batch_desc b{sizeof(tdm_batch_desc), 2, 2, 0};
    init_graph_inputs(g, b, false);
    tdm_tensor f{};
    EXPECT_EQ(ext().features(&g, &f), TDM_ERR_INVALID_ARGUMENT) << "a target graph";
    g.n_embd_target = 24;
    EXPECT_EQ(ext().features(&g, &f), TDM_ERR_INVALID_ARGUMENT) << "a head that requested nothing";
    EXPECT_NE(last_error_features().find("requested no taps"), std::string::npos) << last_error_features();
    g.taps.head_requested = true;
    g.taps.target_step = true;
    ASSERT_EQ(ext().features(&g, &f), TDM_OK);
    tdm_tensor hidden{};
    ASSERT_EQ(host_api()->graph_input(&g, TDM_INPUT_TARGET_HIDDEN, &hidden), TDM_OK);
    EXPECT_EQ(f.id, hidden.id);
    EXPECT_EQ(g.graph.tensor(f.id).cols(), 24);
    EXPECT_EQ(g.graph.tensor(f.id).rows(), 2);
    g.taps.target_step = false;
    EXPECT_EQ(ext().features(&g, &f), TDM_ERR_NOT_FOUND);
    EXPECT_EQ(ext().features(&g, nullptr), TDM_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tdm
