// SPDX-License-Identifier: Apache-2.0
// tests/models/eagle3/eagle3_targets.cpp: the tiny targets and their heads (eagle3_targets.h).
#include "eagle3_targets.h"

#include <gtest/gtest.h>

#include "eagle3/synth/eagle3_synth.h"
#include "llama/synth/llama_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"

namespace tdm::test::eagle3 {

std::string write_target(Target t, const std::string& dir) {
    Status st;
    std::string path;
    if (t == Target::qwen3) {
        synth::Qwen3Shape s = *synth::qwen3_preset("tiny");
        s.n_layer = 4;
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::F16;
        path = dir + "/qwen3.gguf";
        st = synth::synth_qwen3_gguf(path, s, o);
    } else {
        synth::LlamaShape s = *synth::llama_preset("tiny");
        s.n_layer = 4;
        s.rope_scaling.reset();
        synth::LlamaSynthOptions o;
        o.weight_type = DType::F16;
        path = dir + "/llama.gguf";
        st = synth::synth_llama_gguf(path, s, o);
    }
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

std::string write_head(const std::string& target, bool hf, const std::string& dir, unsigned seed, bool rope_scaling) {
    auto shape = synth::eagle3_shape_for_target(target);
    EXPECT_TRUE(shape.ok()) << shape.error().message();
    if (!shape.ok()) return "";
    if (rope_scaling) shape->rope_scaling = synth::Eagle3RopeScaling{8.0f, 1.0f, 4.0f, 32};
    synth::Eagle3SynthOptions o;
    o.weight_type = DType::F16;
    o.seed = seed;
    const std::string path = dir + (hf ? "/eagle3-hf" : "/eagle3.gguf") + (rope_scaling ? "-scaled" : "");
    const Status st = hf ? synth::synth_eagle3_hf(path, *shape, o) : synth::synth_eagle3_gguf(path, *shape, o);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

}  // namespace tdm::test::eagle3
