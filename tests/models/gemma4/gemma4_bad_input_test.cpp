// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_bad_input_test.cpp: broken Gemma 4 files loaded through the runtime and
// the gemma4 plugin (Model::load): each gives an error that names the problem, never a crash
// or a model that runs wrong. The files come from gemma4_tiny.h with one defect each.
//
// To add a case: add a Break field to gemma4_tiny.h if needed and one line below.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "formats/expect_error.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_runtime.h"
#include "model/model.h"
#include "support/device_fixture.h"

namespace tdm {
namespace {

namespace g4 = test::g4;
using test::fails_with;


class Gemma4BadInput : public test::DeviceTest {};

TEST_F(Gemma4BadInput, broken_files_give_errors_naming_the_problem) {
    const g4::Preset p = g4::preset("tiny-e2b");
    const g4::Weights w = g4::make_weights(p, 2);
    auto gguf = [&](g4::Break b) {
        g4::WriteOptions o;
        o.brk = b;
        return Model::load(g4::write_gguf(p, w, g4::temp_path("bad.gguf"), o), test::build_tree_plugins(), device());
    };
    auto hf = [&](g4::Break b) {
        g4::WriteOptions o;
        o.brk = b;
        return Model::load(g4::write_hf(p, w, g4::temp_path("bad"), o), test::build_tree_plugins(), device());
    };
    EXPECT_TRUE(fails_with(gguf({.drop_key = "attention.sliding_window"}), "gemma4.attention.sliding_window"));
    EXPECT_TRUE(fails_with(gguf({.drop_key = "attention.head_count_kv"}), "gemma4.attention.head_count_kv"));
    EXPECT_TRUE(fails_with(hf({.drop_key = "sliding_window"}), "sliding_window"));
    EXPECT_TRUE(fails_with(gguf({.drop_tensor = "blk.1.attn_q.weight"}), "blk.1.attn_q.weight"));
    EXPECT_TRUE(fails_with(gguf({.drop_tensor = "rope_freqs.weight"}), "rope_freqs.weight"));
    EXPECT_TRUE(fails_with(gguf({.drop_tensor = "blk.0.layer_output_scale.weight"}), "blk.0.layer_output_scale.weight"));
    EXPECT_TRUE(fails_with(hf({.drop_tensor = "model.language_model.layers.2.self_attn.k_proj.weight"}),
                           "layers.2.self_attn.k_proj.weight"));
    EXPECT_TRUE(fails_with(gguf({.pattern_extra = 1}), {"sliding_window_pattern", "6", "5"}));
    EXPECT_TRUE(fails_with(hf({.pattern_extra = 2}), {"layer_types", "one type per layer"}));
    EXPECT_TRUE(fails_with(gguf({.ple_shape = true}), {"per_layer_token_embd.weight", "64", "80"}));
    EXPECT_TRUE(fails_with(hf({.ple_shape = true}), {"embed_tokens_per_layer.weight", "64", "80"}));
    // the same files unbroken load
    auto good_gguf = gguf({});
    EXPECT_TRUE(good_gguf.ok()) << good_gguf.error().message();
    auto good_hf = hf({});
    EXPECT_TRUE(good_hf.ok()) << good_hf.error().message();
}

TEST_F(Gemma4BadInput, a_kv_shared_layer_without_an_earlier_layer_of_its_type_is_refused) {
    // every layer KV-shared but the first (sliding): the full layers have no source
    g4::Preset p = g4::preset("tiny-e2b");
    p.n_kv_shared = 4;
    p.double_wide = false;
    const g4::Weights w = g4::make_weights(p, 3);
    auto m = Model::load(g4::write_gguf(p, w, g4::temp_path("shared.gguf")), test::build_tree_plugins(), device());
    EXPECT_TRUE(fails_with(m, {"KV-shared layer 2", "full"}));
}

TEST_F(Gemma4BadInput, full_layers_with_different_head_dims_in_per_layer_config_are_refused) {
    // the newer HF form: full layers 2 and 4 (tiny-e2b: S S F S F) must share one head dim
    const g4::Preset p = g4::preset("tiny-e2b");
    g4::WriteOptions o;
    o.per_layer_config = true;
    const std::string dir = g4::write_hf(p, g4::make_weights(p, 4), g4::temp_path("plc"), o);
    std::ifstream in(dir + "/config.json");
    nlohmann::json cfg = nlohmann::json::parse(in);
    in.close();
    auto& text = cfg.contains("text_config") ? cfg["text_config"] : cfg;
    ASSERT_TRUE(text.contains("per_layer_config")) << cfg.dump();
    text["per_layer_config"]["2"]["head_dim"] = 32;
    std::ofstream(dir + "/config.json") << cfg.dump();
    EXPECT_TRUE(fails_with(Model::load(dir, test::build_tree_plugins(), device()), {"full layer 4 has head dim 64, an earlier one 32"}));
}

}  // namespace
}  // namespace tdm
