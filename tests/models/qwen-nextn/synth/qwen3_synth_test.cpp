// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/synth/qwen3_synth_test.cpp: the synthetic Qwen3 files: GGUF and HF outputs open through
// ModelSource with exactly the expected names, shapes, types and metadata; HF and GGUF hold the
// same values; options (seed, tied, drafts, shape fallback) do what they say; bad options are
// refused with clear errors; the 0.6b Q8_0 file is quick to make.
// To add a check on a new option: synthesize tiny into make_temp_dir() and inspect it with
// ModelSource, as the tests below do.
#include <gtest/gtest.h>

#include "common/quant.h"
#include "formats/expect_error.h"
#include "formats/model_source.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"
#include "synth/synth_files.h"
#include "synth/synth_vocab.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

using namespace tdm;
using namespace tdm::synth;
using tdm::test::fails_with;

namespace {

Qwen3Shape preset(const char* name) {
    auto s = qwen3_preset(name);
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : Qwen3Shape{};
}

std::unique_ptr<ModelSource> open_source(const std::string& path) {
    auto r = ModelSource::open(path);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(*r) : nullptr;
}

std::vector<float> values(const SourceTensor& t) {
    const int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t.type), t.data, out.data(), n);
    return out;
}

struct Expected {
    std::vector<int64_t> ne;  // GGUF order
    std::string hf;
};

// The complete tensor table of a shape, written out by hand from docs/formats/gguf.md A.9.
std::map<std::string, Expected> expected_tensors(const Qwen3Shape& s, bool tied) {
    const int64_t q = int64_t(s.n_head) * s.head_dim, kv = int64_t(s.n_head_kv) * s.head_dim;
    std::map<std::string, Expected> m;
    m["token_embd.weight"] = {{s.n_embd, s.n_vocab}, "model.embed_tokens.weight"};
    m["output_norm.weight"] = {{s.n_embd}, "model.norm.weight"};
    if (!tied) m["output.weight"] = {{s.n_embd, s.n_vocab}, "lm_head.weight"};
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".", h = "model.layers." + std::to_string(il) + ".";
        m[g + "attn_norm.weight"] = {{s.n_embd}, h + "input_layernorm.weight"};
        m[g + "attn_q.weight"] = {{s.n_embd, q}, h + "self_attn.q_proj.weight"};
        m[g + "attn_k.weight"] = {{s.n_embd, kv}, h + "self_attn.k_proj.weight"};
        m[g + "attn_v.weight"] = {{s.n_embd, kv}, h + "self_attn.v_proj.weight"};
        m[g + "attn_output.weight"] = {{q, s.n_embd}, h + "self_attn.o_proj.weight"};
        m[g + "attn_q_norm.weight"] = {{s.head_dim}, h + "self_attn.q_norm.weight"};
        m[g + "attn_k_norm.weight"] = {{s.head_dim}, h + "self_attn.k_norm.weight"};
        m[g + "ffn_norm.weight"] = {{s.n_embd}, h + "post_attention_layernorm.weight"};
        m[g + "ffn_gate.weight"] = {{s.n_embd, s.n_ff}, h + "mlp.gate_proj.weight"};
        m[g + "ffn_up.weight"] = {{s.n_embd, s.n_ff}, h + "mlp.up_proj.weight"};
        m[g + "ffn_down.weight"] = {{s.n_ff, s.n_embd}, h + "mlp.down_proj.weight"};
    }
    return m;
}

void expect_table(const ModelSource& src, const Qwen3Shape& s, bool tied, bool hf_names) {
    const auto want = expected_tensors(s, tied);
    EXPECT_EQ(src.tensors().size(), want.size());
    for (const auto& [gguf_name, e] : want) {
        const std::string name = hf_names ? e.hf : gguf_name;
        const SourceTensor* t = src.find(name);
        ASSERT_TRUE(t) << name;
        ASSERT_EQ(t->n_dims, int(e.ne.size())) << name;
        for (size_t i = 0; i < e.ne.size(); ++i) EXPECT_EQ(t->ne[i], e.ne[i]) << name << " dim " << i;
    }
}

}  // namespace

TEST(Qwen3Synth, presets_have_the_documented_shapes) {
    const Qwen3Shape tiny = preset("tiny"), small = preset("small"), b06 = preset("0.6b");
    EXPECT_EQ(tiny.n_vocab, 512);
    EXPECT_EQ(tiny.n_embd, 64);
    EXPECT_EQ(tiny.n_layer, 2);
    EXPECT_EQ(tiny.n_head, 4);
    EXPECT_EQ(tiny.n_head_kv, 2);
    EXPECT_EQ(tiny.head_dim, 16);
    EXPECT_EQ(tiny.n_ff, 128);
    EXPECT_EQ(small.n_vocab, 4096);
    EXPECT_EQ(small.n_embd, 256);
    EXPECT_EQ(small.n_layer, 4);
    EXPECT_EQ(small.n_head, 8);
    EXPECT_EQ(small.n_head_kv, 4);
    EXPECT_EQ(small.head_dim, 32);
    EXPECT_EQ(small.n_ff, 512);
    EXPECT_EQ(b06.n_vocab, 151936);
    EXPECT_EQ(b06.n_embd, 1024);
    EXPECT_EQ(b06.n_layer, 28);
    EXPECT_EQ(b06.n_head, 16);
    EXPECT_EQ(b06.n_head_kv, 8);
    EXPECT_EQ(b06.head_dim, 128);
    EXPECT_EQ(b06.n_ff, 3072);
    EXPECT_TRUE(b06.tied_embeddings);
    EXPECT_FALSE(tiny.tied_embeddings);
    EXPECT_EQ(tiny.rope_theta, 1e6f);
    EXPECT_EQ(tiny.rms_eps, 1e-6f);
    EXPECT_EQ(qwen3_preset_names().size(), 3u);
}

TEST(Qwen3Synth, gguf_has_converter_metadata_and_exactly_the_qwen3_tensors) {
    const Qwen3Shape s = preset("tiny");
    const std::string path = test::make_temp_dir("synth-gguf") + "/tiny.gguf";
    Qwen3SynthOptions o;
    o.weight_type = DType::Q8_0;
    o.name = "tiny test";
    ASSERT_TRUE(synth_qwen3_gguf(path, s, o).ok());
    auto src = open_source(path);
    ASSERT_TRUE(src);
    EXPECT_EQ(src->format(), SourceFormat::gguf);
    EXPECT_EQ(src->architecture(), "qwen3");
    const GgufFile& f = *src->gguf();
    EXPECT_EQ(f.version(), 3u);
    auto u32 = [&](const char* key) {
        const GgufValue* v = f.find(key);
        EXPECT_TRUE(v && v->type == GgufType::UINT32) << key;  // what gguf-py writes
        auto r = f.get_uint(key);
        return r.ok() ? int64_t(*r) : -1;
    };
    auto f32 = [&](const char* key) {
        const GgufValue* v = f.find(key);
        EXPECT_TRUE(v && v->type == GgufType::FLOAT32) << key;
        auto r = f.get_float(key);
        return r.ok() ? float(*r) : -1.0f;
    };
    EXPECT_EQ(*f.get_string("general.name"), "tiny test");
    EXPECT_EQ(*f.get_string("general.type"), "model");
    EXPECT_EQ(u32("general.file_type"), 7);
    EXPECT_EQ(u32("general.quantization_version"), 2);
    EXPECT_EQ(u32("qwen3.block_count"), 2);
    EXPECT_EQ(u32("qwen3.context_length"), s.n_ctx_train);
    EXPECT_EQ(u32("qwen3.embedding_length"), 64);
    EXPECT_EQ(u32("qwen3.feed_forward_length"), 128);
    EXPECT_EQ(u32("qwen3.attention.head_count"), 4);
    EXPECT_EQ(u32("qwen3.attention.head_count_kv"), 2);
    EXPECT_EQ(u32("qwen3.attention.key_length"), 16);
    EXPECT_EQ(u32("qwen3.attention.value_length"), 16);
    EXPECT_EQ(f32("qwen3.rope.freq_base"), 1e6f);
    EXPECT_EQ(f32("qwen3.attention.layer_norm_rms_epsilon"), 1e-6f);
    EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(*f.get_string("tokenizer.ggml.pre"), "qwen2");
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 512u);
    EXPECT_EQ(f.find("tokenizer.ggml.token_type")->elem_type, GgufType::INT32);
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.merges")->size(), 253u);
    EXPECT_EQ(u32("tokenizer.ggml.bos_token_id"), 509);
    EXPECT_EQ(u32("tokenizer.ggml.eos_token_id"), 511);
    EXPECT_EQ(u32("tokenizer.ggml.padding_token_id"), 509);
    EXPECT_FALSE(*f.get_bool("tokenizer.ggml.add_bos_token"));
    EXPECT_TRUE(f.get_string("tokenizer.chat_template").ok());

    expect_table(*src, s, /*tied=*/false, /*hf_names=*/false);
    for (const SourceTensor& t : src->tensors()) {
        const bool norm = t.n_dims == 1;
        EXPECT_EQ(t.type, uint32_t(norm ? DType::F32 : DType::Q8_0)) << t.name;
    }
}

TEST(Qwen3Synth, k_quants_fall_back_where_the_row_is_not_a_multiple_of_256) {
    EXPECT_EQ(gguf_row_type(DType::Q4_K, 256), DType::Q4_K);
    EXPECT_EQ(gguf_row_type(DType::Q4_K, 64), DType::Q5_0);
    EXPECT_EQ(gguf_row_type(DType::Q5_K, 64), DType::Q5_1);
    EXPECT_EQ(gguf_row_type(DType::Q5_0, 40), DType::F16);
    EXPECT_EQ(gguf_row_type(DType::Q5_1, 96), DType::Q5_1);
    EXPECT_EQ(gguf_row_type(DType::Q6_K, 96), DType::Q8_0);
    EXPECT_EQ(gguf_row_type(DType::Q6_K, 40), DType::F16);
    EXPECT_EQ(gguf_row_type(DType::Q8_0, 40), DType::F16);
    EXPECT_EQ(gguf_row_type(DType::BF16, 40), DType::BF16);
    EXPECT_EQ(gguf_row_type(DType::Q4_0, 32), DType::Q4_0);
    EXPECT_EQ(gguf_file_type(DType::F32), 0u);
    EXPECT_EQ(gguf_file_type(DType::Q8_0), 7u);
    EXPECT_EQ(gguf_file_type(DType::Q4_K), 15u);
    EXPECT_EQ(gguf_file_type(DType::BF16), 32u);

    // small: every row length (256, 512) takes Q4_K; tiny (64, 128) falls back to Q5_0.
    const std::string dir = test::make_temp_dir("synth-kq");
    Qwen3SynthOptions o;
    o.weight_type = DType::Q4_K;
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/small.gguf", preset("small"), o).ok());
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/tiny.gguf", preset("tiny"), o).ok());
    auto small = open_source(dir + "/small.gguf"), tiny = open_source(dir + "/tiny.gguf");
    ASSERT_TRUE(small && tiny);
    EXPECT_EQ(*small->gguf()->get_uint("general.file_type"), 15u);
    for (const SourceTensor& t : small->tensors())
        EXPECT_EQ(t.type, uint32_t(t.n_dims == 1 ? DType::F32 : DType::Q4_K)) << t.name;
    for (const SourceTensor& t : tiny->tensors())
        EXPECT_EQ(t.type, uint32_t(t.n_dims == 1 ? DType::F32 : DType::Q5_0)) << t.name;
}

TEST(Qwen3Synth, hf_directory_has_transformers_config_and_hf_tensor_names) {
    const Qwen3Shape s = preset("tiny");
    const std::string dir = test::make_temp_dir("synth-hf") + "/tiny";
    Qwen3SynthOptions o;
    o.weight_type = DType::BF16;
    ASSERT_TRUE(synth_qwen3_hf(dir, s, o).ok());
    for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
        EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
    auto src = open_source(dir);
    ASSERT_TRUE(src);
    EXPECT_EQ(src->format(), SourceFormat::safetensors);
    EXPECT_EQ(src->architecture(), "qwen3");
    const nlohmann::json& c = *src->hf_config();
    EXPECT_EQ(c["architectures"], nlohmann::json::array({"Qwen3ForCausalLM"}));
    EXPECT_EQ(c["hidden_size"], 64);
    EXPECT_EQ(c["intermediate_size"], 128);
    EXPECT_EQ(c["num_hidden_layers"], 2);
    EXPECT_EQ(c["num_attention_heads"], 4);
    EXPECT_EQ(c["num_key_value_heads"], 2);
    EXPECT_EQ(c["head_dim"], 16);
    EXPECT_EQ(c["rms_norm_eps"], 1e-6);
    EXPECT_EQ(c["rope_theta"], 1000000);
    EXPECT_EQ(c["max_position_embeddings"], s.n_ctx_train);
    EXPECT_EQ(c["vocab_size"], 512);
    EXPECT_EQ(c["tie_word_embeddings"], false);
    EXPECT_EQ(c["torch_dtype"], "bfloat16");
    EXPECT_EQ(c["bos_token_id"], 509);
    EXPECT_EQ(c["eos_token_id"], 511);

    expect_table(*src, s, /*tied=*/false, /*hf_names=*/true);
    for (const SourceTensor& t : src->tensors()) EXPECT_EQ(t.dtype, "BF16") << t.name;
    const SourceTensor* q = src->find("model.layers.1.self_attn.q_proj.weight");
    ASSERT_TRUE(q);
    EXPECT_EQ(src->safetensors()->find(q->name)->shape, (std::vector<int64_t>{64, 64}));  // [out, in]
}

TEST(Qwen3Synth, hf_and_gguf_versions_hold_identical_weight_values) {
    const Qwen3Shape s = preset("tiny");
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        SCOPED_TRACE(std::string(dtype_name(t)));
        const std::string dir = test::make_temp_dir("synth-same");
        Qwen3SynthOptions o;
        o.weight_type = t;
        o.seed = 42;
        ASSERT_TRUE(synth_qwen3_gguf(dir + "/m.gguf", s, o).ok());
        ASSERT_TRUE(synth_qwen3_hf(dir + "/hf", s, o).ok());
        auto g = open_source(dir + "/m.gguf"), h = open_source(dir + "/hf");
        ASSERT_TRUE(g && h);
        for (const auto& [gguf_name, e] : expected_tensors(s, false)) {
            const SourceTensor* a = g->find(gguf_name);
            const SourceTensor* b = h->find(e.hf);
            ASSERT_TRUE(a && b) << gguf_name;
            EXPECT_EQ(values(*a), values(*b)) << gguf_name;
            if (a->type == b->type) {  // same encoding (everything but F16/BF16 norms): same bytes
                EXPECT_EQ(0, std::memcmp(a->data, b->data, a->nbytes)) << gguf_name;
            }
        }
    }
}

TEST(Qwen3Synth, hf_checkpoint_can_be_sharded_with_an_index) {
    const Qwen3Shape s = preset("tiny");
    const std::string dir = test::make_temp_dir("synth-shard");
    Qwen3SynthOptions o;
    o.weight_type = DType::F16;
    ASSERT_TRUE(synth_qwen3_hf(dir + "/one", s, o).ok());
    o.hf_shard_bytes = 100'000;  // tiny F16 is ~330 kB: several shards
    ASSERT_TRUE(synth_qwen3_hf(dir + "/sharded", s, o).ok());
    EXPECT_TRUE(std::filesystem::exists(dir + "/sharded/model.safetensors.index.json"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/sharded/model.safetensors"));
    auto one = open_source(dir + "/one"), sharded = open_source(dir + "/sharded");
    ASSERT_TRUE(one && sharded);
    EXPECT_GT(sharded->safetensors()->shard_count(), 2u);
    expect_table(*sharded, s, /*tied=*/false, /*hf_names=*/true);
    for (const SourceTensor& t : one->tensors()) {
        const SourceTensor* u = sharded->find(t.name);
        ASSERT_TRUE(u) << t.name;
        EXPECT_EQ(values(t), values(*u)) << t.name;
    }
}

TEST(Qwen3Synth, seed_determines_the_file_and_tied_models_have_no_output_matrix) {
    const Qwen3Shape s = preset("tiny");
    const std::string dir = test::make_temp_dir("synth-seed");
    Qwen3SynthOptions o;
    o.weight_type = DType::F16;
    o.n_threads = 1;
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/a.gguf", s, o).ok());
    o.n_threads = 3;  // thread count must not matter
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/b.gguf", s, o).ok());
    o.seed = 2;
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/c.gguf", s, o).ok());
    EXPECT_EQ(test::read_file(dir + "/a.gguf"), test::read_file(dir + "/b.gguf"));
    EXPECT_NE(test::read_file(dir + "/a.gguf"), test::read_file(dir + "/c.gguf"));

    o.tied = true;
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/tied.gguf", s, o).ok());
    ASSERT_TRUE(synth_qwen3_hf(dir + "/tied-hf", s, o).ok());
    auto g = open_source(dir + "/tied.gguf"), h = open_source(dir + "/tied-hf");
    ASSERT_TRUE(g && h);
    expect_table(*g, s, /*tied=*/true, false);
    expect_table(*h, s, /*tied=*/true, true);
    EXPECT_EQ((*h->hf_config())["tie_word_embeddings"], true);
}

TEST(Qwen3Synth, draft_shares_the_targets_first_layers_up_to_the_requested_noise) {
    const Qwen3Shape target = preset("small");
    Qwen3SynthOptions o;
    auto draft_shape = qwen3_draft_shape(target, 2);
    ASSERT_TRUE(draft_shape.ok());
    const std::string dir = test::make_temp_dir("synth-draft");
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/target.gguf", target, o).ok());
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/same.gguf", *draft_shape, qwen3_draft_options(o, 0.0f)).ok());
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/noisy.gguf", *draft_shape, qwen3_draft_options(o, 0.1f)).ok());
    auto t = open_source(dir + "/target.gguf"), same = open_source(dir + "/same.gguf"),
         noisy = open_source(dir + "/noisy.gguf");
    ASSERT_TRUE(t && same && noisy);
    EXPECT_EQ(*same->gguf()->get_uint("qwen3.block_count"), 2u);
    EXPECT_EQ(*same->gguf()->get_string_array("tokenizer.ggml.tokens"),
              *t->gguf()->get_string_array("tokenizer.ggml.tokens"));
    EXPECT_FALSE(same->find("blk.2.attn_q.weight"));
    for (const char* name : {"token_embd.weight", "blk.1.ffn_down.weight", "blk.0.attn_q_norm.weight"}) {
        SCOPED_TRACE(name);
        const std::vector<float> a = values(*t->find(name)), b = values(*same->find(name)), c = values(*noisy->find(name));
        EXPECT_EQ(a, b);
        // Noise std 0.1 x the tensor's std (1 for norm weights) -> relative rms ~0.1 (norms ~1).
        double diff = 0, ref = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            diff += (double(c[i]) - a[i]) * (double(c[i]) - a[i]);
            ref += double(a[i]) * a[i];
        }
        const double rel = std::sqrt(diff / ref);
        EXPECT_GT(rel, 0.07);
        EXPECT_LT(rel, 0.13);
    }
    EXPECT_TRUE(fails_with(qwen3_draft_shape(target, 5), "between 1 and the target's 4"));
}

TEST(Qwen3Synth, bad_options_are_rejected_with_clear_errors) {
    const Qwen3Shape tiny = preset("tiny");
    const std::string dir = test::make_temp_dir("synth-bad");
    EXPECT_TRUE(fails_with(qwen3_preset("7b"), {"unknown qwen3 preset '7b'", "tiny, small, 0.6b"}));

    Qwen3SynthOptions q8;
    q8.weight_type = DType::Q8_0;
    EXPECT_TRUE(fails_with(synth_qwen3_hf(dir + "/hf", tiny, q8), {"F32, F16 or BF16", "q8_0"}));
    EXPECT_FALSE(std::filesystem::exists(dir + "/hf"));  // refused before touching the disk

    Qwen3SynthOptions o;
    o.weight_type = DType::I8;
    EXPECT_TRUE(fails_with(synth_qwen3_gguf(dir + "/m.gguf", tiny, o), "weight type i8"));
    o = {};
    o.repeating = true;
    o.tied = true;
    EXPECT_TRUE(fails_with(synth_qwen3_gguf(dir + "/m.gguf", tiny, o), "cannot be tied"));
    o = {};
    o.perturbation = -0.1f;
    EXPECT_TRUE(fails_with(validate_qwen3(tiny, o), "perturbation"));
    o = {};
    o.repeat_period = 0;
    EXPECT_TRUE(fails_with(validate_qwen3(tiny, o), "repeat_period"));
    o = {};
    o.residual_decay = 0.0f;
    EXPECT_TRUE(fails_with(validate_qwen3(tiny, o), "residual_decay must be in (0, 1]"));

    Qwen3Shape s = tiny;
    s.n_head_kv = 3;
    EXPECT_TRUE(fails_with(validate_qwen3(s, {}), "n_head 4 is not a multiple of n_head_kv 3"));
    s = tiny;
    s.head_dim = 15;
    EXPECT_TRUE(fails_with(validate_qwen3(s, {}), "head_dim 15 must be even"));
    s = tiny;
    s.n_vocab = 100;
    EXPECT_TRUE(fails_with(validate_qwen3(s, {}), "n_vocab 100 is too small"));
    s = tiny;
    s.n_layer = 0;
    EXPECT_TRUE(fails_with(validate_qwen3(s, {}), "n_layer must be positive"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/m.gguf"));
}

TEST(Qwen3Synth, the_0_6b_preset_as_q8_0_holds_the_full_table_at_the_full_size) {
    const Qwen3Shape s = preset("0.6b");
    const std::string dir = test::make_temp_dir("synth-06b");
    Qwen3SynthOptions o;
    o.weight_type = DType::Q8_0;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(synth_qwen3_gguf(dir + "/qwen3-0.6b-q8_0.gguf", s, o).ok());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RecordProperty("seconds", fmt::format("{:.2f}", seconds));  // recorded, never a threshold
    {
        auto src = open_source(dir + "/qwen3-0.6b-q8_0.gguf");
        ASSERT_TRUE(src);
        expect_table(*src, s, /*tied=*/true, false);
        EXPECT_EQ(src->find("blk.27.attn_q.weight")->ne[1], 2048);
        const uint64_t bytes = src->file_bytes();
        EXPECT_GT(bytes, 600'000'000u);
        EXPECT_LT(bytes, 700'000'000u);
    }
    std::filesystem::remove(dir + "/qwen3-0.6b-q8_0.gguf");  // 640 MB: do not wait for exit
}
