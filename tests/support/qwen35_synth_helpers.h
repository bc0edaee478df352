/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/qwen35_synth_helpers.h: small helpers shared by the synthetic Qwen3.5 tests: presets,
// opening files, decoding whole tensors, and making a model plus its reference in one call.
#pragma once

#include <gtest/gtest.h>

#include "common/quant.h"
#include "formats/model_source.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "support/fixtures.h"
#include "support/qwen35_reference.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace tdm::test35 {

inline synth::Qwen35Shape preset(const char* name) {
    auto s = synth::qwen35_preset(name);
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : synth::Qwen35Shape{};
}

inline std::unique_ptr<ModelSource> open_source(const std::string& path) {
    auto r = ModelSource::open(path);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(*r) : nullptr;
}

// Every element of a tensor as f32 (ggml order: ne[0] fastest).
inline std::vector<float> values(const SourceTensor& t) {
    const int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t.type), t.data, out.data(), n);
    return out;
}

// Synthesizes a GGUF (or, with hf, an HF directory) into a fresh temp dir; returns its path.
inline std::string synth_model(const synth::Qwen35Shape& s, const synth::Qwen35SynthOptions& o, bool hf = false) {
    const std::string path = test::make_temp_dir("qwen35") + (hf ? "/hf" : "/m.gguf");
    const Status st = hf ? synth::synth_qwen35_hf(path, s, o) : synth::synth_qwen35_gguf(path, s, o);
    // No ASSERT in a value-returning helper: throwing fails the calling test with the message.
    if (!st.ok()) throw std::runtime_error(st.error().message());
    return path;
}

inline ref::Qwen35Reference open_reference(const std::string& path, ref::Qwen35RefOptions ro = {}) {
    auto r = ref::Qwen35Reference::open(path, ro);
    if (!r.ok()) throw std::runtime_error(r.error().message());
    return std::move(*r);
}

inline ref::Qwen35Reference make(const synth::Qwen35Shape& s, const synth::Qwen35SynthOptions& o, bool hf = false,
                                 ref::Qwen35RefOptions ro = {}) {
    return open_reference(synth_model(s, o, hf), ro);
}

inline std::span<const float> row(const ref::Floats& x, int64_t n_cols, int64_t i) {
    return std::span<const float>(x.data() + i * n_cols, size_t(n_cols));
}

}  // namespace tdm::test35
