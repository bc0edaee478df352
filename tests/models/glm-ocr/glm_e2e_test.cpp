// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_e2e_test.cpp: the GLM-OCR text decoder end to end through the glm-ocr plugin
// on synthetic models in both layouts (GGUF as llama.cpp's converter writes it, q/k rows in
// NeoX order; HF as the checkpoint ships, adjacent pairs), checked against the plain-C++
// reference written from the spec (tests/support/glm_reference.h): the logits of every prompt
// position (prefilled in chunks, so attention crosses chunk boundaries) and 24 greedy steps.
#include "glm_helpers.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "formats/gguf.h"
#include "support/glm_reference.h"
#include "writers/gguf_writer.h"
#include "support/prefill.h"
#include "support/teacher_check.h"

namespace tdm {
namespace {

using testglm::ModelSpec;

struct GlmCase {
    const char* name;
    DType type;
    bool hf;
    bool bias = false;  // GLM-4-0414's q/k/v biases
};

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 42, 9, 400, 3, 255, 128, 64, 77, 5};

class GlmEndToEnd : public test::DeviceTest, public ::testing::WithParamInterface<GlmCase> {};

TEST_P(GlmEndToEnd, vulkan_logits_and_greedy_tokens_match_the_reference) {
    const GlmCase c = GetParam();
    ModelSpec spec{c.type, c.hf};
    spec.bias = c.bias;
    const std::string path = testglm::synth(spec);
    testglm::Target t = testglm::load_target(path, 128);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    ref::GlmRefOptions ro;
    ro.f16_kv = true;
    auto ref = ref::GlmReference::open(path, ro);
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const uint32_t n_vocab = t.model->info().n_vocab;
    ASSERT_EQ(int64_t(n_vocab), ref->hparams().n_vocab);

    std::vector<float> got;
    auto st = test::prefill(runner, seq, kPrompt, 5, true,
                            [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    ASSERT_TRUE(st.ok()) << st.error().message();
    const auto want = ref->forward(kPrompt);
    ASSERT_EQ(got.size(), want.logits.size());
    EXPECT_LT(ref::nmse(got, want.logits), 1e-7) << c.name;

    ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
    auto gen = generate(runner, nullptr, seq, kPrompt, testglm::greedy(24), {});
    ASSERT_TRUE(gen.ok()) << gen.error().message();
    ASSERT_EQ(gen->tokens.size(), 24u);
    std::vector<int32_t> all = kPrompt;
    all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
    const auto logits = ref->forward(all).logits;
    test::expect_greedy_follows_teacher(kPrompt, gen->tokens, logits, n_vocab, c.name);
}

INSTANTIATE_TEST_SUITE_P(LayoutsAndTypes, GlmEndToEnd,
                         ::testing::Values(GlmCase{"gguf_f32", DType::F32, false},
                                           GlmCase{"gguf_q8_0", DType::Q8_0, false},
                                           GlmCase{"gguf_q4_K", DType::Q4_K, false},
                                           GlmCase{"hf_f32", DType::F32, true},
                                           GlmCase{"hf_bf16", DType::BF16, true},
                                           GlmCase{"gguf_q8_0_bias", DType::Q8_0, false, true},
                                           GlmCase{"hf_bf16_bias", DType::BF16, true, true}),
                         [](const auto& p) { return std::string(p.param.name); });

// The GGUF (NeoX-permuted q/k, NeoX rotation) and HF (adjacent rotation) copies of one model
// are the same function: equal logits to rounding, and the same greedy tokens.
TEST_F(GlmEndToEnd, gguf_and_hf_layouts_of_the_same_model_give_the_same_logits_and_tokens) {
    std::vector<std::vector<float>> logits;
    std::vector<std::vector<int32_t>> tokens;
    for (bool hf : {false, true}) {
        testglm::Target t = testglm::load_target(testglm::synth({DType::F32, hf}), 128);
        ASSERT_TRUE(t.kv);
        Runner runner(*t.model, *t.kv, device(), pipelines());
        const int seq = *t.kv->add_sequence();
        std::vector<float> got;
        auto st = test::prefill(runner, seq, kPrompt, 13, true,
                                [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
        ASSERT_TRUE(st.ok()) << st.error().message();
        logits.push_back(got);
        ASSERT_TRUE(t.kv->truncate(seq, 0).ok());
        auto gen = generate(runner, nullptr, seq, kPrompt, testglm::greedy(24), {});
        ASSERT_TRUE(gen.ok()) << gen.error().message();
        tokens.push_back(gen->tokens);
    }
    EXPECT_LT(ref::nmse(logits[0], logits[1]), 1e-10);
    EXPECT_EQ(tokens[0], tokens[1]);
}

// A GLM-4-0414 style GGUF: no M-RoPE sections, half of each head rotated in adjacent pairs
// (rope.dimension_count = head_dim / 2), q/k/v biases. The synthetic GLM-OCR file with those
// keys replaced: the plugin and the reference both read the rotation from the keys.
TEST_F(GlmEndToEnd, a_glm4_0414_style_gguf_with_biases_and_partial_rope_matches_the_reference) {
    ModelSpec spec{DType::F32, false};
    spec.bias = true;
    spec.mtp = false;
    const std::string src = testglm::synth(spec);
    auto f = GgufFile::open(src);
    ASSERT_TRUE(f.ok());
    GgufWriter w;
    uint64_t head_dim = 0;
    for (const GgufKV& kv : (*f)->kvs()) {
        if (kv.key == "glm4.attention.key_length") head_dim = *(*f)->get_uint(kv.key);
        if (kv.key != "glm4.rope.dimension_sections" && kv.key != "glm4.rope.dimension_count") w.add_value(kv.key, kv.value);
    }
    ASSERT_GT(head_dim, 0u);
    w.add_u32("glm4.rope.dimension_count", uint32_t(head_dim / 2));
    for (const GgufTensorInfo& ti : (*f)->tensors())
        ASSERT_TRUE(w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims), (*f)->tensor_data(ti),
                                 ti.nbytes)
                        .ok());
    const std::string path = test::make_temp_dir("glm4-0414") + "/m.gguf";
    ASSERT_TRUE(w.write_file(path).ok());

    testglm::Target t = testglm::load_target(path, 128);
    ASSERT_TRUE(t.kv);
    Runner runner(*t.model, *t.kv, device(), pipelines());
    const int seq = *t.kv->add_sequence();
    ref::GlmRefOptions ro;
    ro.f16_kv = true;
    auto ref = ref::GlmReference::open(path, ro);
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    EXPECT_EQ(ref->hparams().n_rot, int64_t(head_dim / 2));
    std::vector<float> got;
    auto st = test::prefill(runner, seq, kPrompt, 5, true,
                            [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    ASSERT_TRUE(st.ok()) << st.error().message();
    const auto want = ref->forward(kPrompt);
    EXPECT_LT(ref::nmse(got, want.logits), 1e-7);

    // the biases matter: the reference without them (the same file minus the bias tensors) differs
    GgufWriter nb;
    for (const GgufKV& kv : (*f)->kvs())
        if (kv.key != "glm4.rope.dimension_sections" && kv.key != "glm4.rope.dimension_count") nb.add_value(kv.key, kv.value);
    nb.add_u32("glm4.rope.dimension_count", uint32_t(head_dim / 2));
    for (const GgufTensorInfo& ti : (*f)->tensors()) {
        if (ti.name.find(".bias") != std::string::npos) continue;
        ASSERT_TRUE(nb.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims), (*f)->tensor_data(ti),
                                  ti.nbytes)
                        .ok());
    }
    ASSERT_TRUE(nb.write_file(path + ".nobias.gguf").ok());
    auto plain = ref::GlmReference::open(path + ".nobias.gguf", ro);
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    EXPECT_GT(ref::nmse(plain->forward(kPrompt).logits, want.logits), 1e-4);
}

// GLM-OCR stops on <|user|> as well as <|endoftext|> (spec §4, §6.6). An HF checkpoint says so
// in config.json's text_config.eos_token_id and in generation_config.json; both lists end
// generation (tokens whose text is no known stop token are used here, so only the lists can
// make them stop).
TEST_F(GlmEndToEnd, an_hf_checkpoints_eos_token_id_lists_end_generation) {
    const std::string dir = testglm::synth({DType::F32, true});
    auto cfg = nlohmann::json::parse(test::read_file(dir + "/config.json"));
    cfg["text_config"]["eos_token_id"] = {300, 302};
    {
        std::ofstream(dir + "/config.json") << cfg.dump(2);
        std::ofstream(dir + "/generation_config.json") << R"({"eos_token_id": 301, "do_sample": false})";
    }
    auto m = Model::load(dir, test::build_tree_plugins(), test::test_device());
    ASSERT_TRUE(m.ok()) << m.error().message();
    const Tokenizer* tok = (*m)->tokenizer();
    ASSERT_NE(tok, nullptr);
    for (int32_t id : {300, 301, 302}) EXPECT_TRUE(tok->is_eog(id)) << id;
    for (int32_t id : {299, 303}) EXPECT_FALSE(tok->is_eog(id)) << id;
}

}  // namespace
}  // namespace tdm
