// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_image_test.cpp: GLM-OCR with images on a synthetic model with its vision
// tower (HF layout, tiny preset). The encoder (plugin glm-ocr-vision through tdm.encoder) is
// checked against the independent vision reference (support/glm_vision_reference.h); a prompt
// with image rows against the independent text reference fed those rows at the 3-D positions
// of host/image/image_positions.h (GLM-4V's rule, written apart from the engine's
// PromptImages); greedy MTP speculation on an image prompt against plain greedy decoding.
#include <gtest/gtest.h>

#include <cstring>

#include "common/fp16.h"
#include "engine/batch_engine.h"
#include "engine/prompt_images.h"
#include "formats/safetensors.h"
#include "glm_helpers.h"
#include "image/image_positions.h"
#include "model/encoder.h"
#include "support/glm_reference.h"
#include "support/glm_vision_reference.h"
#include "support/reference.h"

namespace tdm {
namespace {


struct VisionModel {
    std::string path;
    testglm::Target target;
    std::unique_ptr<Encoder> encoder;
    int seq = -1;  // the tests' one sequence of the pool
};

VisionModel& vision_model() {
    // destroyed before the test device, which its loading creates first
    static std::unique_ptr<VisionModel> vm = [] {
        auto m = std::make_unique<VisionModel>();
        testglm::ModelSpec spec;
        spec.hf = true;
        spec.type = DType::BF16;
        spec.vision = true;
        m->path = testglm::synth(spec);
        m->target = testglm::load_target(m->path, 512);
        if (m->target.kv) m->seq = *m->target.kv->add_sequence();
        auto e = Encoder::load(test::build_tree_plugins(), m->target.model->shared_source(), *m->target.model, test::test_device(),
                               test::test_pipelines());
        EXPECT_TRUE(e.ok()) << e.error().message();
        if (e.ok()) m->encoder = std::move(e).value();
        return m;
    }();
    return *vm;
}

// The tower's weights as the reference reads them, from the synthesized file.
ref::MapVisionWeights reference_weights(const std::string& dir, const ref::GlmVisionConfig& vc) {
    ref::MapVisionWeights w;
    auto st = SafetensorsModel::open(dir);
    EXPECT_TRUE(st.ok());
    for (const ref::VisionTensorSpec& s : ref::glm_vision_tensors(vc)) {
        const SafetensorsTensor* t = (*st)->find(s.name);
        EXPECT_NE(t, nullptr) << s.name;
        if (!t) continue;
        std::vector<float> v(t->nbytes / 2);
        for (size_t i = 0; i < v.size(); ++i) {
            uint16_t h;
            std::memcpy(&h, t->data + 2 * i, 2);
            v[i] = bf16_to_f32(h);
        }
        w.set(s.name, s.shape, std::move(v));
    }
    return w;
}

ref::GlmVisionConfig tiny_config() {
    const synth::GlmVisionShape v = *synth::glm_vision_preset("tiny");
    ref::GlmVisionConfig c;
    c.depth = v.depth;
    c.hidden = v.hidden;
    c.heads = v.heads;
    c.intermediate = v.intermediate;
    c.out_hidden = int(vision_model().target.model->info().n_embd);
    c.patch = v.patch;
    c.temporal_patch = v.temporal_patch;
    c.merge = v.merge;
    c.rms_eps = v.rms_eps;
    return c;
}

TEST(GlmImage, the_encoder_gives_the_rows_of_the_reference_tower) {
    VisionModel& vm = vision_model();
    ASSERT_TRUE(vm.encoder);
    const ref::GlmVisionConfig vc = tiny_config();
    const ref::MapVisionWeights w = reference_weights(vm.path, vc);
    EXPECT_EQ(vm.encoder->values_per_patch(), uint32_t(vc.patch_values()));
    for (auto [gh, gw] : {std::pair{4, 6}, std::pair{6, 4}, std::pair{2, 2}}) {
        const std::vector<float> patches = test::randn(size_t(gh * gw * vc.patch_values()), uint64_t(gh * 10 + gw));
        auto got = vm.encoder->encode(patches, 1, uint32_t(gh), uint32_t(gw));
        ASSERT_TRUE(got.ok()) << got.error().message();
        const std::vector<float> want = ref::glm_vision_forward(vc, w, patches, gh, gw);
        ASSERT_EQ(got->rows.size(), want.size());
        EXPECT_LT(ref::nmse(got->rows, want), 1e-9) << gh << "x" << gw;
        // GLM-4V's rule (spec §2.2): (0, row, col) over the merged grid, advance max(rows, cols)
        const int mh = gh / 2, mw = gw / 2;
        ASSERT_EQ(got->n_rows, uint32_t(mh * mw));
        for (int r = 0; r < mh * mw; ++r) {
            EXPECT_EQ(got->thw[size_t(3 * r)], 0);
            EXPECT_EQ(got->thw[size_t(3 * r + 1)], r / mw);
            EXPECT_EQ(got->thw[size_t(3 * r + 2)], r % mw);
        }
        EXPECT_EQ(got->advance, std::max(mh, mw));
    }
}

TEST(GlmImage, bad_patch_grids_are_refused_with_a_message) {
    VisionModel& vm = vision_model();
    ASSERT_TRUE(vm.encoder);
    const std::vector<float> patches(size_t(3 * 4) * vm.encoder->values_per_patch(), 0.5f);
    auto odd = vm.encoder->encode(patches, 1, 3, 4);
    ASSERT_FALSE(odd.ok());
    EXPECT_NE(odd.error().message().find("merge blocks"), std::string::npos) << odd.error().message();
    auto short_values = vm.encoder->encode(std::span<const float>(patches).first(10), 1, 2, 2);
    ASSERT_FALSE(short_values.ok());
    EXPECT_NE(short_values.error().message().find("patch values"), std::string::npos);
}

// A prompt of text, an image of gh x gw patches, more text; its tokens with the placeholders
// expanded, the images placed, and the encoder's rows.
struct ImagePrompt {
    std::vector<int32_t> tokens;
    std::shared_ptr<const PromptImages> images;
};

ImagePrompt image_prompt(const std::vector<std::pair<int, int>>& grids, uint64_t seed) {
    VisionModel& vm = vision_model();
    const tdm_encoder_info& info = vm.encoder->info();
    std::vector<int32_t> p = {5, 17, 3};
    std::vector<EncodedImage> encoded;
    for (auto [gh, gw] : grids) {
        const std::vector<float> patches =
            test::randn(size_t(gh * gw) * vm.encoder->values_per_patch(), seed + uint64_t(encoded.size()));
        auto e = vm.encoder->encode(patches, 1, uint32_t(gh), uint32_t(gw));
        EXPECT_TRUE(e.ok()) << e.error().message();
        encoded.push_back(std::move(e).value());
        p.insert(p.end(), {info.image_begin_token, info.image_token, info.image_end_token, 9, 11});
    }
    p.insert(p.end(), {21, 8});
    ImagePrompt ip;
    auto im = PromptImages::expand(p, info.image_token, std::move(encoded), &ip.tokens);
    EXPECT_TRUE(im.ok()) << im.error().message();
    ip.images = std::make_shared<const PromptImages>(std::move(im).value());
    return ip;
}

// One pass over the whole prompt: every row an output, each at its rotary position, the image
// rows in place. ForwardInput points into it.
struct PromptPass {
    std::vector<int32_t> positions, rows, pos4;
    std::vector<const float*> image_rows;

    explicit PromptPass(const ImagePrompt& ip) {
        for (uint32_t i = 0; i < uint32_t(ip.tokens.size()); ++i) {
            const auto p = ip.images->position4(i);
            pos4.insert(pos4.end(), p.begin(), p.end());
            positions.push_back(int32_t(i));
            rows.push_back(int32_t(i));
            image_rows.push_back(ip.images->row(i));
        }
    }
    ForwardInput input(const ImagePrompt& ip, int seq) const {
        return ForwardInput{ip.tokens, positions, seq, rows, {}, pos4, image_rows};
    }
};

TEST(GlmImage, image_rows_at_their_3d_positions_give_the_reference_logits) {
    VisionModel& vm = vision_model();
    ASSERT_TRUE(vm.encoder);
    for (const auto& grids : {std::vector<std::pair<int, int>>{{4, 6}}, std::vector<std::pair<int, int>>{{6, 2}, {4, 4}}}) {
        const ImagePrompt ip = image_prompt(grids, 40);
        const uint32_t n = uint32_t(ip.tokens.size());
        // the independent position rule
        std::vector<ImageGrid> g;
        for (auto [gh, gw] : grids) g.push_back({1, uint32_t(gh), uint32_t(gw)});
        auto want_pos = image_positions(ip.tokens, vm.encoder->info().image_token, g, 2);
        ASSERT_TRUE(want_pos.ok()) << want_pos.error().message();
        const PromptPass pass(ip);
        std::vector<int32_t> thw;
        for (uint32_t i = 0; i < n; ++i) {
            thw.insert(thw.end(), {want_pos->t[i], want_pos->h[i], want_pos->w[i]});
            EXPECT_EQ((std::array<int32_t, 3>{pass.pos4[4 * i], pass.pos4[4 * i + 1], pass.pos4[4 * i + 2]}),
                      (std::array<int32_t, 3>{want_pos->t[i], want_pos->h[i], want_pos->w[i]}))
                << "token " << i;
        }
        EXPECT_EQ(int64_t(ip.images->position4(n)[0]), want_pos->next) << "generation continues where HF's does";

        ref::GlmRefOptions ro;
        ro.f16_kv = true;  // as the KV pool stores K and V
        auto ref = ref::GlmReference::open(vm.path, ro);
        ASSERT_TRUE(ref.ok()) << ref.error().message();
        const ref::GlmOutput want = ref->forward_embedded(ip.tokens, pass.image_rows, thw);

        Runner runner(*vm.target.model, *vm.target.kv, test::test_device(), test::test_pipelines());
        const int seq = vm.seq;
        auto out = runner.forward(pass.input(ip, seq));
        ASSERT_TRUE(out.ok()) << out.error().message();
        const std::vector<float> got(out->logits, out->logits + size_t(n) * vm.target.model->info().n_vocab);
        EXPECT_LT(ref::nmse(got, want.logits), 1e-7);
        // the same prompt with the placeholders' own embeddings differs: the rows were used
        const ref::GlmOutput text = ref->forward_embedded(ip.tokens, std::vector<const float*>(n), thw);
        EXPECT_GT(ref::nmse(text.logits, want.logits), 1e-4);
        ASSERT_TRUE(vm.target.kv->truncate(seq, 0).ok());
    }
}

TEST(GlmImage, greedy_mtp_on_an_image_prompt_equals_plain_greedy) {
    VisionModel& vm = vision_model();
    ASSERT_TRUE(vm.encoder);
    const ImagePrompt ip = image_prompt({{4, 6}, {2, 4}}, 90);
    Runner runner(*vm.target.model, *vm.target.kv, test::test_device(), test::test_pipelines());
    runner.set_hidden_point(TDM_HIDDEN_POST_NORM);
    GenerateParams gp = testglm::greedy(24);
    gp.images = ip.images;
    gp.n_batch = 7;  // chunks that start and end inside the images
    const int seq = vm.seq;
    ASSERT_TRUE(vm.target.kv->truncate(seq, 0).ok());
    auto plain = generate(runner, nullptr, seq, ip.tokens, gp, {});
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    ASSERT_TRUE(vm.target.kv->truncate(seq, 0).ok());
    auto head = testglm::make_mtp(vm.target);
    ASSERT_TRUE(head.ok()) << head.error().message();
    std::vector<Drafter*> chain = {head->get()};
    SpecParams sp;
    sp.draft_max = 3;
    auto spec = generate_speculative(runner, nullptr, seq, ip.tokens, gp, chain, sp, {});
    ASSERT_TRUE(spec.ok()) << spec.error().message();
    EXPECT_EQ(spec->gen.tokens, plain->tokens);
    EXPECT_GT(spec->stats.rounds, 0u);
    // a prompt cache saves token ids, which do not say which image: refused with images
    GenerateParams cached = gp;
    cached.on_prefix = [](uint32_t) -> Status { return {}; };
    auto refused = generate(runner, nullptr, seq, ip.tokens, cached, {});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message().find("image rows"), std::string::npos) << refused.error().message();
    // and the image changed the text: the same tokens without their rows decode otherwise
    GenerateParams no_image = testglm::greedy(24);
    ASSERT_TRUE(vm.target.kv->truncate(seq, 0).ok());
    auto text = generate(runner, nullptr, seq, ip.tokens, no_image, {});
    ASSERT_TRUE(text.ok());
    EXPECT_NE(text->tokens, plain->tokens);
    ASSERT_TRUE(vm.target.kv->truncate(seq, 0).ok());
}

// The same tower as llama.cpp's mmproj GGUF beside a GGUF text model (same seed, so the same
// weights): the same rows, and the same logits for an image prompt, as the HF layout.
TEST(GlmImage, the_mmproj_gguf_layout_gives_the_hf_layouts_rows_and_logits) {
    VisionModel& vm = vision_model();
    ASSERT_TRUE(vm.encoder);
    testglm::ModelSpec spec;
    spec.type = DType::BF16;
    spec.vision = true;
    const std::string gguf = testglm::synth(spec);
    testglm::Target t = testglm::load_target(gguf, 512);
    ASSERT_TRUE(t.model);
    auto mmproj = ModelSource::open(synth::glm_mmproj_path(gguf));
    ASSERT_TRUE(mmproj.ok()) << mmproj.error().message();
    auto enc = Encoder::load(test::build_tree_plugins(), std::shared_ptr<const ModelSource>(std::move(mmproj).value()), *t.model,
                             test::test_device(), test::test_pipelines());
    ASSERT_TRUE(enc.ok()) << enc.error().message();
    EXPECT_EQ((*enc)->info().image_token, vm.encoder->info().image_token) << "found by its text in the GGUF vocabulary";
    EXPECT_EQ((*enc)->info().image_begin_token, vm.encoder->info().image_begin_token);
    const std::vector<float> patches = test::randn(size_t(4 * 6) * vm.encoder->values_per_patch(), 77);
    auto a = vm.encoder->encode(patches, 1, 4, 6);
    auto b = (*enc)->encode(patches, 1, 4, 6);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_LT(ref::nmse(b->rows, a->rows), 1e-12);
    EXPECT_EQ(b->thw, a->thw);

    // the GGUF text model (NeoX-permuted q/k) with the mmproj's rows at the same 3-D positions
    const ImagePrompt ip = image_prompt({{4, 6}}, 40);
    const uint32_t n = uint32_t(ip.tokens.size());
    const PromptPass pass(ip);
    std::vector<float> logits[2];
    for (int layout = 0; layout < 2; ++layout) {
        const testglm::Target& tt = layout ? t : vm.target;
        Runner runner(*tt.model, *tt.kv, test::test_device(), test::test_pipelines());
        const int seq = layout ? *tt.kv->add_sequence() : vm.seq;
        ASSERT_TRUE(tt.kv->truncate(seq, 0).ok());
        auto out = runner.forward(pass.input(ip, seq));
        ASSERT_TRUE(out.ok()) << out.error().message();
        logits[layout].assign(out->logits, out->logits + size_t(n) * tt.model->info().n_vocab);
        ASSERT_TRUE(tt.kv->truncate(seq, 0).ok());
    }
    EXPECT_LT(ref::nmse(logits[1], logits[0]), 1e-10);
}

// A server's slots reuse a finished request's KV for the next prompt that starts alike. Two
// prompts with the same tokens but different images share only the text before the first image
// row: batched in one engine, in turn and at once, each gets the tokens it gets alone.
TEST(GlmImage, sessions_with_the_same_tokens_and_different_images_share_no_image_rows) {
    VisionModel& vm = vision_model();
    ASSERT_TRUE(vm.encoder);
    const ImagePrompt a = image_prompt({{4, 6}}, 11), b = image_prompt({{4, 6}}, 12);
    ASSERT_EQ(a.tokens, b.tokens);
    std::vector<int32_t> alone[2];
    {
        Runner runner(*vm.target.model, *vm.target.kv, test::test_device(), test::test_pipelines());
        for (int i = 0; i < 2; ++i) {
            ASSERT_TRUE(vm.target.kv->truncate(vm.seq, 0).ok());
            GenerateParams gp = testglm::greedy(10);
            gp.images = (i ? b : a).images;
            auto r = generate(runner, nullptr, vm.seq, (i ? b : a).tokens, gp, {});
            ASSERT_TRUE(r.ok()) << r.error().message();
            alone[i] = r->tokens;
        }
        ASSERT_TRUE(vm.target.kv->truncate(vm.seq, 0).ok());
    }
    ASSERT_NE(alone[0], alone[1]) << "the images must make a difference for this test to mean anything";
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.n_seq_max = 2;
    auto kv = KvPool::create(test::test_device(), vm.target.model->attention_layers(), kc, "images");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    Runner runner(*vm.target.model, **kv, test::test_device(), test::test_pipelines());
    BatchEngineOptions o;
    o.n_batch = 16;
    auto e = BatchEngine::create(runner, nullptr, o);
    ASSERT_TRUE(e.ok()) << e.error().message();
    for (bool together : {false, true}) {
        std::vector<int32_t> got[2];
        int done = 0;
        auto add = [&](int i) {
            SessionRequest r;
            r.prompt = (i ? b : a).tokens;
            r.images = (i ? b : a).images;
            r.params = testglm::greedy(10);
            r.on_done = [&, i](const SessionResult& res) {
                EXPECT_EQ(to_string(res.stop_reason), "length") << res.error;
                got[i] = res.tokens;
                ++done;
            };
            (*e)->add(std::move(r));
        };
        add(0);
        if (together) add(1);
        for (int guard = 0; guard < 10000 && done < (together ? 2 : 1); ++guard) (*e)->step();
        if (!together) {
            add(1);  // the finished slot holds a's prompt: only its text before the image may be reused
            for (int guard = 0; guard < 10000 && done < 2; ++guard) (*e)->step();
        }
        ASSERT_EQ(done, 2);
        EXPECT_EQ(got[0], alone[0]) << (together ? "together" : "in turn");
        EXPECT_EQ(got[1], alone[1]) << (together ? "together" : "in turn");
    }
    EXPECT_GT((*e)->stats().prefix_hits, 0u) << "the text before the image was reused";
}

}  // namespace
}  // namespace tdm
