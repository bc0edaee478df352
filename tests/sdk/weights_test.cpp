// SPDX-License-Identifier: Apache-2.0
// tests/sdk/weights_test.cpp: tandem/cpp/weights.hpp against a fake
// load_weight that records each request: names per layout, layer and
// prefix; flags per layout; shapes, permutations, stacking and slabs reach
// the host; host failures keep the host's status and message; malformed
// name patterns are refused before the host is called.
//
// To add a case: load through a WeightLoader and compare fake().loads.
#include <gtest/gtest.h>

#include <tandem/cpp/weights.hpp>

#include <cstring>
#include <string>

#include "fake_host.h"

namespace {

using sdk_test::fake;
using tdm::sdk::Err;
using tdm::sdk::NameError;
using tdm::sdk::TensorName;
using tdm::sdk::WeightLoader;

constexpr TensorName kWq = {"blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight"};
constexpr TensorName kNorm = {"attn_norm.weight", "input_layernorm.weight", TDM_WEIGHT_F32, TDM_WEIGHT_ADD_ONE};
constexpr TensorName kGgufOnlyFlag = {"a", "b", 0, 0, TDM_WEIGHT_OPTIONAL};

class SdkWeights : public ::testing::Test {
protected:
    void SetUp() override { fake().reset(); }
    WeightLoader loader(bool hf) { return WeightLoader(&api, nullptr, hf, Err(err, sizeof err)); }

    tdm_host_api api = sdk_test::fake_host_api();
    char err[512] = "";
    const tdm_weight* w = nullptr;
};

TEST_F(SdkWeights, names_follow_the_layout_and_the_layer) {
    EXPECT_EQ(loader(false).at_layer(3).get(kWq, {64, 128}, &w), TDM_OK);
    EXPECT_NE(w, nullptr);
    EXPECT_EQ(loader(true).at_layer(12).get(kWq, {64, 128}, &w), TDM_OK);
    ASSERT_EQ(fake().loads.size(), 2u);
    EXPECT_EQ(fake().loads[0].name, "blk.3.attn_q.weight");
    EXPECT_EQ(fake().loads[1].name, "model.layers.12.self_attn.q_proj.weight");
    EXPECT_EQ(fake().loads[0].n_dims, 2u);
    EXPECT_EQ(fake().loads[0].ne[0], 64);
    EXPECT_EQ(fake().loads[0].ne[1], 128);
    EXPECT_EQ(fake().loads[0].ne[2], 0) << "dims past n_dims stay zero";
}

TEST_F(SdkWeights, prefixes_are_per_layout_patterns_and_flags_add_per_layout) {
    const WeightLoader g = loader(false).with_prefix("blk.%d.", "model.language_model.layers.%d.").at_layer(5);
    const WeightLoader h = loader(true).with_prefix("blk.%d.", "model.language_model.layers.%d.").at_layer(5);
    EXPECT_EQ(g.get(kNorm, {64}, &w), TDM_OK);
    EXPECT_EQ(h.get(kNorm, {64}, &w), TDM_OK);
    EXPECT_EQ(g.get(kGgufOnlyFlag, {1}, &w), TDM_OK);
    EXPECT_EQ(h.get(kGgufOnlyFlag, {1}, &w), TDM_OK);
    ASSERT_EQ(fake().loads.size(), 4u);
    EXPECT_EQ(fake().loads[0].name, "blk.5.attn_norm.weight");
    EXPECT_EQ(fake().loads[0].flags, uint32_t(TDM_WEIGHT_F32));
    EXPECT_EQ(fake().loads[1].name, "model.language_model.layers.5.input_layernorm.weight");
    EXPECT_EQ(fake().loads[1].flags, uint32_t(TDM_WEIGHT_F32 | TDM_WEIGHT_ADD_ONE));
    EXPECT_EQ(fake().loads[0].n_dims, 1u);
    EXPECT_EQ(fake().loads[2].flags, uint32_t(TDM_WEIGHT_OPTIONAL));
    EXPECT_EQ(fake().loads[3].flags, 0u);
}

TEST_F(SdkWeights, permutations_stacks_and_slabs_reach_the_host) {
    const WeightLoader L = loader(true).with_prefix("", "model.layers.%d.").at_layer(0);
    const std::vector<int64_t> perm = {1, 0, 3, 2};
    EXPECT_EQ(L.request("linear_attn.in_proj_b.weight", {8, 4}).row_perm(perm).load(&w), TDM_OK);
    EXPECT_EQ(L.request("linear_attn.A_log", {4}).col_perm(perm).flags(TDM_WEIGHT_F32).load(&w), TDM_OK);
    EXPECT_EQ(L.request("mlp.experts.gate_up_proj", {8, 32, 4}).slab(16, 16).load(&w), TDM_OK);
    tdm::sdk::NameList parts;
    ASSERT_EQ(L.part_names("mlp.experts.%d.up_proj.weight", 3, &parts), TDM_OK);
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[2], "model.layers.0.mlp.experts.2.up_proj.weight");
    EXPECT_EQ(L.request("mlp.experts.up_proj (3 experts)", {8, 16}).stack(parts).load(&w), TDM_OK);
    ASSERT_EQ(fake().loads.size(), 4u);
    EXPECT_EQ(fake().loads[0].row_perm, perm);
    EXPECT_TRUE(fake().loads[0].col_perm.empty());
    EXPECT_EQ(fake().loads[1].col_perm, perm);
    EXPECT_EQ(fake().loads[1].flags, uint32_t(TDM_WEIGHT_F32));
    EXPECT_EQ(fake().loads[2].slab_first, 16);
    EXPECT_EQ(fake().loads[2].slab_rows, 16);
    EXPECT_EQ(fake().loads[2].n_dims, 3u);
    EXPECT_EQ(fake().loads[3].name, "model.layers.0.mlp.experts.up_proj (3 experts)");
    ASSERT_EQ(fake().loads[3].parts.size(), 3u);
    EXPECT_EQ(fake().loads[3].parts[0], "model.layers.0.mlp.experts.0.up_proj.weight");
    // an empty permutation is no permutation
    EXPECT_EQ(L.request("x", {4}).row_perm(std::vector<int64_t>{}).load(&w), TDM_OK);
    EXPECT_TRUE(fake().loads[4].row_perm.empty());
}

TEST_F(SdkWeights, optional_tensors_may_be_absent_and_required_ones_fail_with_the_hosts_message) {
    fake().absent = {"output.weight"};
    const TensorName kOut = {"output.weight", "lm_head.weight"};
    w = reinterpret_cast<const tdm_weight*>(&fake());
    EXPECT_EQ(loader(false).get_optional(kOut, {64, 100}, &w), TDM_OK);
    EXPECT_EQ(w, nullptr);
    EXPECT_EQ(fake().loads[0].flags, uint32_t(TDM_WEIGHT_OPTIONAL));
    EXPECT_EQ(loader(false).get(kOut, {64, 100}, &w), TDM_ERR_NOT_FOUND);
    EXPECT_STREQ(err, "missing tensor output.weight");
    fake().load_fail["token_embd.weight"] = {TDM_ERR_SHAPE, "tensor 'token_embd.weight': expected [64, 100], found [64, 99]"};
    EXPECT_EQ(loader(false).get({"token_embd.weight", "embed"}, {64, 100}, &w), TDM_ERR_SHAPE);
    EXPECT_STREQ(err, "tensor 'token_embd.weight': expected [64, 100], found [64, 99]");
    EXPECT_EQ(w, nullptr);
}

// tdm.weight_transforms' load: records its bits, then loads as the fake host does.
uint32_t g_transforms = 0;
tdm_status fake_load_transformed(tdm_loader* l, const tdm_weight_request* r, uint32_t transforms,
                                 const tdm_weight** out) {
    g_transforms = transforms;
    return sdk_test::fake_host_api().load_weight(l, r, out);
}

TEST_F(SdkWeights, transformed_loads_reach_the_extension_with_their_bits_and_need_it) {
    const tdm_ext_weight_transforms ext = {sizeof ext, fake_load_transformed};
    const TensorName kD2t = {"d2t", "d2t", TDM_WEIGHT_F32};
    const uint32_t both = TDM_WEIGHT_TRANSFORM_ADD_INDEX | TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS;
    EXPECT_EQ(loader(true).request(kD2t, {96}).load_transformed(&ext, both, &w), TDM_OK);
    EXPECT_NE(w, nullptr);
    EXPECT_EQ(g_transforms, both);
    ASSERT_EQ(fake().loads.size(), 1u);
    EXPECT_EQ(fake().loads[0].name, "d2t");
    EXPECT_EQ(fake().loads[0].n_dims, 1u);
    EXPECT_EQ(fake().loads[0].ne[0], 96);
    EXPECT_EQ(fake().loads[0].flags, uint32_t(TDM_WEIGHT_F32));
    // a host without the extension would not apply them: refused, the host not asked
    EXPECT_EQ(loader(true).request(kD2t, {96}).load_transformed(nullptr, both, &w), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(err, "weight d2t: transforms asked of a host without tdm.weight_transforms");
    EXPECT_EQ(w, nullptr);
    EXPECT_EQ(fake().loads.size(), 1u);
    fake().load_fail["d2t"] = {TDM_ERR_UNSUPPORTED, "transform bits 0x4 are unknown to this host"};
    EXPECT_EQ(loader(true).request(kD2t, {96}).load_transformed(&ext, 4, &w), TDM_ERR_UNSUPPORTED);
    EXPECT_STREQ(err, "transform bits 0x4 are unknown to this host");
}

TEST_F(SdkWeights, malformed_names_and_shapes_are_refused_before_the_host_is_asked) {
    EXPECT_EQ(loader(false).get(kWq, {64}, &w), TDM_ERR_INVALID_ARGUMENT) << "%d without a layer";
    EXPECT_STREQ(err, "weight name 'blk.%d.attn_q.weight' needs a layer index (use at_layer())");
    EXPECT_EQ(loader(false).at_layer(0).get({"blk.%s.x", "y"}, {64}, &w), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err).find("only %d (the layer) and %% may follow a '%'"), std::string::npos) << err;
    const std::string long_name(300, 'n');
    EXPECT_EQ(loader(false).request(long_name.c_str(), {1}).load(&w), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err).find("is longer than 255 bytes"), std::string::npos);
    EXPECT_EQ(loader(false).request("x", {1, 2, 3, 4, 5}).load(&w), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(err, "weight x: the expected shape needs 1 to 4 dimensions");
    EXPECT_TRUE(fake().loads.empty());
}

TEST(SdkWeightNames, patterns_substitute_the_layer_and_escape_percent) {
    char buf[64];
    EXPECT_EQ(tdm::sdk::format_name(buf, sizeof buf, "blk.%d.", "ffn_%%d.%d", 7), NameError::ok);
    EXPECT_STREQ(buf, "blk.7.ffn_%d.7");
    EXPECT_EQ(tdm::sdk::format_name(buf, sizeof buf, "", "plain.weight", -1), NameError::ok);
    EXPECT_STREQ(buf, "plain.weight");
    std::memset(buf, 'z', sizeof buf);
    EXPECT_EQ(tdm::sdk::format_name(buf, 8, "", "blk.%d.attn", 123), NameError::too_long);
    EXPECT_LT(std::strlen(buf), 8u);
    for (size_t i = 8; i < sizeof buf; ++i) EXPECT_EQ(buf[i], 'z') << "wrote past the 8 bytes it was given: " << i;
    EXPECT_EQ(tdm::sdk::format_name(buf, sizeof buf, "", "x%", 1), NameError::bad_pattern);
    EXPECT_EQ(tdm::sdk::format_name(buf, sizeof buf, "blk.%d.", "x", -1), NameError::no_layer);
}

}  // namespace
