/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/glm-ocr/glm_helpers.h: what the GLM-OCR runtime tests share:
// synthetic models written on the fly (tiny preset, both layouts), a loaded target with its KV
// pool, the glm-mtp head as a drafter, and greedy generation parameters.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/generate.h"
#include "glm-ocr/synth/glm_synth.h"
#include "glm-ocr/synth/glm_vision_synth.h"
#include "plugin/plugin_loader.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm::testglm {

struct ModelSpec {
    DType type = DType::F32;
    bool hf = false;
    bool repeating = false;
    bool mtp = true;
    uint64_t seed = 7;
    const char* preset = "tiny";
    bool mtp_copies = true;  // the MTP layer's own embed_tokens / shared_head.head
    bool vision = false;     // the vision tower of the preset (HF only)
    bool bias = false;       // q/k/v biases, as GLM-4-0414 has
};

// Writes the model into a fresh temp dir; returns its path (a .gguf file or an HF directory).
inline std::string synth(const ModelSpec& m) {
    auto shape = synth::glm_preset(m.preset);
    EXPECT_TRUE(shape.ok());
    shape->mtp = m.mtp;
    if (m.vision) {
        auto v = synth::glm_vision_preset(m.preset);
        EXPECT_TRUE(v.ok());
        if (v.ok()) shape->vision = *v;
    }
    synth::GlmSynthOptions o;
    o.weight_type = m.type;
    o.seed = m.seed;
    o.repeating = m.repeating;
    o.mtp_copies = m.mtp_copies;
    o.attn_bias = m.bias;
    const std::string path = test::make_temp_dir("glm") + (m.hf ? "/hf" : "/m.gguf");
    const Status st = m.hf ? synth::synth_glm_hf(path, *shape, o) : synth::synth_glm_gguf(path, *shape, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

struct Target {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

inline Target load_target(const std::string& path, uint32_t n_ctx = 256) {
    Target t;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = n_ctx;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "test", t.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

inline Result<std::unique_ptr<DraftHeadDrafter>> make_mtp(const Target& t, std::map<std::string, std::string> options = {},
                                                          bool rows_on_device = true) {
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("mtp", t.model->arch().desc->name);
    if (!e) return Error("no draft head answers --spec-type mtp for glm4");
    DraftHeadOptions o;
    o.options = std::move(options);
    o.rows_on_device = rows_on_device;
    o.kv.n_ctx = 256;
    return DraftHeadDrafter::create(*e, "mtp", t.model->shared_source(), *t.model, *t.kv, test::test_device(),
                                    test::test_pipelines(), o);
}

inline std::vector<int32_t> random_prompt(uint64_t seed, size_t len, int32_t hi) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(len);
    for (auto& t : p) t = int32_t(rng() % uint64_t(hi));
    return p;
}

inline GenerateParams greedy(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

}  // namespace tdm::testglm
