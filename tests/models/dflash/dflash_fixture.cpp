// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_fixture.cpp: the tiny target and its heads (dflash_fixture.h).
#include "dflash_fixture.h"

#include <gtest/gtest.h>

#include <fstream>

#include "dflash/synth/dflash_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/plugin_registry.h"

namespace tdm::test::dflash {

Target load_target(const std::string& dir, uint32_t n_ctx) {
    Target t;
    synth::Qwen3Shape s = *synth::qwen3_preset("tiny");
    s.n_layer = 5;
    synth::Qwen3SynthOptions o;
    o.weight_type = DType::F16;
    t.path = dir + "/qwen3.gguf";
    const Status st = synth::synth_qwen3_gguf(t.path, s, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    if (!st.ok()) return t;
    auto m = Model::load(t.path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = n_ctx;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "dflash-target");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

std::string write_head(const std::string& target, const std::string& dir, int32_t block,
                       const std::function<void(nlohmann::json&)>& edit) {
    auto shape = synth::dflash_shape_for_target(target, 2, block);
    EXPECT_TRUE(shape.ok()) << shape.error().message();
    if (!shape.ok()) return "";
    synth::DflashSynthOptions o;
    o.weight_type = DType::F32;
    o.seed = 7;
    const Status st = synth::synth_dflash_hf(dir, *shape, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    if (edit) {
        nlohmann::json c;
        std::ifstream(dir + "/config.json") >> c;
        edit(c);
        std::ofstream(dir + "/config.json") << c.dump(2);
    }
    return dir;
}

Result<std::unique_ptr<DraftHeadDrafter>> make_head(const Target& t, const std::string& head) {
    auto src = TDM_TRY(ModelSource::open(head));
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("dflash", t.model->arch().desc->name);
    if (!e) return Error("no dflash head for this target");
    DraftHeadOptions o;
    o.options = {{"n_vocab", std::to_string(t.model->info().n_vocab)},
                 {"target_n_layer", std::to_string(t.model->info().n_attention_layers)}};
    return DraftHeadDrafter::create(*e, "dflash", std::shared_ptr<const ModelSource>(std::move(src)), *t.model, *t.kv,
                                    test::test_device(), test::test_pipelines(), o);
}

}  // namespace tdm::test::dflash
