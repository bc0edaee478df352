// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/synth/qwen35_synth_test.cpp: the synthetic Qwen3.5 files: GGUF and HF outputs open
// through ModelSource with exactly the expected names, shapes, types and metadata (dense and MoE,
// with and without the MTP head); the GGUF is, value for value, what llama.cpp's converter makes
// of the HF checkpoint (emulated here from the converter's documented transforms, independently
// of plugins/qwen-nextn/synth); tokenizer files agree; options do what they say; bad options are refused; the
// 0.8b Q8_0 file is quick to make.
// To add a check: synthesize into make_temp_dir() and inspect it with ModelSource, as below.
#include "support/qwen35_synth_helpers.h"

#include "formats/expect_error.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

using namespace tdm;
using namespace tdm::synth;
using tdm::test::fails_with;
using tdm::test35::open_source;
using tdm::test35::preset;
using tdm::test35::values;

namespace {

using Table = std::map<std::string, std::vector<int64_t>>;

// The complete GGUF tensor table (ne in ggml order), written out by hand from docs/models/qwen35.md §3.
Table gguf_table(const Qwen35Shape& s, bool tied, bool mtp) {
    const int64_t E = s.n_embd, D = s.head_dim, q = int64_t(s.n_head) * D, kv = int64_t(s.n_head_kv) * D;
    const int64_t Nv = s.linear_n_v_heads, kd = int64_t(s.linear_n_k_heads) * s.linear_d_k;
    const int64_t vd = Nv * s.linear_d_v, cd = 2 * kd + vd;
    Table t;
    t["token_embd.weight"] = {E, s.n_vocab};
    t["output_norm.weight"] = {E};
    if (!tied) t["output.weight"] = {E, s.n_vocab};
    for (int il = 0; il < s.n_layer + (mtp ? 1 : 0); ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        t[g + "attn_norm.weight"] = {E};
        t[g + "post_attention_norm.weight"] = {E};
        if ((il + 1) % 4 == 0 || il == s.n_layer) {
            t[g + "attn_q.weight"] = {E, 2 * q};
            t[g + "attn_k.weight"] = {E, kv};
            t[g + "attn_v.weight"] = {E, kv};
            t[g + "attn_output.weight"] = {q, E};
            t[g + "attn_q_norm.weight"] = {D};
            t[g + "attn_k_norm.weight"] = {D};
        } else {
            t[g + "attn_qkv.weight"] = {E, cd};
            t[g + "attn_gate.weight"] = {E, vd};
            t[g + "ssm_beta.weight"] = {E, Nv};
            t[g + "ssm_alpha.weight"] = {E, Nv};
            t[g + "ssm_a"] = {Nv};
            t[g + "ssm_dt.bias"] = {Nv};
            t[g + "ssm_conv1d.weight"] = {4, cd};
            t[g + "ssm_norm.weight"] = {s.linear_d_v};
            t[g + "ssm_out.weight"] = {vd, E};
        }
        if (s.is_moe()) {
            const int64_t X = s.n_expert, I = s.n_ff_exp, S = s.n_ff_shexp;
            t[g + "ffn_gate_inp.weight"] = {E, X};
            t[g + "ffn_gate_exps.weight"] = {E, I, X};
            t[g + "ffn_up_exps.weight"] = {E, I, X};
            t[g + "ffn_down_exps.weight"] = {I, E, X};
            t[g + "ffn_gate_shexp.weight"] = {E, S};
            t[g + "ffn_up_shexp.weight"] = {E, S};
            t[g + "ffn_down_shexp.weight"] = {S, E};
            t[g + "ffn_gate_inp_shexp.weight"] = {E, 1};
        } else {
            t[g + "ffn_gate.weight"] = {E, s.n_ff};
            t[g + "ffn_up.weight"] = {E, s.n_ff};
            t[g + "ffn_down.weight"] = {s.n_ff, E};
        }
        if (il == s.n_layer) {
            t[g + "nextn.eh_proj.weight"] = {2 * E, E};
            t[g + "nextn.enorm.weight"] = {E};
            t[g + "nextn.hnorm.weight"] = {E};
            t[g + "nextn.shared_head_norm.weight"] = {E};
        }
    }
    return t;
}

// The HF tensor table (shapes in HF order), from the Qwen3.6-27B tensor list and transformers.
Table hf_table(const Qwen35Shape& s, bool tied, bool mtp, bool fused) {
    const int64_t E = s.n_embd, D = s.head_dim, q = int64_t(s.n_head) * D, kv = int64_t(s.n_head_kv) * D;
    const int64_t Nv = s.linear_n_v_heads, kd = int64_t(s.linear_n_k_heads) * s.linear_d_k;
    const int64_t vd = Nv * s.linear_d_v, cd = 2 * kd + vd;
    Table t;
    t["model.language_model.embed_tokens.weight"] = {s.n_vocab, E};
    t["model.language_model.norm.weight"] = {E};
    if (!tied) t["lm_head.weight"] = {s.n_vocab, E};
    for (int il = 0; il < s.n_layer + (mtp ? 1 : 0); ++il) {
        const bool is_mtp = il == s.n_layer;
        const std::string h = is_mtp ? "mtp.layers.0." : "model.language_model.layers." + std::to_string(il) + ".";
        t[h + "input_layernorm.weight"] = {E};
        t[h + "post_attention_layernorm.weight"] = {E};
        if ((il + 1) % 4 == 0 || is_mtp) {
            t[h + "self_attn.q_proj.weight"] = {2 * q, E};
            t[h + "self_attn.k_proj.weight"] = {kv, E};
            t[h + "self_attn.v_proj.weight"] = {kv, E};
            t[h + "self_attn.o_proj.weight"] = {E, q};
            t[h + "self_attn.q_norm.weight"] = {D};
            t[h + "self_attn.k_norm.weight"] = {D};
        } else {
            t[h + "linear_attn.in_proj_qkv.weight"] = {cd, E};
            t[h + "linear_attn.in_proj_z.weight"] = {vd, E};
            t[h + "linear_attn.in_proj_b.weight"] = {Nv, E};
            t[h + "linear_attn.in_proj_a.weight"] = {Nv, E};
            t[h + "linear_attn.A_log"] = {Nv};
            t[h + "linear_attn.dt_bias"] = {Nv};
            t[h + "linear_attn.conv1d.weight"] = {cd, 1, 4};
            t[h + "linear_attn.norm.weight"] = {s.linear_d_v};
            t[h + "linear_attn.out_proj.weight"] = {E, vd};
        }
        if (s.is_moe()) {
            const int64_t X = s.n_expert, I = s.n_ff_exp, S = s.n_ff_shexp;
            t[h + "mlp.gate.weight"] = {X, E};
            if (fused && !is_mtp) {
                t[h + "mlp.experts.gate_up_proj"] = {X, 2 * I, E};
                t[h + "mlp.experts.down_proj"] = {X, E, I};
            } else {
                for (int64_t e = 0; e < X; ++e) {
                    const std::string x = h + "mlp.experts." + std::to_string(e) + ".";
                    t[x + "gate_proj.weight"] = {I, E};
                    t[x + "up_proj.weight"] = {I, E};
                    t[x + "down_proj.weight"] = {E, I};
                }
            }
            t[h + "mlp.shared_expert.gate_proj.weight"] = {S, E};
            t[h + "mlp.shared_expert.up_proj.weight"] = {S, E};
            t[h + "mlp.shared_expert.down_proj.weight"] = {E, S};
            t[h + "mlp.shared_expert_gate.weight"] = {1, E};
        } else {
            t[h + "mlp.gate_proj.weight"] = {s.n_ff, E};
            t[h + "mlp.up_proj.weight"] = {s.n_ff, E};
            t[h + "mlp.down_proj.weight"] = {E, s.n_ff};
        }
    }
    if (mtp) {
        t["mtp.fc.weight"] = {E, 2 * E};
        t["mtp.pre_fc_norm_embedding.weight"] = {E};
        t["mtp.pre_fc_norm_hidden.weight"] = {E};
        t["mtp.norm.weight"] = {E};
    }
    return t;
}

void expect_gguf_table(const ModelSource& src, const Table& want) {
    EXPECT_EQ(src.tensors().size(), want.size());
    for (const auto& [name, ne] : want) {
        const SourceTensor* t = src.find(name);
        ASSERT_TRUE(t) << name;
        ASSERT_EQ(t->n_dims, int(ne.size())) << name;
        for (size_t i = 0; i < ne.size(); ++i) EXPECT_EQ(t->ne[i], ne[i]) << name << " dim " << i;
    }
}

void expect_hf_table(const ModelSource& src, const Table& want) {
    EXPECT_EQ(src.tensors().size(), want.size());
    for (const auto& [name, shape] : want) {
        const SafetensorsTensor* t = src.safetensors()->find(name);
        ASSERT_TRUE(t) << name;
        EXPECT_EQ(t->shape, shape) << name;
    }
}

// Tensors the converter writes F32 whatever the output type (convert_hf_to_gguf prepare_tensors).
bool converter_keeps_f32(const std::string& n) {
    for (const char* suffix : {"_norm.weight", ".nextn.enorm.weight", ".nextn.hnorm.weight", ".ssm_a", ".ssm_dt.bias",
                               ".ssm_conv1d.weight", ".ffn_gate_inp.weight", ".ffn_gate_inp_shexp.weight"})
        if (n.size() >= std::strlen(suffix) && n.compare(n.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
            return true;
    return false;
}

// ===== llama.cpp's conversion, emulated: HF checkpoint -> GGUF values ==============================

// _reorder_v_heads on a [rows][cols] matrix along rows (from row `offset`) or along columns:
// view the heads as [Nk][r][hd], swap the first two axes.
std::vector<float> reorder(const std::vector<float>& m, int64_t cols, bool along_rows, int64_t offset, int64_t nk,
                           int64_t r, int64_t hd) {
    std::vector<float> out = m;
    const int64_t rows = int64_t(m.size()) / cols;
    for (int64_t kh = 0; kh < nk; ++kh)
        for (int64_t j = 0; j < r; ++j)
            for (int64_t w = 0; w < hd; ++w) {
                const int64_t from = offset + (kh * r + j) * hd + w, to = offset + (j * nk + kh) * hd + w;
                if (along_rows) {
                    std::copy_n(m.begin() + from * cols, cols, out.begin() + to * cols);
                } else {
                    for (int64_t row = 0; row < rows; ++row) out[size_t(row * cols + to)] = m[size_t(row * cols + from)];
                }
            }
    return out;
}

std::vector<float> converted(const ModelSource& hf, const Qwen35Shape& s, const std::string& gguf_name) {
    auto get = [&](const std::string& n) {
        const SourceTensor* t = hf.find(n);
        EXPECT_TRUE(t) << n;
        return t ? values(*t) : std::vector<float>{};
    };
    auto plus_one = [](std::vector<float> v) {
        for (float& x : v) x += 1.0f;
        return v;
    };
    const std::string lm = "model.language_model.";
    if (gguf_name == "token_embd.weight") return get(lm + "embed_tokens.weight");
    if (gguf_name == "output.weight") return get("lm_head.weight");
    if (gguf_name == "output_norm.weight") return plus_one(get(lm + "norm.weight"));
    // blk.N.<rest>: the MTP block N == n_layer maps onto mtp.* (_Qwen35MtpMixin).
    const size_t dot = gguf_name.find('.', 4);
    const int il = std::stoi(gguf_name.substr(4, dot - 4));
    const std::string rest = gguf_name.substr(dot + 1);
    const bool mtp = il == s.n_layer;
    const std::string h = mtp ? "mtp.layers.0." : lm + "layers." + std::to_string(il) + ".";
    const int64_t E = s.n_embd, nk = s.linear_n_k_heads, r = s.linear_n_v_heads / s.linear_n_k_heads;
    const int64_t dv = s.linear_d_v, kd = nk * s.linear_d_k;
    static const std::map<std::string, std::string> kPlain = {
        {"attn_q.weight", "self_attn.q_proj.weight"},      {"attn_k.weight", "self_attn.k_proj.weight"},
        {"attn_v.weight", "self_attn.v_proj.weight"},      {"attn_output.weight", "self_attn.o_proj.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},       {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"},       {"ffn_gate_inp.weight", "mlp.gate.weight"},
        {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
        {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
        {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
        {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"},
        {"ssm_norm.weight", "linear_attn.norm.weight"},  // the one norm without +1
    };
    static const std::map<std::string, std::string> kPlusOne = {
        {"attn_norm.weight", "input_layernorm.weight"},
        {"post_attention_norm.weight", "post_attention_layernorm.weight"},
        {"attn_q_norm.weight", "self_attn.q_norm.weight"},
        {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    };
    if (auto it = kPlain.find(rest); it != kPlain.end()) return get(h + it->second);
    if (auto it = kPlusOne.find(rest); it != kPlusOne.end()) return plus_one(get(h + it->second));
    if (rest == "nextn.eh_proj.weight") return get("mtp.fc.weight");
    if (rest == "nextn.enorm.weight") return plus_one(get("mtp.pre_fc_norm_embedding.weight"));
    if (rest == "nextn.hnorm.weight") return plus_one(get("mtp.pre_fc_norm_hidden.weight"));
    if (rest == "nextn.shared_head_norm.weight") return plus_one(get("mtp.norm.weight"));
    const std::string a = h + "linear_attn.";
    if (rest == "attn_qkv.weight") return reorder(get(a + "in_proj_qkv.weight"), E, true, 2 * kd, nk, r, dv);
    if (rest == "attn_gate.weight") return reorder(get(a + "in_proj_z.weight"), E, true, 0, nk, r, dv);
    if (rest == "ssm_beta.weight") return reorder(get(a + "in_proj_b.weight"), E, true, 0, nk, r, 1);
    if (rest == "ssm_alpha.weight") return reorder(get(a + "in_proj_a.weight"), E, true, 0, nk, r, 1);
    if (rest == "ssm_dt.bias") return reorder(get(a + "dt_bias"), 1, true, 0, nk, r, 1);
    if (rest == "ssm_conv1d.weight") return reorder(get(a + "conv1d.weight"), 4, true, 2 * kd, nk, r, dv);
    if (rest == "ssm_out.weight") return reorder(get(a + "out_proj.weight"), nk * r * dv, false, 0, nk, r, dv);
    if (rest == "ssm_a") {
        std::vector<float> v = reorder(get(a + "A_log"), 1, true, 0, nk, r, 1);
        for (float& x : v) x = -std::exp(x);
        return v;
    }
    // Experts: stacked per expert, or split out of the fused gate_up_proj (gate first).
    const int64_t X = s.n_expert, I = s.n_ff_exp;
    const std::string m = h + "mlp.experts.";
    for (const char* w : {"gate", "up", "down"}) {
        if (rest != std::string("ffn_") + w + "_exps.weight") continue;
        std::vector<float> out;
        if (hf.find(m + "gate_up_proj")) {
            if (std::string(w) == "down") return get(m + "down_proj");
            const std::vector<float> gu = get(m + "gate_up_proj");
            const int64_t half = I * E, first = std::string(w) == "gate" ? 0 : half;
            for (int64_t e = 0; e < X; ++e)
                out.insert(out.end(), gu.begin() + e * 2 * half + first, gu.begin() + e * 2 * half + first + half);
            return out;
        }
        for (int64_t e = 0; e < X; ++e) {
            const std::vector<float> one = get(m + std::to_string(e) + "." + w + "_proj.weight");
            out.insert(out.end(), one.begin(), one.end());
        }
        return out;
    }
    ADD_FAILURE() << "no conversion rule for " << gguf_name;
    return {};
}

}  // namespace

TEST(Qwen35Synth, presets_have_the_documented_shapes) {
    const Qwen35Shape tiny = preset("tiny"), moe = preset("tiny-moe"), b08 = preset("0.8b");
    EXPECT_EQ(tiny.n_layer, 4);
    EXPECT_FALSE(tiny.is_full_attention(2));
    EXPECT_TRUE(tiny.is_full_attention(3));
    EXPECT_EQ(tiny.linear_n_v_heads / tiny.linear_n_k_heads, 2);  // grouped != tiled
    EXPECT_EQ(tiny.n_rot, tiny.head_dim / 4);
    EXPECT_EQ(tiny.mrope_sections[0] + tiny.mrope_sections[1] + tiny.mrope_sections[2], tiny.n_rot / 2);
    EXPECT_FALSE(tiny.is_moe());
    EXPECT_TRUE(tiny.mtp);
    EXPECT_TRUE(moe.is_moe());
    EXPECT_EQ(moe.n_expert, 8);
    EXPECT_EQ(moe.n_expert_used, 2);
    EXPECT_GT(moe.n_ff_shexp, 0);
    EXPECT_EQ(b08.n_vocab, 248320);
    EXPECT_EQ(b08.n_embd, 1024);
    EXPECT_EQ(b08.n_layer, 24);
    EXPECT_EQ(b08.n_head, 8);
    EXPECT_EQ(b08.n_head_kv, 2);
    EXPECT_EQ(b08.head_dim, 256);
    EXPECT_EQ(b08.n_rot, 64);
    EXPECT_EQ(b08.mrope_sections, (std::array<int32_t, 3>{11, 11, 10}));
    EXPECT_EQ(b08.n_ff, 3584);
    EXPECT_EQ(b08.linear_n_k_heads, 16);
    EXPECT_EQ(b08.linear_n_v_heads, 16);
    EXPECT_EQ(b08.linear_d_k, 128);
    EXPECT_EQ(b08.linear_d_v, 128);
    EXPECT_EQ(b08.rope_theta, 1e7f);
    EXPECT_TRUE(b08.tied_embeddings);
    EXPECT_TRUE(b08.mtp);
    int full = 0;
    for (int il = 0; il < b08.n_layer; ++il) full += b08.is_full_attention(il);
    EXPECT_EQ(full, 6);  // 18 GDN + 6 attention
    EXPECT_EQ(qwen35_preset_names().size(), 3u);
}

TEST(Qwen35Synth, value_head_orders_are_inverse_permutations_matching_the_converter) {
    // Nk = 2, Nv = 6 (r = 3): grouped [G0v0 G0v1 G0v2 G1v0 G1v1 G1v2] -> tiled [G0v0 G1v0 G0v1 ...].
    const int32_t want_tiled_pos[6] = {0, 2, 4, 1, 3, 5};
    for (int32_t h = 0; h < 6; ++h) {
        EXPECT_EQ(qwen35_grouped_to_tiled(h, 2, 6), want_tiled_pos[h]) << h;
        EXPECT_EQ(qwen35_tiled_to_grouped(qwen35_grouped_to_tiled(h, 2, 6), 2, 6), h) << h;
    }
    EXPECT_EQ(qwen35_grouped_to_tiled(5, 4, 4), 5);  // r = 1: identity
}

TEST(Qwen35Synth, gguf_has_converter_metadata_and_exactly_the_qwen35_tensors) {
    const Qwen35Shape s = preset("tiny");
    Qwen35SynthOptions o;
    o.weight_type = DType::Q8_0;
    o.name = "tiny test";
    auto src = open_source(test35::synth_model(s, o));
    ASSERT_TRUE(src);
    EXPECT_EQ(src->architecture(), "qwen35");
    const GgufFile& f = *src->gguf();
    auto u32 = [&](const std::string& key) {
        const GgufValue* v = f.find(key);
        EXPECT_TRUE(v && v->type == GgufType::UINT32) << key;  // what gguf-py writes for ints
        auto r = f.get_uint(key);
        return r.ok() ? int64_t(*r) : -1;
    };
    auto f32 = [&](const std::string& key) {
        const GgufValue* v = f.find(key);
        EXPECT_TRUE(v && v->type == GgufType::FLOAT32) << key;
        auto r = f.get_float(key);
        return r.ok() ? float(*r) : -1.0f;
    };
    EXPECT_EQ(*f.get_string("general.name"), "tiny test");
    EXPECT_EQ(*f.get_string("general.type"), "model");
    EXPECT_EQ(u32("general.file_type"), 7);
    EXPECT_EQ(u32("general.quantization_version"), 2);
    EXPECT_EQ(u32("qwen35.block_count"), 5);  // 4 trunk layers + the MTP layer
    EXPECT_EQ(u32("qwen35.nextn_predict_layers"), 1);
    EXPECT_EQ(u32("qwen35.context_length"), 4096);
    EXPECT_EQ(u32("qwen35.embedding_length"), 64);
    EXPECT_EQ(u32("qwen35.feed_forward_length"), 128);
    EXPECT_EQ(u32("qwen35.attention.head_count"), 4);
    EXPECT_EQ(u32("qwen35.attention.head_count_kv"), 2);
    EXPECT_EQ(u32("qwen35.attention.key_length"), 64);
    EXPECT_EQ(u32("qwen35.attention.value_length"), 64);
    EXPECT_EQ(f32("qwen35.attention.layer_norm_rms_epsilon"), 1e-6f);
    EXPECT_EQ(f32("qwen35.rope.freq_base"), 1e7f);
    EXPECT_EQ(u32("qwen35.rope.dimension_count"), 16);
    const GgufValue* sec = f.find("qwen35.rope.dimension_sections");
    ASSERT_TRUE(sec);
    EXPECT_EQ(sec->type, GgufType::ARRAY);
    EXPECT_EQ(sec->elem_type, GgufType::INT32);
    EXPECT_EQ(*f.get_int_array("qwen35.rope.dimension_sections"), (std::vector<int64_t>{3, 3, 2, 0}));
    EXPECT_EQ(u32("qwen35.full_attention_interval"), 4);
    EXPECT_EQ(u32("qwen35.ssm.conv_kernel"), 4);
    EXPECT_EQ(u32("qwen35.ssm.state_size"), 16);
    EXPECT_EQ(u32("qwen35.ssm.group_count"), 2);
    EXPECT_EQ(u32("qwen35.ssm.time_step_rank"), 4);
    EXPECT_EQ(u32("qwen35.ssm.inner_size"), 64);
    EXPECT_FALSE(f.find("qwen35.expert_count"));
    EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(*f.get_string("tokenizer.ggml.pre"), "qwen35");
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens")->size(), 512u);
    EXPECT_EQ(u32("tokenizer.ggml.eos_token_id"), 509);  // <|im_end|>
    EXPECT_TRUE(f.get_string("tokenizer.chat_template")->find("<think>") != std::string::npos);

    expect_gguf_table(*src, gguf_table(s, /*tied=*/false, /*mtp=*/true));
    for (const SourceTensor& t : src->tensors())
        EXPECT_EQ(t.type, uint32_t(converter_keeps_f32(t.name) ? DType::F32 : DType::Q8_0)) << t.name;
}

TEST(Qwen35Synth, moe_gguf_has_expert_metadata_and_3d_expert_tensors) {
    const Qwen35Shape s = preset("tiny-moe");
    Qwen35SynthOptions o;
    o.weight_type = DType::BF16;
    auto src = open_source(test35::synth_model(s, o));
    ASSERT_TRUE(src);
    EXPECT_EQ(src->architecture(), "qwen35moe");
    const GgufFile& f = *src->gguf();
    EXPECT_EQ(*f.get_uint("qwen35moe.block_count"), 5u);
    EXPECT_EQ(*f.get_uint("qwen35moe.expert_count"), 8u);
    EXPECT_EQ(*f.get_uint("qwen35moe.expert_used_count"), 2u);
    EXPECT_EQ(*f.get_uint("qwen35moe.expert_feed_forward_length"), 32u);
    EXPECT_EQ(*f.get_uint("qwen35moe.expert_shared_feed_forward_length"), 64u);
    EXPECT_FALSE(f.find("qwen35moe.feed_forward_length"));  // the MoE text config has no intermediate_size
    EXPECT_EQ(*f.get_uint("qwen35moe.nextn_predict_layers"), 1u);
    expect_gguf_table(*src, gguf_table(s, false, true));
    for (const SourceTensor& t : src->tensors())
        EXPECT_EQ(t.type, uint32_t(converter_keeps_f32(t.name) ? DType::F32 : DType::BF16)) << t.name;
}

TEST(Qwen35Synth, models_without_the_mtp_head_have_no_nextn_block_or_key) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const Qwen35Shape s = preset(name);
        Qwen35SynthOptions o;
        o.mtp = false;
        o.tied = true;
        auto g = open_source(test35::synth_model(s, o));
        auto h = open_source(test35::synth_model(s, o, /*hf=*/true));
        ASSERT_TRUE(g && h);
        const std::string arch(qwen35_arch(s));
        EXPECT_EQ(*g->gguf()->get_uint(arch + ".block_count"), 4u);
        EXPECT_FALSE(g->gguf()->find(arch + ".nextn_predict_layers"));
        expect_gguf_table(*g, gguf_table(s, /*tied=*/true, /*mtp=*/false));
        expect_hf_table(*h, hf_table(s, true, false, false));
        const nlohmann::json& tc = (*h->hf_config())["text_config"];
        EXPECT_EQ(tc["mtp_num_hidden_layers"], 0);
        EXPECT_EQ(tc["tie_word_embeddings"], true);
    }
}

TEST(Qwen35Synth, hf_directory_has_a_text_config_and_hf_tensor_names) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        for (bool fused : {false, true}) {
            const Qwen35Shape s = preset(name);
            if (fused && !s.is_moe()) continue;
            SCOPED_TRACE(std::string(name) + (fused ? " fused" : ""));
            Qwen35SynthOptions o;
            o.weight_type = DType::BF16;
            o.hf_fused_experts = fused;
            const std::string dir = test35::synth_model(s, o, /*hf=*/true);
            for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
                EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
            auto src = open_source(dir);
            ASSERT_TRUE(src);
            const nlohmann::json& c = *src->hf_config();
            EXPECT_EQ(src->architecture(), s.is_moe() ? "qwen3_5_moe" : "qwen3_5");
            EXPECT_EQ(c["architectures"][0], s.is_moe() ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration");
            const nlohmann::json& t = c["text_config"];
            EXPECT_EQ(t["model_type"], s.is_moe() ? "qwen3_5_moe_text" : "qwen3_5_text");
            EXPECT_EQ(t["hidden_size"], 64);
            EXPECT_EQ(t["num_hidden_layers"], 4);
            EXPECT_EQ(t["layer_types"],
                      nlohmann::json({"linear_attention", "linear_attention", "linear_attention", "full_attention"}));
            EXPECT_EQ(t["full_attention_interval"], 4);
            EXPECT_EQ(t["num_attention_heads"], 4);
            EXPECT_EQ(t["num_key_value_heads"], 2);
            EXPECT_EQ(t["head_dim"], 64);
            EXPECT_EQ(t["linear_num_key_heads"], 2);
            EXPECT_EQ(t["linear_num_value_heads"], 4);
            EXPECT_EQ(t["linear_key_head_dim"], 16);
            EXPECT_EQ(t["linear_value_head_dim"], 16);
            EXPECT_EQ(t["linear_conv_kernel_dim"], 4);
            EXPECT_EQ(t["rms_norm_eps"], 1e-6);
            EXPECT_EQ(t["rope_parameters"]["rope_theta"], 10000000);
            EXPECT_EQ(t["rope_parameters"]["partial_rotary_factor"], 0.25);
            EXPECT_EQ(t["rope_parameters"]["mrope_section"], nlohmann::json({3, 3, 2}));
            EXPECT_EQ(t["rope_parameters"]["mrope_interleaved"], true);
            EXPECT_EQ(t["mtp_num_hidden_layers"], 1);
            EXPECT_EQ(t["tie_word_embeddings"], false);
            EXPECT_EQ(t["vocab_size"], 512);
            EXPECT_EQ(t["dtype"], "bfloat16");
            if (s.is_moe()) {
                EXPECT_FALSE(t.contains("intermediate_size"));
                EXPECT_EQ(t["num_experts"], 8);
                EXPECT_EQ(t["num_experts_per_tok"], 2);
                EXPECT_EQ(t["moe_intermediate_size"], 32);
                EXPECT_EQ(t["shared_expert_intermediate_size"], 64);
            } else {
                EXPECT_EQ(t["intermediate_size"], 128);
            }
            expect_hf_table(*src, hf_table(s, false, true, fused));
            for (const SourceTensor& x : src->tensors()) EXPECT_EQ(x.dtype, "BF16") << x.name;
        }
    }
}

TEST(Qwen35Synth, gguf_is_what_the_converter_makes_of_the_hf_checkpoint) {
    struct Case {
        const char* preset;
        DType type;
        bool fused;
    };
    for (const Case& c : {Case{"tiny", DType::F32, false}, Case{"tiny", DType::BF16, false}, Case{"tiny", DType::F16, false},
                          Case{"tiny-moe", DType::F32, false}, Case{"tiny-moe", DType::BF16, true}}) {
        SCOPED_TRACE(std::string(c.preset) + " " + std::string(dtype_name(c.type)) + (c.fused ? " fused" : ""));
        const Qwen35Shape s = preset(c.preset);
        Qwen35SynthOptions o;
        o.weight_type = c.type;
        o.seed = 7;
        o.hf_fused_experts = c.fused;
        auto g = open_source(test35::synth_model(s, o)), h = open_source(test35::synth_model(s, o, /*hf=*/true));
        ASSERT_TRUE(g && h);
        for (const SourceTensor& t : g->tensors()) {
            const std::vector<float> want = converted(*h, s, t.name);
            EXPECT_EQ(values(t), want) << t.name;
        }
        // The transforms really change values (a layout bug cannot hide behind r = 1 or w = 0).
        const std::string qkv = "blk.0.attn_qkv.weight", hf_qkv = "model.language_model.layers.0.linear_attn.in_proj_qkv.weight";
        EXPECT_NE(values(*g->find(qkv)), values(*h->find(hf_qkv)));
        EXPECT_NE(values(*g->find("blk.0.attn_norm.weight")),
                  values(*h->find("model.language_model.layers.0.input_layernorm.weight")));
    }
}

TEST(Qwen35Synth, vocabulary_has_the_qwen35_specials_and_both_tokenizer_files_agree) {
    const Qwen35Shape s = preset("tiny");
    auto l = qwen35_vocab_layout(s.n_vocab);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->n_text, 507);
    EXPECT_EQ(l->endoftext, 507);
    EXPECT_EQ(l->im_end, 509);
    EXPECT_EQ(l->think, 510);
    EXPECT_EQ(l->think_end, 511);
    const std::string gguf = test35::synth_model(s, {}), hf = test35::synth_model(s, {}, /*hf=*/true);
    auto g = open_source(gguf);
    ASSERT_TRUE(g);
    auto tg = load_tokenizer_gguf(*g->gguf());
    auto th = load_tokenizer_hf_file(hf);
    ASSERT_TRUE(tg.ok()) << tg.error().message();
    ASSERT_TRUE(th.ok()) << th.error().message();
    EXPECT_EQ(tg->vocab().pre, PreTokenizer::qwen35);
    EXPECT_EQ(th->vocab().pre, PreTokenizer::qwen35);
    const std::string text = "<|im_start|>user\nHello, the world café 123!<|im_end|>\n<|im_start|>assistant\n<think>\n";
    const std::vector<int32_t> a = tg->encode(text, true), b = th->encode(text, true);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.front(), 508);  // <|im_start|>, no BOS
    EXPECT_NE(std::find(a.begin(), a.end(), 510), a.end());  // <think> is one token
    EXPECT_EQ(tg->decode(a), text);
    const nlohmann::json c = nlohmann::json::parse(test::read_file(hf + "/config.json"));
    EXPECT_EQ(c["text_config"]["eos_token_id"], 507);
}

TEST(Qwen35Synth, seed_determines_the_file_and_thread_count_does_not) {
    const Qwen35Shape s = preset("tiny-moe");
    const std::string dir = test::make_temp_dir("q35-seed");
    Qwen35SynthOptions o;
    o.weight_type = DType::Q4_0;
    o.n_threads = 1;
    ASSERT_TRUE(synth_qwen35_gguf(dir + "/a.gguf", s, o).ok());
    o.n_threads = 3;
    ASSERT_TRUE(synth_qwen35_gguf(dir + "/b.gguf", s, o).ok());
    o.seed = 2;
    ASSERT_TRUE(synth_qwen35_gguf(dir + "/c.gguf", s, o).ok());
    EXPECT_EQ(test::read_file(dir + "/a.gguf"), test::read_file(dir + "/b.gguf"));
    EXPECT_NE(test::read_file(dir + "/a.gguf"), test::read_file(dir + "/c.gguf"));
}

TEST(Qwen35Synth, hf_checkpoint_can_be_sharded_with_an_index) {
    const Qwen35Shape s = preset("tiny-moe");
    Qwen35SynthOptions o;
    o.weight_type = DType::F16;
    auto one = open_source(test35::synth_model(s, o, true));
    o.hf_shard_bytes = 100'000;
    const std::string dir = test35::synth_model(s, o, true);
    EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
    auto sharded = open_source(dir);
    ASSERT_TRUE(one && sharded);
    EXPECT_GT(sharded->safetensors()->shard_count(), 2u);
    expect_hf_table(*sharded, hf_table(s, false, true, false));
    for (const SourceTensor& t : one->tensors()) EXPECT_EQ(values(t), values(*sharded->find(t.name))) << t.name;
}

TEST(Qwen35Synth, bad_options_are_rejected_with_clear_errors) {
    const Qwen35Shape tiny = preset("tiny");
    const std::string dir = test::make_temp_dir("q35-bad");
    EXPECT_TRUE(fails_with(qwen35_preset("27b"), {"unknown qwen35 preset '27b'", "tiny, tiny-moe, 0.8b"}));
    Qwen35SynthOptions q8;
    q8.weight_type = DType::Q8_0;
    EXPECT_TRUE(fails_with(synth_qwen35_hf(dir + "/hf", tiny, q8), {"F32, F16 or BF16", "q8_0"}));
    EXPECT_FALSE(std::filesystem::exists(dir + "/hf"));
    Qwen35SynthOptions o;
    o.weight_type = DType::I8;
    EXPECT_TRUE(fails_with(synth_qwen35_gguf(dir + "/m.gguf", tiny, o), "weight type i8"));
    o = {};
    o.repeating = true;
    o.tied = true;
    EXPECT_TRUE(fails_with(validate_qwen35(tiny, o), "cannot be tied"));
    o = {};
    o.hf_fused_experts = true;
    EXPECT_TRUE(fails_with(validate_qwen35(tiny, o), "hf_fused_experts needs a MoE shape"));
    o = {};
    o.repeat_period = 0;
    EXPECT_TRUE(fails_with(validate_qwen35(tiny, o), "repeat_period"));

    Qwen35Shape s = tiny;
    s.linear_n_v_heads = 3;
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "linear_n_v_heads 3 is not a multiple of linear_n_k_heads 2"));
    s = tiny;
    s.n_rot = 15;
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "n_rot 15 must be even"));
    s = tiny;
    s.mrope_sections = {11, 11, 10};
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "sum to n_rot / 2 = 8"));
    s = tiny;
    s.n_head_kv = 3;
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "n_head 4 is not a multiple of n_head_kv 3"));
    s = tiny;
    s.n_vocab = 260;
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "n_vocab 260 is too small"));
    s = preset("tiny-moe");
    s.n_expert_used = 9;
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "n_expert_used 9 must be between 1 and n_expert 8"));
    s = preset("tiny-moe");
    s.n_ff = 128;
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "n_ff must be 0 for a MoE shape"));
    s = tiny;
    s.linear_d_k = 0;
    EXPECT_TRUE(fails_with(validate_qwen35(s, {}), "linear_d_k must be positive"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/m.gguf"));
}

TEST(Qwen35Synth, the_0_8b_preset_as_q8_0_holds_the_full_table_at_the_full_size) {
    const Qwen35Shape s = preset("0.8b");
    const std::string path = test::make_temp_dir("q35-08b") + "/qwen35-0.8b-q8_0.gguf";
    Qwen35SynthOptions o;
    o.weight_type = DType::Q8_0;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(synth_qwen35_gguf(path, s, o).ok());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RecordProperty("seconds", fmt::format("{:.2f}", seconds));  // recorded, never a threshold
    {
        auto src = open_source(path);
        ASSERT_TRUE(src);
        expect_gguf_table(*src, gguf_table(s, /*tied=*/true, /*mtp=*/true));
        EXPECT_EQ(*src->gguf()->get_uint("qwen35.block_count"), 25u);
        EXPECT_EQ(src->find("blk.24.nextn.eh_proj.weight")->ne[0], 2048);
        const uint64_t bytes = src->file_bytes();
        RecordProperty("bytes", std::to_string(bytes));
        EXPECT_GT(bytes, 780'000'000u);
        EXPECT_LT(bytes, 1'000'000'000u);
    }
    std::filesystem::remove(path);  // ~0.9 GB: do not wait for exit
}
