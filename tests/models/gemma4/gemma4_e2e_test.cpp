// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_e2e_test.cpp: Gemma 4 end to end through the gemma4 plugin on the tiny
// models of gemma4_tiny.h (real tensor names and keys, both layouts), checked against the
// plain-C++ reference forward (tests/support/gemma4_reference.h):
//   - the logits of every prompt position, prefilled in chunks, for each family (E2B-style PLE
//     + KV-shared + double-wide MLP, 31B-style K=V full layers, 26B-style MoE), GGUF and HF
//     (both config forms), F32/F16/BF16 weights; prompts are longer than the sliding window;
//   - greedy generation, each token the reference's argmax for the same prefix;
//   - speculative exactness: a draft model that always agrees (every verify accepted, verifies
//     crossing the window edge) and a perturbed one (rejections and KV rollback) give exactly
//     plain greedy output, as does an n-gram drafter;
//   - with the sliding-window layers in rings (KV pools of rows_max 16): a long generation whose
//     rings wrap many times gives bit for bit the logits of a cache that keeps every position,
//     speculation stays exact across the wrap, and a saved sequence (its last window) continues.
//
// To add a case: add a Case (preset, layout, type, config form).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/generate.h"
#include "engine/state_file.h"
#include "engine/state_file_format.h"
#include "gemma4_tiny.h"
#include "gemma4_tiny_runtime.h"
#include "speculative/draft_model.h"
#include "speculative/forced_drafter.h"
#include "speculative/plugin_drafter.h"
#include "support/device_fixture.h"
#include "support/prefill.h"
#include "support/fixtures.h"
#include "support/gemma4_reference.h"
#include "support/teacher_check.h"

namespace tdm {
namespace {

using Tokens = std::vector<int32_t>;
namespace g4 = test::g4;

using g4::greedy;
using g4::kRowsMax;
using g4::load;
using g4::Loaded;
using g4::random_tokens;

struct CaseGemma4E2e {
    const char* name;
    const char* preset;
    bool hf;
    DType type;
    bool per_layer_config;
};

// Writes the case's model; returns its path.
std::string write_case(const CaseGemma4E2e& c, const g4::Weights& w, const std::string& dir) {
    g4::WriteOptions o;
    o.type = c.type;
    o.per_layer_config = c.per_layer_config;
    const g4::Preset p = g4::preset(c.preset);
    return c.hf ? g4::write_hf(p, w, dir + "/hf", o) : g4::write_gguf(p, w, dir + "/m.gguf", o);
}

class Gemma4EndToEnd : public test::DeviceTest, public ::testing::WithParamInterface<CaseGemma4E2e> {};

TEST_P(Gemma4EndToEnd, vulkan_logits_and_greedy_tokens_match_the_reference) {
    const CaseGemma4E2e c = GetParam();
    const g4::Weights w = g4::make_weights(g4::preset(c.preset), 11, c.type);
    const std::string path = write_case(c, w, test::make_temp_dir("gemma4-e2e"));
    Loaded l = load(path, device(), pipelines());
    ASSERT_TRUE(l.runner);
    auto ref = ref::Gemma4Reference::open(path, {true});  // f16 K/V, as the runtime stores them
    ASSERT_TRUE(ref.ok()) << ref.error().message();
    const uint32_t n_vocab = l.model->info().n_vocab;
    ASSERT_EQ(int64_t(n_vocab), ref->hparams().n_vocab);

    // (1) every prompt position's logits; 21 tokens, the window is 8, chunks of 6
    const Tokens prompt = random_tokens(3, 21, 3, int32_t(n_vocab));
    const int seq = *l.kv->add_sequence();
    std::vector<float> got;
    auto st = test::prefill(*l.runner, seq, prompt, 6, true,
                      [&](const float* row, uint32_t n) { got.insert(got.end(), row, row + n); });
    ASSERT_TRUE(st.ok()) << st.error().message();
    const ref::Floats want = ref->forward(prompt);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(ref::nmse(got, want), 1e-8) << c.name;

    // (2) greedy continuation, teacher-checked against the reference
    ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
    auto gen = generate(*l.runner, nullptr, seq, prompt, greedy(24), {});
    ASSERT_TRUE(gen.ok()) << gen.error().message();
    ASSERT_EQ(gen->tokens.size(), 24u);
    Tokens all = prompt;
    all.insert(all.end(), gen->tokens.begin(), gen->tokens.end());
    const ref::Floats logits = ref->forward(all);
    test::expect_greedy_follows_teacher(prompt, gen->tokens, logits, n_vocab, c.name);
}

INSTANTIATE_TEST_SUITE_P(
    FamiliesAndLayouts, Gemma4EndToEnd,
    ::testing::Values(CaseGemma4E2e{"e2b_gguf_f32", "tiny-e2b", false, DType::F32, false},
                      CaseGemma4E2e{"e2b_hf_bf16", "tiny-e2b", true, DType::BF16, false},
                      CaseGemma4E2e{"e2b_hf_f16_per_layer_config", "tiny-e2b", true, DType::F16, true},
                      CaseGemma4E2e{"31b_gguf_f16", "tiny-31b", false, DType::F16, false},
                      CaseGemma4E2e{"31b_hf_bf16_per_layer_config", "tiny-31b", true, DType::BF16, true},
                      CaseGemma4E2e{"26b_gguf_f32", "tiny-26b", false, DType::F32, false},
                      CaseGemma4E2e{"26b_hf_bf16", "tiny-26b", true, DType::BF16, false}),
    [](const auto& p) { return std::string(p.param.name); });

// Weights with relative noise `eps` on every tensor: a draft that agrees often, not always.
g4::Weights perturbed(g4::Weights w, float eps, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto& [name, t] : w) {
        double ss = 0;
        for (float v : t.data) ss += double(v) * v;
        const float s = eps * float(std::sqrt(ss / double(t.data.size())));
        for (float& v : t.data) v += s * n(rng);
    }
    return w;
}

class Gemma4Speculative : public test::DeviceTest, public ::testing::WithParamInterface<const char*> {};

// Plain greedy, then speculative with the draft (a Gemma 4 model of the same vocabulary) and
// with an n-gram drafter, each on a fresh sequence: the tokens must be identical.
TEST_P(Gemma4Speculative, greedy_speculative_output_equals_plain_greedy_output) {
    const char* preset = GetParam();
    const g4::Preset p = g4::preset(preset);
    const g4::Weights w = g4::make_weights(p, 21, DType::F32);
    const std::string dir = test::make_temp_dir("gemma4-spec");
    const std::string target_path = g4::write_gguf(p, w, dir + "/target.gguf");
    const std::string same_path = g4::write_gguf(p, w, dir + "/same.gguf");
    const std::string noisy_path = g4::write_gguf(p, perturbed(w, 0.05f, 5), dir + "/noisy.gguf");
    Loaded t = load(target_path, device(), pipelines(), 256);
    ASSERT_TRUE(t.runner);

    const DrafterEntry* ngram = test::build_tree_plugins().find_drafter("ngram-simple");
    ASSERT_NE(ngram, nullptr);
    uint64_t accepted_same = 0, accepted_noisy = 0, drafted_noisy = 0;
    for (int k = 0; k < 4; ++k) {
        // prompts of 5..40 tokens; 48 generated, so verifies cross the window (8) many times
        const Tokens prompt = random_tokens(100 + uint64_t(k), size_t(5 + 12 * k), 3, 1024);
        int seq = *t.kv->add_sequence();
        auto plain = generate(*t.runner, nullptr, seq, prompt, greedy(48), {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        for (const std::string& draft_path : {same_path, noisy_path}) {
            Loaded d = load(draft_path, device(), pipelines(), 256);
            ASSERT_TRUE(d.model);
            DraftModelDrafter drafter(std::move(d.model), std::move(d.kv), device(), pipelines());
            Drafter* chain[] = {&drafter};
            SpecParams sp;
            sp.draft_max = 1 + k;  // 1..4 drafts per round
            seq = *t.kv->add_sequence();
            auto spec = generate_speculative(*t.runner, nullptr, seq, prompt, greedy(48), chain, sp, {});
            t.kv->free_sequence(seq);
            ASSERT_TRUE(spec.ok()) << spec.error().message();
            EXPECT_EQ(spec->gen.tokens, plain->tokens) << preset << " prompt " << k << " draft " << draft_path;
            (draft_path == same_path ? accepted_same : accepted_noisy) += spec->stats.accepted;
            if (draft_path == noisy_path) drafted_noisy += spec->stats.drafted;
        }
        auto ng = PluginDrafter::create(*ngram, {{"ngram_size_n", "2"}, {"draft_max", "4"}, {"n_vocab", "1024"}});
        ASSERT_TRUE(ng.ok()) << ng.error().message();
        Drafter* chain[] = {ng->get()};
        seq = *t.kv->add_sequence();
        auto spec = generate_speculative(*t.runner, nullptr, seq, prompt, greedy(48), chain, SpecParams{}, {});
        t.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << preset << " prompt " << k << " ngram-simple";
    }
    // the identical draft is always right; the noisy one is sometimes wrong (rollbacks happen)
    EXPECT_GT(accepted_same, 100u);
    EXPECT_GT(accepted_noisy, 0u);
    EXPECT_LT(accepted_noisy, drafted_noisy);
}

INSTANTIATE_TEST_SUITE_P(Families, Gemma4Speculative, ::testing::Values("tiny-e2b", "tiny-31b", "tiny-26b"),
                         [](const auto& p) {
                             std::string s = p.param;
                             for (char& ch : s)
                                 if (ch == '-') ch = '_';
                             return s;
                         });

class Gemma4Ring : public test::DeviceTest, public ::testing::WithParamInterface<const char*> {};
class Gemma4RingState : public test::DeviceTest {};

// A long generation (200 tokens after a 19-token prompt) with the sliding-window layers in
// rings of 32 positions (two blocks of 16), which wrap about seven times: the logits of every
// position equal bit for bit those of a pool that keeps every position; plain greedy is the
// same; speculative greedy with a draft model whose proposals are forced right with
// probability 0.6 (rejections roll back across the ring's wrap and the window edge) and with
// an n-gram drafter, draft_max 1..4,
// gives exactly plain greedy; and the sequence saved at 150 tokens (its last window) loads
// into the pool that keeps every position and continues identically.
TEST_P(Gemma4Ring, long_generation_in_rings_equals_a_full_cache_and_speculation_stays_exact) {
    const char* preset = GetParam();
    const g4::Preset p = g4::preset(preset);
    const g4::Weights w = g4::make_weights(p, 31, DType::F32);
    const std::string dir = test::make_temp_dir("gemma4-ring");
    const std::string target_path = g4::write_gguf(p, w, dir + "/target.gguf");
    const std::string noisy_path = g4::write_gguf(p, perturbed(w, 0.3f, 9), dir + "/noisy.gguf");
    const uint32_t n_ctx = 320;
    Loaded ring = load(target_path, device(), pipelines(), n_ctx);
    Loaded full = load(target_path, device(), pipelines(), n_ctx, 0);
    ASSERT_TRUE(ring.runner && full.runner);
    uint32_t n_rings = 0;
    for (uint32_t i = 0; i < ring.kv->n_layers(); ++i) {
        const KvLayerBinding* l = ring.kv->layer(i);
        EXPECT_EQ(l->ring_blocks, l->window ? 2u : 0u) << "layer " << i;
        n_rings += l->ring_blocks != 0;
    }
    ASSERT_GT(n_rings, 0u);
    EXPECT_LT(ring.kv->device_bytes(), full.kv->device_bytes());

    const Tokens prompt = random_tokens(41, 19, 3, 1024);
    int seq = *ring.kv->add_sequence();
    auto plain = generate(*ring.runner, nullptr, seq, prompt, greedy(200), {});
    ring.kv->free_sequence(seq);
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    ASSERT_EQ(plain->tokens.size(), 200u);
    {
        int fs = *full.kv->add_sequence();
        auto f = generate(*full.runner, nullptr, fs, prompt, greedy(200), {});
        full.kv->free_sequence(fs);
        ASSERT_TRUE(f.ok()) << f.error().message();
        EXPECT_EQ(f->tokens, plain->tokens) << preset << ": greedy in rings differs from a full cache";
    }
    // every position's logits, prefilled in chunks of 16: identical bits
    Tokens all = prompt;
    all.insert(all.end(), plain->tokens.begin(), plain->tokens.end());
    std::vector<float> logits[2];
    for (int i = 0; i < 2; ++i) {
        Loaded& l = i == 0 ? ring : full;
        const int s2 = *l.kv->add_sequence();
        auto st = test::prefill(*l.runner, s2, all, kRowsMax, true,
                          [&](const float* row, uint32_t n) { logits[i].insert(logits[i].end(), row, row + n); });
        l.kv->free_sequence(s2);
        ASSERT_TRUE(st.ok()) << st.error().message();
    }
    ASSERT_EQ(logits[0].size(), all.size() * ring.model->info().n_vocab);
    EXPECT_TRUE(logits[0] == logits[1]) << preset << ": logits in rings differ from a full cache";

    // speculative: each verify of up to draft_max + 1 rows stores into the ring before reading
    uint64_t accepted = 0, drafted = 0;
    Loaded d = load(noisy_path, device(), pipelines(), n_ctx);
    ASSERT_TRUE(d.model);
    DraftModelDrafter drafter(std::move(d.model), std::move(d.kv), device(), pipelines());
    for (int k = 1; k <= 4; ++k) {
        // the draft model does its work (its own rings roll back too) but its proposals are
        // replaced by the target's tokens kept right with probability 0.6: rejections at every
        // draft position, whatever the tiny models agree on
        ForcedDrafter forced(plain->tokens, prompt.size(), 0.6, ring.model->info().n_vocab, uint64_t(k), &drafter);
        Drafter* chain[] = {&forced};
        SpecParams sp;
        sp.draft_max = k;
        seq = *ring.kv->add_sequence();
        auto spec = generate_speculative(*ring.runner, nullptr, seq, prompt, greedy(200), chain, sp, {});
        ring.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << preset << " draft_max " << k;
        accepted += spec->stats.accepted;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(accepted, 50u);
    EXPECT_LT(accepted, drafted * 9 / 10);  // many rejections: rollbacks happened
    {
        const DrafterEntry* ngram = test::build_tree_plugins().find_drafter("ngram-simple");
        ASSERT_NE(ngram, nullptr);
        auto ng = PluginDrafter::create(*ngram, {{"ngram_size_n", "2"}, {"draft_max", "4"}, {"n_vocab", "1024"}});
        ASSERT_TRUE(ng.ok()) << ng.error().message();
        Drafter* chain[] = {ng->get()};
        SpecParams sp;
        sp.draft_max = 4;
        seq = *ring.kv->add_sequence();
        auto spec = generate_speculative(*ring.runner, nullptr, seq, prompt, greedy(200), chain, sp, {});
        ring.kv->free_sequence(seq);
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << preset << " ngram-simple";
    }

    // save at 150 tokens, load into the full cache, go on from there
    const uint32_t n_saved = 150;
    const Tokens head(all.begin(), all.begin() + n_saved);
    seq = *ring.kv->add_sequence();
    ASSERT_TRUE(test::prefill(*ring.runner, seq, head, kRowsMax, false, {}).ok());
    std::vector<uint8_t> bytes;
    auto st = ring.kv->export_sequence(seq, n_saved, [&](const uint8_t* b, uint64_t n) {
        bytes.insert(bytes.end(), b, b + n);
        return Status{};
    });
    ring.kv->free_sequence(seq);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(bytes.size(), ring.kv->sequence_bytes(n_saved));
    EXPECT_EQ(bytes.size(), full.kv->sequence_bytes(n_saved));  // the same byte form
    const int fs = *full.kv->add_sequence();
    size_t off = 0;
    st = full.kv->import_sequence(fs, n_saved, [&](uint8_t* b, uint64_t n) {
        std::memcpy(b, bytes.data() + off, n);
        off += n;
        return Status{};
    });
    ASSERT_TRUE(st.ok()) << st.error().message();
    // the last token is run again (a continuation needs its logits): one step back
    ASSERT_TRUE(full.kv->can_truncate(fs, n_saved - 1));
    EXPECT_FALSE(full.kv->can_truncate(fs, n_saved - 2));
    ASSERT_TRUE(full.kv->truncate(fs, n_saved - 1).ok());
    GenerateParams gp = greedy(int(all.size() - n_saved));
    gp.n_cached = n_saved - 1;
    auto cont = generate(*full.runner, nullptr, fs, head, gp, {});
    full.kv->free_sequence(fs);
    ASSERT_TRUE(cont.ok()) << cont.error().message();
    EXPECT_EQ(cont->tokens, Tokens(all.begin() + n_saved, all.end())) << preset << ": continued after a load";
}

// A state file of a sequence in rings (format 2: the windowed layers' last window) loads into
// a cache that keeps every position and continues like the original; a format-1 file, which
// had every position of every layer, is refused for a model with sliding-window layers.
TEST_F(Gemma4RingState, a_saved_state_in_rings_loads_and_continues_and_format_1_is_refused) {
    const g4::Preset p = g4::preset("tiny-31b");
    const g4::Weights w = g4::make_weights(p, 37, DType::F32);
    const std::string dir = test::make_temp_dir("gemma4-ring-state");
    const std::string path = g4::write_gguf(p, w, dir + "/m.gguf");
    Loaded ring = load(path, device(), pipelines(), 256);
    Loaded full = load(path, device(), pipelines(), 256, 0);
    ASSERT_TRUE(ring.runner && full.runner);
    const Tokens prompt = random_tokens(43, 70, 3, 1024);
    int seq = *ring.kv->add_sequence();
    auto whole = generate(*ring.runner, nullptr, seq, prompt, greedy(20), {});
    ring.kv->free_sequence(seq);
    ASSERT_TRUE(whole.ok()) << whole.error().message();

    seq = *ring.kv->add_sequence();
    const Tokens head(prompt.begin(), prompt.end() - 1);
    ASSERT_TRUE(test::prefill(*ring.runner, seq, head, kRowsMax, false, {}).ok());
    const std::string file = dir + "/s.state";
    auto saved = save_sequence_state(file, *ring.model, *ring.kv, seq, head);
    ring.kv->free_sequence(seq);
    ASSERT_TRUE(saved.ok()) << saved.error().message();
    EXPECT_EQ(saved->kv_bytes, ring.kv->sequence_bytes(uint32_t(head.size())));

    const int fs = *full.kv->add_sequence();
    auto loaded = load_sequence_state(file, *full.model, *full.kv, fs);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message();
    EXPECT_EQ(loaded->tokens, head);
    GenerateParams gp = greedy(20);
    gp.n_cached = uint32_t(head.size());
    auto cont = generate(*full.runner, nullptr, fs, prompt, gp, {});
    ASSERT_TRUE(cont.ok()) << cont.error().message();
    EXPECT_EQ(cont->tokens, whole->tokens);

    // the same header as format 1 (no windows, every position in the payload's size)
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    const int fd = ::open(file.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    auto h = read_state_header(fd, bytes.size());
    ::close(fd);
    ASSERT_TRUE(h.ok()) << h.error().message();
    const uint32_t header_bytes = uint32_t(encode_state_header(*h).size());
    StateHeader old = *h;
    old.version = 1;
    for (StateLayerShape& l : old.layers) l.window = 0;
    old.raw_bytes = old.expected_raw_bytes();
    const std::string v1 = dir + "/v1.state";
    std::ofstream(v1, std::ios::binary) << encode_state_header(old) << bytes.substr(header_bytes);
    auto refused = load_sequence_state(v1, *full.model, *full.kv, fs);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message().find("saved by an older tandem (state format 1)"), std::string::npos)
        << refused.error().message();
}

INSTANTIATE_TEST_SUITE_P(Families, Gemma4Ring, ::testing::Values("tiny-e2b", "tiny-31b"), [](const auto& p) {
    std::string s = p.param;
    for (char& ch : s)
        if (ch == '-') ch = '_';
    return s;
});

}  // namespace
}  // namespace tdm
