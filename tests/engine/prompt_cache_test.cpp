// SPDX-License-Identifier: Apache-2.0
// tests/engine/prompt_cache_test.cpp: sequence-state files (engine/state_file.h)
// on synthetic Qwen3 and Qwen3.5-hybrid models: a state saved at the prompt
// hook and restored into a fresh pool (another block size) continues a longer
// prompt with exactly the tokens and logits of a full prefill; a prompt that
// diverges midway reuses the shared part; every refusal (another model, KV
// type, corrupt or truncated payload, bad magic, newer version, a FIFO or a
// directory) is a clear error that leaves the pool usable.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "engine/continuation.h"
#include "engine/generate.h"
#include "engine/state_file.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

std::string qwen3_model_prompt_cache(int n_layer = 2) {
    synth::Qwen3Shape s;
    s.n_vocab = 768;
    s.n_embd = 128;
    s.n_layer = n_layer;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 32;
    s.n_ff = 256;
    s.n_ctx_train = 4096;
    synth::Qwen3SynthOptions o;
    o.weight_type = DType::Q8_0;
    o.seed = 3;
    const std::string path = test::make_temp_dir("pcache-qwen3") + "/m.gguf";
    EXPECT_TRUE(synth::synth_qwen3_gguf(path, s, o).ok());
    return path;
}

std::string qwen35_model_prompt_cache() {
    auto shape = synth::qwen35_preset("tiny");
    EXPECT_TRUE(shape.ok());
    synth::Qwen35SynthOptions o;
    o.weight_type = DType::Q8_0;
    o.seed = 4;
    const std::string path = test::make_temp_dir("pcache-qwen35") + "/m.gguf";
    EXPECT_TRUE(synth::synth_qwen35_gguf(path, *shape, o).ok());
    return path;
}

struct LoadedPromptCache {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;
    int seq = -1;
};

LoadedPromptCache load_prompt_cache(const std::string& path, uint32_t block_size = 16, bool f16 = true) {
    LoadedPromptCache l;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.block_size = block_size;
    kc.f16 = f16;
    kc.n_checkpoints = 4;
    auto kv = KvPool::create(test::test_device(), l.model->attention_layers(), kc, "test", l.model->recurrent_states());
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (!kv.ok()) return l;
    l.kv = std::move(kv).value();
    l.runner = std::make_unique<Runner>(*l.model, *l.kv, test::test_device(), test::test_pipelines());
    l.seq = *l.kv->add_sequence();
    return l;
}

std::vector<int32_t> tokens(uint32_t seed, size_t n) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = int32_t((seed * 7919u + i * 104729u + (i * i) % 97) % 500);  // inside every test vocabulary
    return t;
}

GenerateParams greedy_prompt_cache(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    gp.n_batch = 16;
    return gp;
}

struct Run {
    std::vector<int32_t> tokens;
    std::vector<float> logits;  // rows of the positions prefilled, then one per generated token
};

Run run(LoadedPromptCache& l, std::span<const int32_t> prompt, GenerateParams gp) {
    Run r;
    auto g = generate(*l.runner, nullptr, l.seq, prompt, gp, {},
                      [&](const float* row, uint32_t n) { r.logits.insert(r.logits.end(), row, row + n); }, true);
    EXPECT_TRUE(g.ok()) << g.error().message();
    if (g.ok()) r.tokens = g->tokens;
    return r;
}

// Saves the state of `l` at the prompt hook while generating `prompt`.
void save_at_prefix(LoadedPromptCache& l, std::span<const int32_t> prompt, const std::string& file) {
    GenerateParams gp = greedy_prompt_cache(4);
    bool saved = false;
    gp.on_prefix = [&](uint32_t n_kv) -> Status {
        TDM_TRY(save_sequence_state(file, *l.model, *l.kv, l.seq, prompt.first(n_kv)));
        saved = true;
        return {};
    };
    (void)run(l, prompt, gp);
    ASSERT_TRUE(saved);
}

// Restores `file` into a fresh pool of another block size and continues `prompt`;
// checks tokens and every logit row against a full prefill of it.
void expect_restore_matches_full_prefill(const std::string& model, std::span<const int32_t> prompt,
                                         const std::string& file, uint32_t want_reused) {
    LoadedPromptCache fresh = load_prompt_cache(model);
    const Run want = run(fresh, prompt, greedy_prompt_cache(12));

    LoadedPromptCache l = load_prompt_cache(model, 8);
    auto st = load_sequence_state(file, *l.model, *l.kv, l.seq);
    ASSERT_TRUE(st.ok()) << st.error().message();
    const uint32_t n = resumable_prefix(*l.kv, l.seq, st->tokens, prompt);
    EXPECT_EQ(n, want_reused);
    ASSERT_TRUE(l.kv->truncate(l.seq, n).ok());
    GenerateParams gp = greedy_prompt_cache(12);
    gp.n_cached = n;
    const Run got = run(l, prompt, gp);
    EXPECT_EQ(got.tokens, want.tokens);
    const size_t n_vocab = l.model->info().n_vocab;
    ASSERT_EQ(got.logits.size() + size_t(n) * n_vocab, want.logits.size());
    EXPECT_TRUE(std::equal(got.logits.begin(), got.logits.end(), want.logits.begin() + std::ptrdiff_t(n * n_vocab)))
        << "logits differ from a full prefill";
}

class PromptCache : public test::DeviceTest {};

TEST_F(PromptCache, qwen3_restored_state_continues_a_longer_prompt_exactly_as_a_full_prefill) {
    const std::string model = qwen3_model_prompt_cache();
    const std::string file = test::make_temp_dir("pcache") + "/q3.state";
    const auto p = tokens(1, 45);
    {
        LoadedPromptCache l = load_prompt_cache(model);
        save_at_prefix(l, p, file);
    }
    auto longer = p;
    for (int32_t t : tokens(2, 30)) longer.push_back(t);
    expect_restore_matches_full_prefill(model, longer, file, uint32_t(p.size() - 1));
    // the same prompt again: everything but its last token comes from the file
    expect_restore_matches_full_prefill(model, p, file, uint32_t(p.size() - 1));
}

TEST_F(PromptCache, qwen3_prompt_that_diverges_midway_reuses_the_shared_part) {
    const std::string model = qwen3_model_prompt_cache();
    const std::string file = test::make_temp_dir("pcache") + "/q3.state";
    const auto p = tokens(3, 50);
    {
        LoadedPromptCache l = load_prompt_cache(model);
        save_at_prefix(l, p, file);
    }
    std::vector<int32_t> other(p.begin(), p.begin() + 21);
    for (int32_t t : tokens(4, 25)) other.push_back(t);
    ASSERT_NE(other[21], p[21]);
    expect_restore_matches_full_prefill(model, other, file, 21);
}

TEST_F(PromptCache, qwen35_hybrid_restores_attention_kv_and_recurrent_state_exactly) {
    const std::string model = qwen35_model_prompt_cache();
    const std::string file = test::make_temp_dir("pcache") + "/q35.state";
    const auto p = tokens(5, 37);
    {
        LoadedPromptCache l = load_prompt_cache(model);
        save_at_prefix(l, p, file);
    }
    auto longer = p;
    for (int32_t t : tokens(6, 19)) longer.push_back(t);
    expect_restore_matches_full_prefill(model, longer, file, uint32_t(p.size() - 1));
    // recurrent state exists at the saved length only: a divergent prompt starts over, still exact
    std::vector<int32_t> other(p.begin(), p.begin() + 10);
    for (int32_t t : tokens(7, 12)) other.push_back(t);
    expect_restore_matches_full_prefill(model, other, file, 0);
}

// ------------------------------------------------------------------ refusals

std::string read_bytes(const std::string& path) { return test::read_file(path); }
std::string write_bytes_prompt_cache(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
}

class PromptCacheRefusal : public test::DeviceTest {
protected:
    static void SetUpTestSuite() {
        model_ = new std::string(qwen3_model_prompt_cache());
        dir_ = new std::string(test::make_temp_dir("pcache-refuse"));
        LoadedPromptCache l = load_prompt_cache(*model_);
        save_at_prefix(l, tokens(9, 30), *dir_ + "/good.state");
    }
    static void TearDownTestSuite() {
        delete model_;
        delete dir_;
    }
    // Loads `file` into a pool that held a sequence; the error must contain `want`,
    // and the pool must still generate what a fresh one does.
    void expect_refused(const std::string& file, const std::string& want, bool f16 = true,
                        const std::string* model = nullptr) {
        LoadedPromptCache l = load_prompt_cache(model ? *model : *model_, 16, f16);
        auto r = load_sequence_state(file, *l.model, *l.kv, l.seq);
        ASSERT_FALSE(r.ok()) << "loaded " << file;
        EXPECT_NE(r.error().message().find(want), std::string::npos) << r.error().message();
        EXPECT_NE(r.error().message().find(file), std::string::npos) << "the message names the file";
        ASSERT_TRUE(l.kv->truncate(l.seq, 0).ok());
        const auto prompt = tokens(10, 9);
        LoadedPromptCache fresh = load_prompt_cache(model ? *model : *model_, 16, f16);
        EXPECT_EQ(run(l, prompt, greedy_prompt_cache(5)).tokens, run(fresh, prompt, greedy_prompt_cache(5)).tokens);
    }
    std::string good() const { return read_bytes(*dir_ + "/good.state"); }
    std::string path(const std::string& name) const { return *dir_ + "/" + name; }
    static std::string* model_;
    static std::string* dir_;
};
std::string* PromptCacheRefusal::model_ = nullptr;
std::string* PromptCacheRefusal::dir_ = nullptr;

TEST_F(PromptCacheRefusal, a_good_file_loads) {
    LoadedPromptCache l = load_prompt_cache(*model_);
    auto r = load_sequence_state(path("good.state"), *l.model, *l.kv, l.seq);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->tokens.size(), 29u);
    EXPECT_EQ(l.kv->reserved_tokens(l.seq), 32u);
}

TEST_F(PromptCacheRefusal, another_model_is_named_with_both_fingerprints) {
    const std::string other = qwen3_model_prompt_cache(3);
    expect_refused(path("good.state"), "made for model qwen3 m.gguf (fingerprint ", true, &other);
}

TEST_F(PromptCacheRefusal, another_kv_type_is_refused) {
    expect_refused(path("good.state"), "KV type f16, this run uses f32", false);
}

TEST_F(PromptCacheRefusal, a_corrupt_payload_byte_fails_the_checksum) {
    std::string b = good();
    b[b.size() - 2] ^= 0x10;  // inside zstd's content checksum, the frame's last 4 bytes
    expect_refused(write_bytes_prompt_cache(path("checksum.state"), b), "corrupt: zstd checksum mismatch");
    b = good();
    b[b.size() / 2] ^= 0x5a;  // inside the compressed data
    expect_refused(write_bytes_prompt_cache(path("middle.state"), b), "corrupt");
}

TEST_F(PromptCacheRefusal, a_truncated_file_says_where_it_ends) {
    const std::string b = good();
    const std::string cut = b.substr(0, b.size() - 100);
    expect_refused(write_bytes_prompt_cache(path("cut.state"), cut),
                   fmt::format("truncated at byte {} of {}", cut.size(), b.size()));
    expect_refused(write_bytes_prompt_cache(path("tiny.state"), b.substr(0, 40)), "truncated at byte 40");
    expect_refused(write_bytes_prompt_cache(path("empty.state"), ""), "truncated at byte 0");
}

TEST_F(PromptCacheRefusal, bad_magic_and_a_newer_version_are_refused) {
    std::string b = good();
    b[0] = 'X';
    expect_refused(write_bytes_prompt_cache(path("magic.state"), b), "not a tandem state file (bad magic");
    b = good();
    b[8] = 3;  // format version
    expect_refused(write_bytes_prompt_cache(path("v3.state"), b), "made by a newer tandem: format version 3, this one reads 2");
    b = good();
    b[20] ^= 1;  // inside the fingerprint, under the header checksum
    expect_refused(write_bytes_prompt_cache(path("header.state"), b), "corrupt header");
}

TEST_F(PromptCacheRefusal, a_fifo_or_a_directory_is_refused_without_blocking) {
    const std::string fifo = path("fifo.state");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    expect_refused(fifo, "a FIFO, not a state file");
    const std::string dir = path("dir.state");
    std::filesystem::create_directory(dir);
    expect_refused(dir, "a directory, not a state file");
    expect_refused(path("absent.state"), "cannot open");
}

}  // namespace
}  // namespace tdm
