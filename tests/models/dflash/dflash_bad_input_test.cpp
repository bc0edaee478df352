// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_bad_input_test.cpp: DFlash heads that do not fit their target,
// and files that are not heads, are refused when the head is created or loaded, each with a
// message naming the problem: another hidden size, target layers the target does not have, a
// head for a deeper target, a config without block_size or mask token, a mask token outside
// the vocabulary, a GGUF that holds no head; in llama.cpp's GGUF layout: another hidden size,
// another vocabulary, target layers the target does not have, no fc, a fork's architecture.
// Also: a head whose config lists no target layers gets z-lab's default spread.
#include <gtest/gtest.h>

#include "dflash_fixture.h"
#include "model/feature_taps.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/gguf_edit.h"

namespace tdm {
namespace {

using test::dflash::Target;

class DflashBadInput : public test::DeviceTest {
protected:
    static void SetUpTestSuite() {
        dir_ = test::make_temp_dir("dflash-bad");
        target_ = new Target(test::dflash::load_target(dir_, 64));
    }
    static void TearDownTestSuite() {
        delete target_;
        target_ = nullptr;
    }
    // The message of attaching a head whose config.json `edit` changed ("" when it loads).
    static std::string refusal(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
        const std::string head = test::dflash::write_head(target_->path, dir_ + "/" + name, 8, edit);
        auto d = test::dflash::make_head(*target_, head);
        return d.ok() ? std::string() : d.error().message();
    }
    // The message of attaching a GGUF head whose shape `edit` changed ("" when it loads).
    static std::string gguf_refusal(const std::string& name, const std::function<void(synth::DflashShape&)>& edit) {
        const std::string head = test::dflash::write_gguf_head(target_->path, dir_ + "/" + name + ".gguf", 8, edit);
        auto d = test::dflash::make_head(*target_, head);
        return d.ok() ? std::string() : d.error().message();
    }
    static inline std::string dir_;
    static inline Target* target_ = nullptr;
};

TEST_F(DflashBadInput, a_head_of_another_width_is_refused) {
    ASSERT_TRUE(target_->model);
    const std::string m = refusal("wide", [](nlohmann::json& c) { c["hidden_size"] = c["hidden_size"].get<int>() * 2; });
    EXPECT_NE(m.find("dflash: the head is"), std::string::npos) << m;
    EXPECT_NE(m.find("wide"), std::string::npos) << m;
}

TEST_F(DflashBadInput, target_layers_the_target_lacks_are_refused) {
    ASSERT_TRUE(target_->model);
    const std::string m = refusal("deep", [](nlohmann::json& c) { c["dflash_config"]["target_layer_ids"] = {1, 9}; });
    EXPECT_NE(m.find("asks for"), std::string::npos) << m;
    EXPECT_NE(m.find("provides layers 0..5"), std::string::npos) << m;
    const std::string n = refusal("for-deeper", [](nlohmann::json& c) { c["num_target_layers"] = 36; });
    EXPECT_NE(n.find("a target of 36 layers (num_target_layers), this one has 5"), std::string::npos) << n;
}

TEST_F(DflashBadInput, a_config_without_block_or_mask_token_is_refused) {
    ASSERT_TRUE(target_->model);
    std::string m = refusal("no-block", [](nlohmann::json& c) { c.erase("block_size"); });
    EXPECT_NE(m.find("block_size is missing"), std::string::npos) << m;
    m = refusal("one-row", [](nlohmann::json& c) { c["block_size"] = 1; });
    EXPECT_NE(m.find("block_size"), std::string::npos) << m;
    m = refusal("no-mask", [](nlohmann::json& c) { c["dflash_config"].erase("mask_token_id"); });
    EXPECT_NE(m.find("dflash_config.mask_token_id is missing"), std::string::npos) << m;
    m = refusal("big-mask", [](nlohmann::json& c) { c["dflash_config"]["mask_token_id"] = 1 << 20; });
    EXPECT_NE(m.find("outside the target's vocabulary"), std::string::npos) << m;
    m = refusal("not-dflash", [](nlohmann::json& c) {
        c.erase("dflash_config");
        c["architectures"] = {"Qwen3ForCausalLM"};
    });
    EXPECT_NE(m.find("holds no DFlash head"), std::string::npos) << m;
}

TEST_F(DflashBadInput, a_gguf_that_holds_no_head_is_refused_naming_its_architecture) {
    ASSERT_TRUE(target_->model);
    auto d = test::dflash::make_head(*target_, target_->path);
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message().find("holds no DFlash head (not a dflash GGUF; its architecture is 'qwen3')"),
              std::string::npos)
        << d.error().message();
}

TEST_F(DflashBadInput, a_gguf_head_for_another_target_is_refused_naming_both_values) {
    ASSERT_TRUE(target_->model);
    ASSERT_EQ(gguf_refusal("gguf-good", nullptr), "");
    std::string m = gguf_refusal("gguf-wide", [](synth::DflashShape& s) { s.n_embd *= 2; });
    EXPECT_NE(m.find("the head is 128 wide"), std::string::npos) << m;
    EXPECT_NE(m.find("the target's are 64 wide"), std::string::npos) << m;
    m = gguf_refusal("gguf-vocab", [](synth::DflashShape& s) { s.n_vocab *= 2; });
    EXPECT_NE(m.find("the head is for a vocabulary of 1024 tokens, the target's has 512"), std::string::npos) << m;
    // HF ids 1 and 9: dflash.target_layers 2 and 10, beyond the 5-layer target
    m = gguf_refusal("gguf-deep", [](synth::DflashShape& s) { s.target_layers = {1, 9}; });
    EXPECT_NE(m.find("asks for"), std::string::npos) << m;
    EXPECT_NE(m.find("provides layers 0..5"), std::string::npos) << m;
}

TEST_F(DflashBadInput, a_gguf_head_without_fc_or_of_a_fork_layout_is_refused) {
    ASSERT_TRUE(target_->model);
    const std::string head = test::dflash::write_gguf_head(target_->path, dir_ + "/gguf-src.gguf");
    test::GgufEdit drop;
    drop.drop_tensor = "fc.weight";
    ASSERT_TRUE(test::copy_gguf_with_edit(head, dir_ + "/gguf-no-fc.gguf", drop).ok());
    auto d = test::dflash::make_head(*target_, dir_ + "/gguf-no-fc.gguf");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message().find("fc.weight"), std::string::npos) << d.error().message();
    test::GgufEdit fork;
    fork.set_key = "general.architecture";
    fork.set_value = "dflash-draft";
    ASSERT_TRUE(test::copy_gguf_with_edit(head, dir_ + "/gguf-fork.gguf", fork).ok());
    d = test::dflash::make_head(*target_, dir_ + "/gguf-fork.gguf");
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message().find("architecture 'dflash-draft' (a llama.cpp fork's layout) is not read"),
              std::string::npos)
        << d.error().message();
}

TEST_F(DflashBadInput, a_config_without_layer_ids_reads_the_default_spread) {
    ASSERT_TRUE(target_->model);
    // two draft layers on a 5-layer target: round(1 + i * (5 - 4) / 1) = layers 1 and 2, whose
    // outputs are the inputs of layers 2 and 3
    const std::string head = test::dflash::write_head(target_->path, dir_ + "/default", 8, [](nlohmann::json& c) {
        c["dflash_config"].erase("target_layer_ids");
    });
    auto d = test::dflash::make_head(*target_, head);
    ASSERT_TRUE(d.ok()) << d.error().message();
    const std::span<const tdm_feature_tap> taps = taps_of((*d)->hidden_point());
    ASSERT_EQ(taps.size(), 2u);
    EXPECT_EQ(taps[0].kind, TDM_TAP_LAYER_INPUT);
    EXPECT_EQ(taps[0].layer, 2u);
    EXPECT_EQ(taps[1].layer, 3u);
}

}  // namespace
}  // namespace tdm
