// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/synth/gemma4_files_test.cpp: every tiny Gemma 4 preset written in both layouts and
// read back through the host's readers (ModelSource, GgufFile): the contract's GGUF keys, the
// config.json fields (both the global_head_dim form and per_layer_config), exactly the expected
// tensors with their shapes in ggml order (none on KV-shared layers' K/V or K=V layers' V in
// GGUF), rope_freqs, the same values in GGUF and HF (F32, and BF16 where rounding applies),
// value ranges of norms and scales, and per-row type fallback.
#include "gemma4synth_helpers.h"

#include "gemma4/synth/gemma4_vocab.h"
#include "support/fixtures.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

using namespace tdm;
using namespace tdm::synth;
using tdm::g4test::expected_tensors;
using tdm::g4test::open_source;
using tdm::g4test::preset;
using tdm::g4test::values;

namespace {

const char* const kTinyPresets[] = {"tiny-e2b", "tiny-31b", "tiny-26b"};

std::string files_temp_dir() {
    static const std::string dir = test::make_temp_dir("gemma4-synth");
    return dir;
}

void expect_gguf_table(const ModelSource& src, const Gemma4Shape& s) {
    size_t n = 0;
    for (const auto& [name, e] : expected_tensors(s)) {
        const SourceTensor* t = src.find(name);
        if (!e.in_gguf) {
            EXPECT_FALSE(t) << name << " must be absent from the GGUF";
            continue;
        }
        ++n;
        ASSERT_TRUE(t) << name;
        ASSERT_EQ(t->n_dims, int(e.ne.size())) << name;
        for (size_t i = 0; i < e.ne.size(); ++i) EXPECT_EQ(t->ne[i], e.ne[i]) << name << " dim " << i;
    }
    EXPECT_EQ(src.tensors().size(), n);
}

void expect_hf_table(const ModelSource& src, const Gemma4Shape& s) {
    size_t n = 0;
    for (const auto& [name, e] : expected_tensors(s)) {
        if (!e.in_hf) continue;
        ++n;
        const SourceTensor* t = src.find(e.hf);
        ASSERT_TRUE(t) << e.hf;
        ASSERT_EQ(t->n_dims, int(e.ne.size())) << e.hf;
        for (size_t i = 0; i < e.ne.size(); ++i) EXPECT_EQ(t->ne[i], e.ne[i]) << e.hf << " dim " << i;
    }
    EXPECT_EQ(src.tensors().size(), n);
}

// Every tensor both files hold has the same values.
void expect_same_values(const ModelSource& gguf, const ModelSource& hf, const Gemma4Shape& s) {
    int compared = 0;
    for (const auto& [name, e] : expected_tensors(s)) {
        if (!e.in_gguf || !e.in_hf) continue;
        const SourceTensor* a = gguf.find(name);
        const SourceTensor* b = hf.find(e.hf);
        ASSERT_TRUE(a && b) << name;
        const std::vector<float> va = values(*a), vb = values(*b);
        ASSERT_EQ(va.size(), vb.size()) << name;
        size_t differ = 0;
        for (size_t i = 0; i < va.size(); ++i) differ += va[i] != vb[i];
        EXPECT_EQ(differ, 0u) << name;
        ++compared;
    }
    EXPECT_GT(compared, 40);
}

}  // namespace

TEST(Gemma4Files, gguf_has_the_contract_metadata_for_every_tiny_preset) {
    for (const char* name : kTinyPresets) {
        SCOPED_TRACE(name);
        const Gemma4Shape s = preset(name);
        const std::string path = files_temp_dir() + "/" + name + "-meta.gguf";
        Gemma4SynthOptions o;
        o.name = "meta test";
        ASSERT_TRUE(synth_gemma4_gguf(path, s, o).ok());
        auto src = open_source(path);
        ASSERT_TRUE(src);
        EXPECT_EQ(src->architecture(), "gemma4");
        const GgufFile& f = *src->gguf();
        auto u32 = [&](const std::string& key) {
            const GgufValue* v = f.find(key);
            EXPECT_TRUE(v && v->type == GgufType::UINT32) << key;
            auto r = f.get_uint(key);
            return r.ok() ? int64_t(*r) : -1;
        };
        auto f32 = [&](const std::string& key) {
            const GgufValue* v = f.find(key);
            EXPECT_TRUE(v && v->type == GgufType::FLOAT32) << key;
            auto r = f.get_float(key);
            return r.ok() ? float(*r) : -1.0f;
        };
        auto i32_array = [&](const std::string& key) {
            const GgufValue* v = f.find(key);
            EXPECT_TRUE(v && v->type == GgufType::ARRAY && v->elem_type == GgufType::INT32) << key;
            auto r = f.get_int_array(key);
            return r.ok() ? *r : std::vector<int64_t>{};
        };
        EXPECT_EQ(*f.get_string("general.name"), "meta test");
        EXPECT_EQ(u32("general.file_type"), 0);
        EXPECT_FALSE(f.find("general.quantization_version"));
        EXPECT_EQ(u32("gemma4.context_length"), 4096);
        EXPECT_EQ(u32("gemma4.embedding_length"), 64);
        EXPECT_EQ(u32("gemma4.block_count"), s.n_layer);
        EXPECT_EQ(u32("gemma4.attention.head_count"), 4);
        EXPECT_EQ(u32("gemma4.attention.key_length"), 64);
        EXPECT_EQ(u32("gemma4.attention.value_length"), 64);
        EXPECT_EQ(u32("gemma4.attention.key_length_swa"), 32);
        EXPECT_EQ(u32("gemma4.attention.value_length_swa"), 32);
        EXPECT_EQ(u32("gemma4.attention.sliding_window"), 8);
        EXPECT_EQ(u32("gemma4.rope.dimension_count"), 64);
        EXPECT_EQ(u32("gemma4.rope.dimension_count_swa"), 32);
        EXPECT_EQ(f32("gemma4.rope.freq_base"), 1e6f);
        EXPECT_EQ(f32("gemma4.rope.freq_base_swa"), 1e4f);
        EXPECT_EQ(f32("gemma4.final_logit_softcapping"), 30.0f);
        EXPECT_EQ(f32("gemma4.attention.layer_norm_rms_epsilon"), 1e-6f);
        EXPECT_EQ(u32("gemma4.attention.shared_kv_layers"), s.n_kv_shared);
        EXPECT_EQ(u32("gemma4.embedding_length_per_layer_input"), s.n_embd_per_layer);

        const GgufValue* pattern = f.find("gemma4.attention.sliding_window_pattern");
        ASSERT_TRUE(pattern && pattern->type == GgufType::ARRAY && pattern->elem_type == GgufType::BOOL);
        std::vector<bool> want_swa;
        for (char c : gemma4_layer_pattern(s))
            if (c != ' ') want_swa.push_back(c == 'S');
        EXPECT_EQ(*f.get_bool_array("gemma4.attention.sliding_window_pattern"), want_swa);

        std::vector<int64_t> want_kv;
        for (bool swa : want_swa) want_kv.push_back(swa ? s.n_head_kv_swa : s.n_head_kv_full);
        EXPECT_EQ(i32_array("gemma4.attention.head_count_kv"), want_kv);
        if (s.double_wide_mlp)  // tiny-e2b: layers 3 and 4 are KV-shared and double width
            EXPECT_EQ(i32_array("gemma4.feed_forward_length"), (std::vector<int64_t>{128, 128, 128, 256, 256}));
        else
            EXPECT_EQ(u32("gemma4.feed_forward_length"), s.n_ff);
        if (s.is_moe()) {
            EXPECT_EQ(u32("gemma4.expert_count"), 4);
            EXPECT_EQ(u32("gemma4.expert_used_count"), 2);
            EXPECT_EQ(u32("gemma4.expert_feed_forward_length"), 32);
        } else {
            EXPECT_FALSE(f.find("gemma4.expert_count"));
            EXPECT_FALSE(f.find("gemma4.expert_feed_forward_length"));
        }

        EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "gemma4");
        EXPECT_EQ(*f.get_string("tokenizer.ggml.pre"), "gemma4");
        EXPECT_EQ(u32("tokenizer.ggml.bos_token_id"), 2);
        EXPECT_EQ(u32("tokenizer.ggml.eos_token_id"), 1);
        EXPECT_EQ(u32("tokenizer.ggml.padding_token_id"), 0);
        EXPECT_TRUE(*f.get_bool("tokenizer.ggml.add_bos_token"));
        const auto tokens = *f.get_string_array("tokenizer.ggml.tokens");
        ASSERT_EQ(tokens.size(), 1024u);
        EXPECT_EQ(tokens[105], "<|turn>");
        EXPECT_EQ(tokens[106], "<turn|>");
        const auto types = *f.get_int_array("tokenizer.ggml.token_type");
        EXPECT_EQ(types[105], 3);  // CONTROL
        EXPECT_EQ(types[106], 3);
        EXPECT_EQ(*f.get_string("tokenizer.chat_template"), gemma4_chat_template());

        expect_gguf_table(*src, s);
        const SourceTensor* freqs = src->find("rope_freqs.weight");
        ASSERT_TRUE(freqs);
        EXPECT_EQ(freqs->type, uint32_t(DType::F32));
        const std::vector<float> fv = values(*freqs);
        for (size_t i = 0; i < fv.size(); ++i) EXPECT_EQ(fv[i], i < 8 ? 1.0f : 1e30f) << i;
    }
}

TEST(Gemma4Files, kv_shared_and_k_eq_v_layers_drop_exactly_the_converter_tensors) {
    const std::string dir = files_temp_dir();
    ASSERT_TRUE(synth_gemma4_gguf(dir + "/drop-e2b.gguf", preset("tiny-e2b"), {}).ok());
    ASSERT_TRUE(synth_gemma4_gguf(dir + "/drop-31b.gguf", preset("tiny-31b"), {}).ok());
    auto e2b = open_source(dir + "/drop-e2b.gguf"), d31 = open_source(dir + "/drop-31b.gguf");
    ASSERT_TRUE(e2b && d31);
    for (int il : {3, 4}) {  // KV-shared
        const std::string g = "blk." + std::to_string(il) + ".";
        EXPECT_FALSE(e2b->find(g + "attn_k.weight")) << il;
        EXPECT_FALSE(e2b->find(g + "attn_v.weight")) << il;
        EXPECT_TRUE(e2b->find(g + "attn_q.weight")) << il;
        EXPECT_TRUE(e2b->find(g + "attn_k_norm.weight")) << il;
    }
    EXPECT_TRUE(e2b->find("blk.2.attn_v.weight"));  // full, not K=V
    EXPECT_FALSE(d31->find("blk.5.attn_v.weight"));  // full, K=V
    EXPECT_TRUE(d31->find("blk.5.attn_k.weight"));
    EXPECT_TRUE(d31->find("blk.4.attn_v.weight"));
}

TEST(Gemma4Files, hf_directory_has_the_wrapper_config_and_all_tensors) {
    for (const char* name : kTinyPresets) {
        SCOPED_TRACE(name);
        const Gemma4Shape s = preset(name);
        const std::string dir = files_temp_dir() + "/" + name + "-hf";
        Gemma4SynthOptions o;
        o.weight_type = DType::BF16;
        ASSERT_TRUE(synth_gemma4_hf(dir, s, o).ok());
        for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
            EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
        auto src = open_source(dir);
        ASSERT_TRUE(src);
        EXPECT_EQ(src->format(), SourceFormat::safetensors);
        EXPECT_EQ(src->architecture(), "gemma4");
        const nlohmann::json& c = *src->hf_config();
        EXPECT_EQ(c["architectures"], nlohmann::json::array({"Gemma4ForConditionalGeneration"}));
        EXPECT_EQ(c["eos_token_id"], nlohmann::json::array({1, 106}));
        EXPECT_EQ(c["tie_word_embeddings"], true);
        EXPECT_EQ(c["torch_dtype"], "bfloat16");
        const nlohmann::json& t = c["text_config"];
        EXPECT_EQ(t["model_type"], "gemma4_text");
        EXPECT_EQ(t["hidden_size"], 64);
        EXPECT_EQ(t["num_hidden_layers"], s.n_layer);
        EXPECT_EQ(t["num_attention_heads"], 4);
        EXPECT_EQ(t["num_key_value_heads"], s.n_head_kv_swa);
        EXPECT_EQ(t["num_global_key_value_heads"], s.k_eq_v ? nlohmann::json(1) : nlohmann::json(nullptr));
        EXPECT_EQ(t["head_dim"], 32);
        EXPECT_EQ(t["global_head_dim"], 64);
        EXPECT_EQ(t["attention_k_eq_v"], s.k_eq_v);
        EXPECT_EQ(t["intermediate_size"], s.n_ff);
        EXPECT_EQ(t["use_double_wide_mlp"], s.double_wide_mlp);
        EXPECT_EQ(t["enable_moe_block"], s.is_moe());
        EXPECT_EQ(t["num_experts"], s.is_moe() ? nlohmann::json(4) : nlohmann::json(nullptr));
        EXPECT_EQ(t["top_k_experts"], s.is_moe() ? nlohmann::json(2) : nlohmann::json(nullptr));
        EXPECT_EQ(t["moe_intermediate_size"], s.is_moe() ? nlohmann::json(32) : nlohmann::json(nullptr));
        EXPECT_EQ(t["num_kv_shared_layers"], s.n_kv_shared);
        EXPECT_EQ(t["hidden_size_per_layer_input"], s.n_embd_per_layer);
        EXPECT_EQ(t["vocab_size_per_layer_input"], s.n_vocab_per_layer);
        EXPECT_EQ(t["sliding_window"], 8);
        EXPECT_EQ(t["vocab_size"], 1024);
        EXPECT_EQ(t["max_position_embeddings"], 4096);
        EXPECT_EQ(t["final_logit_softcapping"], 30.0);
        EXPECT_EQ(t["rms_norm_eps"], 1e-6);
        EXPECT_EQ(t["hidden_activation"], "gelu_pytorch_tanh");
        EXPECT_EQ(t["tie_word_embeddings"], true);
        EXPECT_FALSE(t.contains("per_layer_config"));
        const nlohmann::json& rope = t["rope_parameters"];
        EXPECT_EQ(rope["sliding_attention"]["rope_type"], "default");
        EXPECT_EQ(rope["sliding_attention"]["rope_theta"], 10000.0);
        EXPECT_EQ(rope["full_attention"]["rope_type"], "proportional");
        EXPECT_EQ(rope["full_attention"]["partial_rotary_factor"], 0.25);
        EXPECT_EQ(rope["full_attention"]["rope_theta"], 1000000.0);
        ASSERT_EQ(t["layer_types"].size(), size_t(s.n_layer));
        for (int il = 0; il < s.n_layer; ++il)
            EXPECT_EQ(t["layer_types"][size_t(il)], s.is_swa(il) ? "sliding_attention" : "full_attention");
        expect_hf_table(*src, s);
    }
}

TEST(Gemma4Files, hf_per_layer_config_form_replaces_the_global_fields) {
    const std::string dir = files_temp_dir() + "/per-layer-config";
    Gemma4SynthOptions o;
    o.hf_per_layer_config = true;
    ASSERT_TRUE(synth_gemma4_hf(dir, preset("tiny-e2b"), o).ok());
    auto src = open_source(dir);
    ASSERT_TRUE(src);
    const nlohmann::json& t = (*src->hf_config())["text_config"];
    EXPECT_FALSE(t.contains("global_head_dim"));
    EXPECT_FALSE(t.contains("num_global_key_value_heads"));
    const nlohmann::json want = {{"2", {{"head_dim", 64}, {"num_key_value_heads", 1}}},
                                 {"4", {{"head_dim", 64}, {"num_key_value_heads", 1}}}};
    EXPECT_EQ(t["per_layer_config"], want);
    EXPECT_EQ(t["head_dim"], 32);
}

TEST(Gemma4Files, gguf_and_hf_hold_the_same_values) {
    for (const char* name : kTinyPresets) {
        for (DType type : {DType::F32, DType::BF16}) {
            SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(type)));
            const Gemma4Shape s = preset(name);
            const std::string base = files_temp_dir() + "/same-" + name + "-" + std::string(dtype_name(type));
            Gemma4SynthOptions o;
            o.weight_type = type;
            o.seed = 7;
            o.n_threads = 3;
            ASSERT_TRUE(synth_gemma4_gguf(base + ".gguf", s, o).ok());
            ASSERT_TRUE(synth_gemma4_hf(base + "-hf", s, o).ok());
            auto gguf = open_source(base + ".gguf"), hf = open_source(base + "-hf");
            ASSERT_TRUE(gguf && hf);
            if (type == DType::BF16) {  // matrices BF16, norms F32 holding BF16-rounded values
                EXPECT_EQ(gguf->find("blk.0.attn_q.weight")->type, uint32_t(DType::BF16));
                EXPECT_EQ(gguf->find("blk.0.attn_norm.weight")->type, uint32_t(DType::F32));
                EXPECT_EQ(hf->find("model.language_model.layers.0.input_layernorm.weight")->dtype, "BF16");
            }
            expect_same_values(*gguf, *hf, s);
        }
    }
}

TEST(Gemma4Files, values_have_the_documented_ranges_and_depend_on_the_seed) {
    const Gemma4Shape s = preset("tiny-26b");
    const std::string dir = files_temp_dir();
    Gemma4SynthOptions o;
    ASSERT_TRUE(synth_gemma4_gguf(dir + "/range-1.gguf", s, o).ok());
    o.seed = 2;
    ASSERT_TRUE(synth_gemma4_gguf(dir + "/range-2.gguf", s, o).ok());
    auto a = open_source(dir + "/range-1.gguf"), b = open_source(dir + "/range-2.gguf");
    ASSERT_TRUE(a && b);
    auto range = [&](const char* name, float lo, float hi) {
        const SourceTensor* t = a->find(name);
        ASSERT_TRUE(t) << name;
        const std::vector<float> v = values(*t);
        float mn = v[0], mx = v[0];
        for (float x : v) mn = std::min(mn, x), mx = std::max(mx, x);
        EXPECT_GE(mn, lo) << name;
        EXPECT_LE(mx, hi) << name;
        if (v.size() > 1) {
            EXPECT_LT(mn, mx) << name << " is constant";
        }
    };
    range("blk.0.attn_norm.weight", 0.8f, 1.2f);
    range("blk.0.attn_q_norm.weight", 0.8f, 1.2f);
    range("output_norm.weight", 0.8f, 1.2f);
    range("blk.1.ffn_gate_inp.scale", 0.8f, 1.2f);
    range("blk.1.ffn_down_exps.scale", 0.8f, 1.2f);
    // One value per layer: across layers it must spread over 0.5 .. 1.5 and not sit at 1.
    float lo = 2.0f, hi = 0.0f;
    for (int il = 0; il < s.n_layer; ++il) {
        const float v = values(*a->find("blk." + std::to_string(il) + ".layer_output_scale.weight"))[0];
        EXPECT_GE(v, 0.5f);
        EXPECT_LE(v, 1.5f);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    EXPECT_GT(hi - lo, 0.1f);
    // token_embd: std 2/sqrt(64) = 0.25.
    const std::vector<float> e = values(*a->find("token_embd.weight"));
    double sq = 0;
    for (float x : e) sq += double(x) * x;
    EXPECT_NEAR(std::sqrt(sq / double(e.size())), 0.25, 0.01);
    // A different seed changes the values.
    const std::vector<float> q1 = values(*a->find("blk.0.attn_q.weight")), q2 = values(*b->find("blk.0.attn_q.weight"));
    EXPECT_NE(q1, q2);
}

TEST(Gemma4Files, quantized_types_fall_back_per_row_width) {
    const std::string dir = files_temp_dir();
    Gemma4SynthOptions o;
    o.weight_type = DType::Q4_K;
    ASSERT_TRUE(synth_gemma4_gguf(dir + "/q4k-26b.gguf", preset("tiny-26b"), o).ok());
    auto moe = open_source(dir + "/q4k-26b.gguf");
    ASSERT_TRUE(moe);
    EXPECT_EQ(*moe->gguf()->get_uint("general.file_type"), 15u);
    EXPECT_EQ(*moe->gguf()->get_uint("general.quantization_version"), 2u);
    auto type_of = [](const ModelSource& src, const char* name) {
        const SourceTensor* t = src.find(name);
        EXPECT_TRUE(t) << name;
        return t ? DType(t->type) : DType::F32;
    };
    EXPECT_EQ(type_of(*moe, "blk.5.attn_output.weight"), DType::Q4_K);  // rows of 4 x 64 = 256
    EXPECT_EQ(type_of(*moe, "blk.0.attn_output.weight"), DType::Q5_0);  // rows of 128
    EXPECT_EQ(type_of(*moe, "blk.0.attn_q.weight"), DType::Q5_0);       // rows of 64
    EXPECT_EQ(type_of(*moe, "blk.0.ffn_gate_up_exps.weight"), DType::Q5_0);
    EXPECT_EQ(type_of(*moe, "blk.0.ffn_down_exps.weight"), DType::Q5_0);  // rows of 32
    EXPECT_EQ(type_of(*moe, "token_embd.weight"), DType::Q5_0);
    EXPECT_EQ(type_of(*moe, "blk.0.ffn_gate_inp.weight"), DType::F32);  // the router stays F32
    EXPECT_EQ(type_of(*moe, "blk.0.ffn_gate_inp.scale"), DType::F32);
    EXPECT_EQ(type_of(*moe, "blk.0.layer_output_scale.weight"), DType::F32);
    EXPECT_EQ(type_of(*moe, "rope_freqs.weight"), DType::F32);

    o.weight_type = DType::Q8_0;
    ASSERT_TRUE(synth_gemma4_gguf(dir + "/q8-e2b.gguf", preset("tiny-e2b"), o).ok());
    auto e2b = open_source(dir + "/q8-e2b.gguf");
    ASSERT_TRUE(e2b);
    EXPECT_EQ(type_of(*e2b, "blk.0.proj.weight"), DType::F16);  // rows of P = 16
    EXPECT_EQ(type_of(*e2b, "blk.0.inp_gate.weight"), DType::Q8_0);
    EXPECT_EQ(type_of(*e2b, "per_layer_token_embd.weight"), DType::F16);  // rows of 5 x 16 = 80
    EXPECT_EQ(type_of(*e2b, "blk.3.ffn_down.weight"), DType::Q8_0);       // rows of 256
}

TEST(Gemma4Files, hf_refuses_quantized_types) {
    Gemma4SynthOptions o;
    o.weight_type = DType::Q8_0;
    const Status st = synth_gemma4_hf(files_temp_dir() + "/hf-q8", preset("tiny-e2b"), o);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("F32, F16 or BF16"), std::string::npos) << st.error().message();
}
