// SPDX-License-Identifier: Apache-2.0
// tests/models/llama/llama_synth_test.cpp: the llama synthesizer (plugins/llama/synth): the
// GGUF holds the HF q/k rows permuted as llama.cpp's converter permutes them and the other
// tensors as they are; rope_freqs holds the llama3 divisors; the request parser names bad
// options.
#include <gtest/gtest.h>

#include <set>

#include "common/quant.h"
#include "formats/model_source.h"
#include "llama/synth/llama_request.h"
#include "llama/synth/llama_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

std::vector<float> llama_values(const ModelSource& src, const std::string& name) {
    const SourceTensor* t = src.find(name);
    EXPECT_NE(t, nullptr) << name;
    if (!t) return {};
    const int64_t n = t->ne[0] * t->ne[1];
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t->type), t->data, out.data(), n);
    return out;
}

TEST(LlamaSynth, the_gguf_rows_are_the_hf_rows_permuted_as_the_converter_does) {
    // the converter's permute: reshape(n_head, 2, D/2, E).swapaxes(1, 2): GGUF row 2j + s of
    // a head is HF row s * D/2 + j
    for (int64_t r = 0; r < 32; ++r) EXPECT_EQ(synth::llama_gguf_row(r, 16), (r / 16) * 16 + 2 * (r % 8) + (r % 16) / 8);
    std::set<int64_t> rows;
    for (int64_t r = 0; r < 64; ++r) rows.insert(synth::llama_gguf_row(r, 16));
    EXPECT_EQ(rows.size(), 64u);

    const std::string dir = test::make_temp_dir("llama-synth");
    const synth::LlamaShape shape = *synth::llama_preset("tiny");
    synth::LlamaSynthOptions o;
    ASSERT_TRUE(synth::synth_llama_gguf(dir + "/m.gguf", shape, o).ok());
    ASSERT_TRUE(synth::synth_llama_hf(dir + "/hf", shape, o).ok());
    auto g = ModelSource::open(dir + "/m.gguf");
    auto h = ModelSource::open(dir + "/hf");
    ASSERT_TRUE(g.ok() && h.ok());
    const int64_t E = shape.n_embd, D = shape.head_dim;
    for (const auto& [gname, hname] : {std::pair{"blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight"},
                                       std::pair{"blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight"}}) {
        const std::vector<float> gv = llama_values(**g, gname), hv = llama_values(**h, hname);
        ASSERT_EQ(gv.size(), hv.size());
        for (int64_t r = 0; r < int64_t(hv.size()) / E; ++r)
            for (int64_t c = 0; c < E; ++c)
                ASSERT_EQ(gv[size_t(synth::llama_gguf_row(r, D) * E + c)], hv[size_t(r * E + c)]) << gname << " row " << r;
    }
    EXPECT_EQ(llama_values(**g, "blk.0.attn_v.weight"), llama_values(**h, "model.layers.0.self_attn.v_proj.weight"));
    EXPECT_EQ(llama_values(**g, "output.weight"), llama_values(**h, "lm_head.weight"));

    // rope_freqs: 1 at high frequencies, the factor at low ones, between them in the middle
    const std::vector<float> f = llama_values(**g, "rope_freqs.weight");
    ASSERT_EQ(f.size(), size_t(D / 2));
    EXPECT_EQ(f.front(), 1.0f);
    EXPECT_EQ(f.back(), shape.rope_scaling->factor);
    EXPECT_EQ(std::count_if(f.begin(), f.end(), [&](float x) { return x > 1.0f && x < shape.rope_scaling->factor; }), 1);
}

TEST(LlamaSynth, the_request_writes_presets_and_names_bad_options) {
    const std::string dir = test::make_temp_dir("llama-request");
    auto ok = synth::synthesize_llama_request("llama", dir + "/t.gguf", {{"type", "f16"}, {"tied", "true"},
                                                                         {"rope-scaling", "false"}});
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_NE(ok->find("llama tiny, 2 layers"), std::string::npos) << *ok;
    EXPECT_NE(ok->find("tied"), std::string::npos) << *ok;
    auto g = ModelSource::open(dir + "/t.gguf");
    ASSERT_TRUE(g.ok());
    EXPECT_EQ((*g)->find("output.weight"), nullptr);
    EXPECT_EQ((*g)->find("rope_freqs.weight"), nullptr);

    auto unknown = synth::synthesize_llama_request("llama", dir + "/u.gguf", {{"mtp", "true"}});
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message().find("no option --mtp"), std::string::npos);
    auto preset = synth::synthesize_llama_request("llama", dir + "/p.gguf", {{"preset", "70b"}});
    ASSERT_FALSE(preset.ok());
    EXPECT_NE(preset.error().message().find("known: tiny, 1b, 8b"), std::string::npos) << preset.error().message();
    auto hf_q8 = synth::synthesize_llama_request("llama", dir + "/hfq", {{"format", "hf"}, {"type", "q8_0"}});
    ASSERT_FALSE(hf_q8.ok());
    auto tied_rep = synth::synthesize_llama_request("llama", dir + "/r.gguf", {{"repeating", "true"}, {"tied", "true"}});
    ASSERT_FALSE(tied_rep.ok());
    EXPECT_NE(tied_rep.error().message().find("cannot be tied"), std::string::npos);
}

}  // namespace
}  // namespace tdm
