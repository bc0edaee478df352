// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/synth/gemma4_assistant_test.cpp: the gemma4 synthesizer's assistant drafters
// (plugins/gemma4/synth/gemma4_assistant.h), read back through the host's readers: every preset
// fits its target (and E4B's has the released parameter count); the files hold exactly the
// tensor table of docs/models/gemma4.md §3.2, written out here by hand, in the requested types (norms
// F32 in GGUF, the ordering an integer permutation); the keys and config.json carry the target's
// attention and RoPE shape; GGUF and HF hold the same values; the same request gives the same
// bytes. (Drafting with them, through the plugin: tests/models/gemma4/gemma4_synth_assistant_test.cpp.)
#include "gemma4synth_helpers.h"

#include "formats/expect_error.h"
#include "formats/gguf.h"
#include "gemma4/synth/gemma4_assistant.h"
#include "support/fixtures.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>

using namespace tdm;
using namespace tdm::synth;
using tdm::g4test::open_source;
using tdm::g4test::values;

namespace {

std::string assistant_temp_dir() {
    static const std::string dir = test::make_temp_dir("gemma4-assistant-synth");
    return dir;
}

Gemma4AssistantShape assistant(const char* target) {
    auto a = gemma4_assistant_preset(target);
    EXPECT_TRUE(a.ok()) << target;
    return a.ok() ? *a : Gemma4AssistantShape{};
}

struct Expected {
    std::vector<int64_t> ne;  // GGUF order
    std::string hf;
    bool gguf_f32 = false;  // norms and scales
};

// GGUF name -> expectation, docs/models/gemma4.md §3.2 (no K/V, no per-layer inputs; the ordering and
// rope_freqs are checked apart).
std::map<std::string, Expected> expected_assistant_tensors(const Gemma4AssistantShape& a) {
    const Gemma4Shape& t = a.target;
    const int64_t Ha = a.n_embd, Hb = t.n_embd, V = t.n_vocab, F = a.n_ff;
    std::map<std::string, Expected> m;
    m["token_embd.weight"] = {{Ha, V}, "model.embed_tokens.weight"};
    m["output_norm.weight"] = {{Ha}, "model.norm.weight", true};
    m["nextn.pre_projection.weight"] = {{2 * Hb, Ha}, "pre_projection.weight"};
    m["nextn.post_projection.weight"] = {{Ha, Hb}, "post_projection.weight"};
    if (a.ordered) m["masked_embd_centroids.weight"] = {{Ha, a.n_centroids}, "masked_embedding.centroids.weight"};
    for (int il = 0; il < 4; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".", h = "model.layers." + std::to_string(il) + ".";
        const int64_t D = il == 3 ? t.head_dim_full : t.head_dim_swa, Q = int64_t(a.n_head) * D;
        m[g + "attn_norm.weight"] = {{Ha}, h + "input_layernorm.weight", true};
        m[g + "attn_q.weight"] = {{Ha, Q}, h + "self_attn.q_proj.weight"};
        m[g + "attn_q_norm.weight"] = {{D}, h + "self_attn.q_norm.weight", true};
        m[g + "attn_output.weight"] = {{Q, Ha}, h + "self_attn.o_proj.weight"};
        m[g + "post_attention_norm.weight"] = {{Ha}, h + "post_attention_layernorm.weight", true};
        m[g + "ffn_norm.weight"] = {{Ha}, h + "pre_feedforward_layernorm.weight", true};
        m[g + "ffn_gate.weight"] = {{Ha, F}, h + "mlp.gate_proj.weight"};
        m[g + "ffn_up.weight"] = {{Ha, F}, h + "mlp.up_proj.weight"};
        m[g + "ffn_down.weight"] = {{F, Ha}, h + "mlp.down_proj.weight"};
        m[g + "post_ffw_norm.weight"] = {{Ha}, h + "post_feedforward_layernorm.weight", true};
        m[g + "layer_output_scale.weight"] = {{1}, h + "layer_scalar", true};
    }
    return m;
}

void expect_shape(const SourceTensor* t, const std::vector<int64_t>& ne, const std::string& name) {
    ASSERT_TRUE(t) << name;
    ASSERT_EQ(t->n_dims, int(ne.size())) << name;
    for (size_t i = 0; i < ne.size(); ++i) EXPECT_EQ(t->ne[i], ne[i]) << name << " dim " << i;
}

template <class Int>
std::vector<int64_t> ids_of(const SourceTensor& t) {
    std::vector<int64_t> out(t.nbytes / sizeof(Int));
    for (size_t i = 0; i < out.size(); ++i) {
        Int v;
        std::memcpy(&v, t.data + i * sizeof(Int), sizeof v);
        out[i] = int64_t(v);
    }
    return out;
}

Status write(const std::string& path, const char* preset, DType type, bool hf, uint64_t seed = 1) {
    Gemma4SynthOptions o;
    o.weight_type = type;
    o.seed = seed;
    return hf ? synth_gemma4_assistant_hf(path, assistant(preset), o) : synth_gemma4_assistant_gguf(path, assistant(preset), o);
}

}  // namespace

TEST(Gemma4AssistantSynth, every_preset_fits_its_target_and_e4b_has_the_released_parameter_count) {
    for (std::string_view name : gemma4_preset_names()) {
        auto a = gemma4_assistant_preset(name);
        ASSERT_TRUE(a.ok()) << a.error().message();
        const Gemma4Shape target = *gemma4_preset(name);
        EXPECT_EQ(a->n_embd_backbone(), target.n_embd) << name;
        EXPECT_EQ(a->n_vocab(), target.n_vocab) << name;
        EXPECT_EQ(gemma4_assistant_layer_pattern(*a), "S S S F") << name;
        EXPECT_TRUE(validate_gemma4_assistant(*a, {}).ok()) << name;
        const bool e_model = name == "e2b" || name == "e4b" || name == "tiny-e2b";
        EXPECT_EQ(a->ordered, e_model) << name << ": E2B/E4B have the centroid-masked head";
        EXPECT_EQ(a->final_logit_softcapping == 0.0f, e_model) << name;
    }
    // spec §3.1: E4B's assistant has 78.518 M parameters (the ordering buffer is no parameter)
    const Gemma4AssistantShape e4b = assistant("e4b");
    int64_t n = 0;
    for (const Gemma4Param& p : gemma4_assistant_params(e4b)) n += p.param.rows * p.param.cols;
    EXPECT_NEAR(double(n) / 1e6, 78.518, 0.0005);
    EXPECT_EQ(e4b.n_centroids, 2048);
    EXPECT_EQ(e4b.n_centroids_top_k, 32);
    EXPECT_TRUE(test::fails_with(gemma4_assistant_preset("huge"), "unknown gemma4-assistant preset 'huge'"));
}

TEST(Gemma4AssistantSynth, files_hold_the_spec_tensor_table_in_the_requested_types) {
    for (const char* preset : {"tiny-e2b", "tiny-31b"}) {
        const Gemma4AssistantShape a = assistant(preset);
        const std::string gguf = assistant_temp_dir() + "/" + preset + "-q8_0.gguf",
                          hf = assistant_temp_dir() + "/" + preset + "-hf";
        ASSERT_TRUE(write(gguf, preset, DType::Q8_0, false).ok());
        ASSERT_TRUE(write(hf, preset, DType::BF16, true).ok());
        auto g = open_source(gguf);
        auto h = open_source(hf);
        ASSERT_TRUE(g && h);
        EXPECT_EQ(g->architecture(), "gemma4-assistant");
        EXPECT_EQ(h->architecture(), "gemma4_assistant");
        const auto expected = expected_assistant_tensors(a);
        for (const auto& [name, e] : expected) {
            const SourceTensor* t = g->find(name);
            expect_shape(t, e.ne, name);
            if (t) {
                EXPECT_EQ(t->type, uint32_t(e.gguf_f32 ? DType::F32 : DType::Q8_0)) << name;
            }
            const SourceTensor* u = h->find(e.hf);
            expect_shape(u, e.ne, e.hf);
            if (u) {
                EXPECT_EQ(u->dtype, "BF16") << e.hf;
            }
        }
        // rope_freqs (GGUF only): the target's, 1 for the rotated slots, 1e30 for the rest
        const SourceTensor* rf = g->find("rope_freqs.weight");
        expect_shape(rf, {a.target.head_dim_full / 2}, "rope_freqs.weight");
        if (rf) {
            EXPECT_EQ(values(*rf), gemma4_rope_freqs(a.target));
        }
        const size_t extra = a.ordered ? 1 : 0;  // the ordering
        EXPECT_EQ(g->tensors().size(), expected.size() + 1 + extra) << preset;
        EXPECT_EQ(h->tensors().size(), expected.size() + extra) << preset;
        if (!a.ordered) {
            EXPECT_FALSE(g->find("masked_embd_ordering.weight"));
            continue;
        }
        // the ordering: integer ids, never quantized, a permutation of the vocabulary
        const SourceTensor* og = g->find("masked_embd_ordering.weight");
        const SourceTensor* oh = h->find("masked_embedding.token_ordering");
        expect_shape(og, {a.n_vocab()}, "masked_embd_ordering.weight");
        expect_shape(oh, {a.n_vocab()}, "masked_embedding.token_ordering");
        ASSERT_TRUE(og && oh);
        EXPECT_EQ(og->type, uint32_t(DType::I32));
        EXPECT_EQ(oh->dtype, "I64");
        const std::vector<int64_t> ids = ids_of<int32_t>(*og);
        EXPECT_EQ(ids, ids_of<int64_t>(*oh));
        std::vector<int64_t> sorted = ids;
        std::sort(sorted.begin(), sorted.end());
        for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], int64_t(i)) << "not a permutation";
        EXPECT_FALSE(std::is_sorted(ids.begin(), ids.end())) << "the clusters are not drawn";
    }
}

TEST(Gemma4AssistantSynth, keys_and_config_carry_the_targets_attention_and_rope) {
    for (const char* preset : {"tiny-e2b", "tiny-31b"}) {
        const Gemma4AssistantShape a = assistant(preset);
        const Gemma4Shape& t = a.target;
        const std::string path = assistant_temp_dir() + "/" + preset + "-keys.gguf",
                          dir = assistant_temp_dir() + "/" + preset + "-cfg";
        ASSERT_TRUE(write(path, preset, DType::BF16, false).ok());
        ASSERT_TRUE(write(dir, preset, DType::BF16, true).ok());
        auto f = GgufFile::open(path);
        ASSERT_TRUE(f.ok()) << f.error().message();
        const GgufFile& g = **f;
        auto u = [&](const char* k) {
            auto v = g.get_uint(std::string("gemma4-assistant.") + k);
            EXPECT_TRUE(v.ok()) << k;
            return v.ok() ? *v : 0;
        };
        auto d = [&](const char* k) {
            auto v = g.get_float(std::string("gemma4-assistant.") + k);
            EXPECT_TRUE(v.ok()) << k;
            return v.ok() ? *v : -1.0;
        };
        EXPECT_EQ(u("embedding_length"), uint64_t(a.n_embd));
        EXPECT_EQ(u("embedding_length_out"), uint64_t(t.n_embd));
        EXPECT_EQ(u("block_count"), 4u);
        EXPECT_EQ(u("nextn_predict_layers"), 4u);
        EXPECT_EQ(u("context_length"), uint64_t(t.n_ctx_train));
        EXPECT_EQ(u("attention.key_length"), uint64_t(t.head_dim_full));
        EXPECT_EQ(u("attention.key_length_swa"), uint64_t(t.head_dim_swa));
        EXPECT_EQ(u("attention.sliding_window"), uint64_t(t.sliding_window));
        EXPECT_EQ(d("rope.freq_base"), double(t.rope_theta_full));
        EXPECT_EQ(d("rope.freq_base_swa"), double(t.rope_theta_swa));
        EXPECT_EQ(*g.get_int_array("gemma4-assistant.attention.head_count_kv"),
                  (std::vector<int64_t>{t.n_head_kv_swa, t.n_head_kv_swa, t.n_head_kv_swa, t.n_head_kv_full}));
        EXPECT_EQ(*g.get_bool_array("gemma4-assistant.attention.sliding_window_pattern"),
                  (std::vector<bool>{true, true, true, false}));
        EXPECT_EQ(g.find("gemma4-assistant.final_logit_softcapping") != nullptr, !a.ordered) << preset;
        EXPECT_EQ(g.find("gemma4-assistant.centroid_intermediate_top_k") != nullptr, a.ordered) << preset;
        EXPECT_FALSE(g.find("tokenizer.ggml.model")) << "the target's tokenizer serves the assistant";
        EXPECT_EQ(*g.get_uint("general.file_type"), 32u);  // BF16

        auto src = open_source(dir);
        ASSERT_TRUE(src && src->hf_config());
        const nlohmann::json& c = *src->hf_config();
        EXPECT_EQ(c["architectures"], nlohmann::json({"Gemma4AssistantForCausalLM"}));
        EXPECT_EQ(c["backbone_hidden_size"], t.n_embd);
        EXPECT_EQ(c["use_ordered_embeddings"], a.ordered);
        const nlohmann::json& tc = c["text_config"];
        EXPECT_EQ(tc["hidden_size"], a.n_embd);
        EXPECT_EQ(tc["num_kv_shared_layers"], 4);
        EXPECT_EQ(tc["head_dim"], t.head_dim_swa);
        EXPECT_EQ(tc["global_head_dim"], t.head_dim_full);
        EXPECT_EQ(tc["num_key_value_heads"], t.n_head_kv_swa);
        EXPECT_EQ(tc["attention_k_eq_v"], t.k_eq_v);
        EXPECT_EQ(tc["sliding_window"], t.sliding_window);
        EXPECT_EQ(tc["hidden_size_per_layer_input"], 0);
        EXPECT_EQ(tc["enable_moe_block"], false);
        EXPECT_EQ(tc["use_double_wide_mlp"], false);
        EXPECT_EQ(tc["final_logit_softcapping"].is_null(), a.ordered) << preset;
        EXPECT_EQ(tc["rope_parameters"]["full_attention"]["partial_rotary_factor"], 0.25);
        EXPECT_FALSE(std::filesystem::exists(dir + "/tokenizer.json"));
    }
}

TEST(Gemma4AssistantSynth, gguf_and_hf_hold_the_same_values_and_a_request_gives_the_same_bytes) {
    const Gemma4AssistantShape a = assistant("tiny-e2b");
    const std::string gguf = assistant_temp_dir() + "/same.gguf", hf = assistant_temp_dir() + "/same-hf";
    ASSERT_TRUE(write(gguf, "tiny-e2b", DType::BF16, false, 5).ok());
    ASSERT_TRUE(write(hf, "tiny-e2b", DType::BF16, true, 5).ok());
    auto g = open_source(gguf);
    auto h = open_source(hf);
    ASSERT_TRUE(g && h);
    for (const auto& [name, e] : expected_assistant_tensors(a)) {
        const SourceTensor* x = g->find(name);
        const SourceTensor* y = h->find(e.hf);
        ASSERT_TRUE(x && y) << name;
        EXPECT_EQ(values(*x), values(*y)) << name;
    }
    // deterministic; the seed changes the weights and the clusters
    const std::string again = assistant_temp_dir() + "/again.gguf", other = assistant_temp_dir() + "/other.gguf";
    ASSERT_TRUE(write(again, "tiny-e2b", DType::BF16, false, 5).ok());
    ASSERT_TRUE(write(other, "tiny-e2b", DType::BF16, false, 6).ok());
    EXPECT_EQ(test::read_file(gguf), test::read_file(again));
    auto o = open_source(other);
    ASSERT_TRUE(o);
    EXPECT_NE(values(*o->find("token_embd.weight")), values(*g->find("token_embd.weight")));
    EXPECT_NE(ids_of<int32_t>(*o->find("masked_embd_ordering.weight")),
              ids_of<int32_t>(*g->find("masked_embd_ordering.weight")));
}

TEST(Gemma4AssistantSynth, hf_takes_float_types_only) {
    const std::string dir = assistant_temp_dir() + "/q8-hf";
    EXPECT_TRUE(test::fails_with(write(dir, "tiny-31b", DType::Q8_0, true), "F32, F16 or BF16"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
}
