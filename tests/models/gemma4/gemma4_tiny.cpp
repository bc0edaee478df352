// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_tiny.cpp: presets, random weights and the GGUF / HF writers of the tiny
// Gemma 4 test models (see gemma4_tiny.h). Names and keys follow /work/notes/gemma4_contract.md
// and docs/models/gemma4.md §2.1.
#include "gemma4_tiny.h"

#include "common/error.h"
#include "support/fixtures.h"
#include "support/reference.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tdm::test::g4 {
namespace {

std::vector<float> noise(size_t n, uint32_t& seed) {
    std::vector<float> v(n);
    for (float& x : v) {
        seed = seed * 1664525u + 1013904223u;
        x = float(int32_t(seed)) / 2147483648.0f;  // [-1, 1)
    }
    return v;
}

void check(const Status& s) {
    if (!s.ok()) throw std::runtime_error(s.error().message());
}

// HF per-layer / global suffix -> GGUF name.
std::string gguf_name(const std::string& hf) {
    static const std::map<std::string, std::string> globals = {
        {"embed_tokens.weight", "token_embd.weight"},
        {"norm.weight", "output_norm.weight"},
        {"embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
        {"per_layer_model_projection.weight", "per_layer_model_proj.weight"},
        {"per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
    };
    static const std::map<std::string, std::string> layer = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
        {"layer_scalar", "layer_output_scale.weight"},
        {"router.proj.weight", "ffn_gate_inp.weight"},
        {"router.scale", "ffn_gate_inp.scale"},
        {"router.per_expert_scale", "ffn_down_exps.scale"},
        {"experts.gate_up_proj", "ffn_gate_up_exps.weight"},
        {"experts.down_proj", "ffn_down_exps.weight"},
        {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
        {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
        {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"},
        {"per_layer_input_gate.weight", "inp_gate.weight"},
        {"per_layer_projection.weight", "proj.weight"},
        {"post_per_layer_input_norm.weight", "post_norm.weight"},
    };
    if (auto it = globals.find(hf); it != globals.end()) return it->second;
    const size_t dot1 = hf.find('.'), dot2 = hf.find('.', dot1 + 1);
    const std::string il = hf.substr(dot1 + 1, dot2 - dot1 - 1), rest = hf.substr(dot2 + 1);
    return "blk." + il + "." + layer.at(rest);
}

std::vector<uint8_t> encode(const std::vector<float>& v, DType t) {
    std::vector<uint8_t> out;
    if (t == DType::F32) {
        out.resize(v.size() * 4);
        std::memcpy(out.data(), v.data(), out.size());
    } else {
        const std::vector<uint16_t> h = t == DType::BF16 ? ref::to_bf16(v) : ref::to_f16(v);
        out.resize(h.size() * 2);
        std::memcpy(out.data(), h.data(), out.size());
    }
    return out;
}

bool gguf_skips(const Preset& p, const std::string& hf) {
    // llama.cpp's converter drops k/v of KV-shared layers and v of K=V full layers.
    if (hf.rfind("layers.", 0) != 0) return false;
    const int64_t il = std::stoll(hf.substr(7));
    const bool kv = hf.find("self_attn.k_proj") != std::string::npos || hf.find("self_attn.v_proj") != std::string::npos ||
                    hf.find("self_attn.k_norm") != std::string::npos;
    return kv && il >= first_shared(p);
}

}  // namespace

Preset preset(const std::string& name) {
    Preset p;
    if (name == "tiny-e2b") {
        p.layers = "SSFSF";
        p.kv_swa = 1;
        p.kv_full = 1;
        p.global_kv_null = true;
        p.n_ff = 128;
        p.double_wide = true;
        p.n_kv_shared = 2;
        p.P = 16;
    } else if (name == "tiny-31b") {
        p.layers = "SSSSSF";
        p.kv_swa = 2;
        p.kv_full = 1;
        p.k_eq_v = true;
        p.n_ff = 128;
    } else if (name == "tiny-26b") {
        p.layers = "SSSSSF";
        p.kv_swa = 2;
        p.kv_full = 1;
        p.k_eq_v = true;
        p.n_ff = 64;
        p.n_expert = 4;
        p.top_k = 2;
        p.n_ff_exp = 32;
    } else {
        throw std::runtime_error("unknown preset " + name);
    }
    return p;
}

bool is_sliding(const Preset& p, int64_t il) { return p.layers[size_t(il)] == 'S'; }
int64_t first_shared(const Preset& p) { return int64_t(p.layers.size()) - p.n_kv_shared; }
int64_t kv_source(const Preset& p, int64_t il) {
    if (il < first_shared(p)) return il;
    for (int64_t j = first_shared(p) - 1; j >= 0; --j)
        if (is_sliding(p, j) == is_sliding(p, il)) return j;
    throw std::runtime_error("no KV source");
}
int64_t n_ff_of(const Preset& p, int64_t il) { return p.double_wide && il >= first_shared(p) ? 2 * p.n_ff : p.n_ff; }
int64_t kv_heads_of(const Preset& p, int64_t il) { return is_sliding(p, il) ? p.kv_swa : p.kv_full; }
int64_t head_dim_of(const Preset& p, int64_t il) { return is_sliding(p, il) ? p.hd_swa : p.hd_full; }

Weights make_weights(const Preset& p, uint32_t seed, DType type) {
    Weights w;
    const int64_t H = p.n_embd, L = int64_t(p.layers.size());
    // Matrices uniform in +-1/sqrt(cols); norm weights near `center`.
    auto mat = [&](const std::string& name, std::vector<int64_t> shape) {
        size_t n = 1;
        for (int64_t d : shape) n *= size_t(d);
        std::vector<float> v = noise(n, seed);
        const float s = float(1.0 / std::sqrt(double(shape.back())));
        for (float& x : v) x *= s;
        w[name] = Tensor{std::move(shape), std::move(v)};
    };
    auto vec = [&](const std::string& name, int64_t n, float center, float spread) {
        std::vector<float> v = noise(size_t(n), seed);
        for (float& x : v) x = center + spread * x;
        w[name] = Tensor{{n}, std::move(v)};
    };
    w["embed_tokens.weight"] = Tensor{{p.n_vocab, H}, noise(size_t(p.n_vocab * H), seed)};
    vec("norm.weight", H, 1.0f, 0.2f);
    if (p.P > 0) {
        w["embed_tokens_per_layer.weight"] = Tensor{{p.n_vocab, L * p.P}, noise(size_t(p.n_vocab * L * p.P), seed)};
        mat("per_layer_model_projection.weight", {L * p.P, H});
        vec("per_layer_projection_norm.weight", p.P, 1.0f, 0.2f);
    }
    for (int64_t il = 0; il < L; ++il) {
        const std::string l = "layers." + std::to_string(il) + ".";
        const int64_t D = head_dim_of(p, il), kv = kv_heads_of(p, il), ff = n_ff_of(p, il);
        vec(l + "input_layernorm.weight", H, 1.0f, 0.2f);
        mat(l + "self_attn.q_proj.weight", {p.n_head * D, H});
        mat(l + "self_attn.k_proj.weight", {kv * D, H});
        if (!(p.k_eq_v && !is_sliding(p, il))) mat(l + "self_attn.v_proj.weight", {kv * D, H});
        mat(l + "self_attn.o_proj.weight", {H, p.n_head * D});
        // q/k norms keep q.k (scale 1.0) in a range where softmax is not one-hot.
        vec(l + "self_attn.q_norm.weight", D, 0.45f, 0.1f);
        vec(l + "self_attn.k_norm.weight", D, 0.45f, 0.1f);
        vec(l + "post_attention_layernorm.weight", H, 1.0f, 0.2f);
        vec(l + "pre_feedforward_layernorm.weight", H, 1.0f, 0.2f);
        mat(l + "mlp.gate_proj.weight", {ff, H});
        mat(l + "mlp.up_proj.weight", {ff, H});
        mat(l + "mlp.down_proj.weight", {H, ff});
        vec(l + "post_feedforward_layernorm.weight", H, 1.0f, 0.2f);
        vec(l + "layer_scalar", 1, 0.8f, 0.3f);
        if (p.n_expert > 0) {
            mat(l + "router.proj.weight", {p.n_expert, H});
            vec(l + "router.scale", H, 1.0f, 0.5f);
            vec(l + "router.per_expert_scale", p.n_expert, 1.0f, 0.4f);
            mat(l + "experts.gate_up_proj", {p.n_expert, 2 * p.n_ff_exp, H});
            mat(l + "experts.down_proj", {p.n_expert, H, p.n_ff_exp});
            vec(l + "pre_feedforward_layernorm_2.weight", H, 1.0f, 0.2f);
            vec(l + "post_feedforward_layernorm_1.weight", H, 1.0f, 0.2f);
            vec(l + "post_feedforward_layernorm_2.weight", H, 1.0f, 0.2f);
        }
        if (p.P > 0) {
            mat(l + "per_layer_input_gate.weight", {p.P, H});
            mat(l + "per_layer_projection.weight", {H, p.P});
            vec(l + "post_per_layer_input_norm.weight", H, 1.0f, 0.2f);
        }
    }
    if (type != DType::F32)
        for (auto& [name, t] : w) t.data = ref::cast_round(t.data, type);
    return w;
}

Weights amplify_layer_outputs(Weights w, float gain) {
    for (auto& [name, t] : w)
        if (name.find(".post_") != std::string::npos && t.shape.size() == 1)
            for (float& x : t.data) x *= gain;
    return w;
}

std::string write_gguf(const Preset& p, const Weights& w, const std::string& path, const WriteOptions& o) {
    const int64_t L = int64_t(p.layers.size());
    GgufWriter g;
    auto want = [&](const std::string& key) { return key != o.brk.drop_key; };
    const std::string a = "gemma4.";
    g.add_string("general.architecture", o.brk.arch.empty() ? "gemma4" : o.brk.arch);
    if (want("context_length")) g.add_u32(a + "context_length", 4096);
    if (want("embedding_length")) g.add_u32(a + "embedding_length", uint32_t(p.n_embd));
    if (want("block_count")) g.add_u32(a + "block_count", uint32_t(L));
    std::vector<int32_t> ff, kv;
    bool ff_differ = false;
    for (int64_t il = 0; il < L; ++il) {
        ff.push_back(int32_t(n_ff_of(p, il)));
        kv.push_back(int32_t(kv_heads_of(p, il)));
        ff_differ = ff_differ || ff.back() != ff.front();
    }
    if (want("feed_forward_length")) {
        if (ff_differ) g.add_array(a + "feed_forward_length", ff);
        else g.add_u32(a + "feed_forward_length", uint32_t(p.n_ff));
    }
    if (want("attention.head_count")) g.add_u32(a + "attention.head_count", uint32_t(p.n_head));
    if (want("attention.head_count_kv")) {
        if (o.scalar_kv_heads) g.add_u32(a + "attention.head_count_kv", uint32_t(kv.front()));
        else g.add_array(a + "attention.head_count_kv", kv);
    }
    if (want("attention.key_length")) g.add_u32(a + "attention.key_length", uint32_t(p.hd_full));
    g.add_u32(a + "attention.value_length", uint32_t(p.hd_full));
    if (want("attention.key_length_swa")) g.add_u32(a + "attention.key_length_swa", uint32_t(p.hd_swa));
    g.add_u32(a + "attention.value_length_swa", uint32_t(p.hd_swa));
    if (want("attention.layer_norm_rms_epsilon")) g.add_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    if (want("attention.sliding_window")) g.add_u32(a + "attention.sliding_window", uint32_t(p.window));
    std::vector<bool> pattern;
    for (int64_t il = 0; il < L; ++il) pattern.push_back(is_sliding(p, il));
    for (int i = 0; i < o.brk.pattern_extra; ++i) pattern.push_back(true);
    if (want("attention.sliding_window_pattern")) g.add_array(a + "attention.sliding_window_pattern", pattern);
    g.add_u32(a + "attention.shared_kv_layers", uint32_t(p.n_kv_shared));
    g.add_u32(a + "embedding_length_per_layer_input", uint32_t(p.P));
    g.add_u32(a + "rope.dimension_count", uint32_t(p.hd_full));
    g.add_u32(a + "rope.dimension_count_swa", uint32_t(p.hd_swa));
    if (want("rope.freq_base")) g.add_f32(a + "rope.freq_base", 1e6f);
    if (want("rope.freq_base_swa")) g.add_f32(a + "rope.freq_base_swa", 1e4f);
    g.add_f32(a + "final_logit_softcapping", 30.0f);
    if (p.n_expert > 0) {
        g.add_u32(a + "expert_count", uint32_t(p.n_expert));
        if (want("expert_used_count")) g.add_u32(a + "expert_used_count", uint32_t(p.top_k));
        g.add_u32(a + "expert_feed_forward_length", uint32_t(p.n_ff_exp));
    }

    auto put = [&](const std::string& name, std::vector<int64_t> ne, const std::vector<float>& data, DType t) {
        if (name == o.brk.drop_tensor) return;
        check(g.add_tensor(name, uint32_t(t), std::move(ne), encode(data, t)));
    };
    // rope_freqs: [1.0] * rotated slots + [1e30] * the rest (llama.cpp's emulation).
    const int64_t rot = int64_t(p.factor * double(p.hd_full) / 2.0);
    std::vector<float> freqs(size_t(p.hd_full / 2), 1e30f);
    for (int64_t i = 0; i < rot; ++i) freqs[size_t(i)] = 1.0f;
    put("rope_freqs.weight", {p.hd_full / 2}, freqs, DType::F32);
    for (const auto& [hf, t] : w) {
        if (gguf_skips(p, hf)) continue;
        std::vector<int64_t> ne(t.shape.rbegin(), t.shape.rend());
        if (o.brk.ple_shape && hf == "embed_tokens_per_layer.weight") {
            ne[0] -= p.P;  // one layer short
            put(gguf_name(hf), ne, std::vector<float>(t.data.begin(), t.data.begin() + ne[0] * ne[1]), o.type);
            continue;
        }
        put(gguf_name(hf), ne, t.data, t.shape.size() == 1 ? DType::F32 : o.type);
    }
    check(g.write_file(path));
    return path;
}

std::string write_hf(const Preset& p, const Weights& w, const std::string& dir, const WriteOptions& o) {
    const int64_t L = int64_t(p.layers.size());
    std::filesystem::create_directories(dir);
    nlohmann::json tc = {
        {"model_type", "gemma4_text"},
        {"hidden_size", p.n_embd},
        {"num_hidden_layers", L},
        {"num_attention_heads", p.n_head},
        {"num_key_value_heads", p.kv_swa},
        {"head_dim", p.hd_swa},
        {"attention_k_eq_v", p.k_eq_v},
        {"intermediate_size", p.n_ff},
        {"use_double_wide_mlp", p.double_wide},
        {"enable_moe_block", p.n_expert > 0},
        {"num_kv_shared_layers", p.n_kv_shared},
        {"hidden_size_per_layer_input", p.P},
        {"vocab_size_per_layer_input", p.P > 0 ? p.n_vocab : 0},
        {"sliding_window", p.window},
        {"rope_parameters",
         {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
          {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", p.factor}, {"rope_theta", 1000000.0}}}}},
        {"final_logit_softcapping", 30.0},
        {"rms_norm_eps", 1e-6},
        {"vocab_size", p.n_vocab},
        {"max_position_embeddings", 4096},
        {"tie_word_embeddings", true},
        {"hidden_activation", "gelu_pytorch_tanh"},
    };
    if (p.n_expert > 0) {
        tc["num_experts"] = p.n_expert;
        tc["top_k_experts"] = p.top_k;
        tc["moe_intermediate_size"] = p.n_ff_exp;
    }
    nlohmann::json types = nlohmann::json::array();
    for (int64_t il = 0; il < L; ++il) types.push_back(is_sliding(p, il) ? "sliding_attention" : "full_attention");
    for (int i = 0; i < o.brk.pattern_extra; ++i) types.push_back("sliding_attention");
    tc["layer_types"] = types;
    if (o.per_layer_config) {
        nlohmann::json plc = nlohmann::json::object();
        for (int64_t il = 0; il < L; ++il)
            if (!is_sliding(p, il)) plc[std::to_string(il)] = {{"head_dim", p.hd_full}, {"num_key_value_heads", p.kv_full}};
        tc["per_layer_config"] = plc;
    } else {
        tc["global_head_dim"] = p.hd_full;
        tc["num_global_key_value_heads"] = p.global_kv_null ? nlohmann::json(nullptr) : nlohmann::json(p.kv_full);
    }
    if (!o.brk.drop_key.empty()) tc.erase(o.brk.drop_key);
    nlohmann::json cfg = {{"architectures", {"Gemma4ForConditionalGeneration"}},
                          {"model_type", o.brk.arch.empty() ? "gemma4" : o.brk.arch},
                          {"text_config", tc},
                          {"tie_word_embeddings", true},
                          {"eos_token_id", {1, 106}}};
    if (o.text_only) {
        cfg = tc;
        cfg["architectures"] = {"Gemma4ForCausalLM"};
    }
    std::ofstream(dir + "/config.json") << cfg.dump(2);

    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dt = o.type == DType::BF16 ? "BF16" : o.type == DType::F16 ? "F16" : "F32";
    for (const auto& [hf, t] : w) {
        const std::string name = (o.text_only ? "model." : "model.language_model.") + hf;
        if (name == o.brk.drop_tensor) continue;
        std::vector<int64_t> shape = t.shape;
        std::vector<float> data = t.data;
        if (o.brk.ple_shape && hf == "embed_tokens_per_layer.weight") {
            shape[1] -= p.P;
            data.clear();
            for (int64_t r = 0; r < shape[0]; ++r)
                data.insert(data.end(), t.data.begin() + r * t.shape[1], t.data.begin() + r * t.shape[1] + shape[1]);
        }
        check(st.add_tensor(name, dt, shape, encode(data, o.type)));
    }
    check(st.write_file(dir + "/model.safetensors"));
    return dir;
}

std::string temp_path(const std::string& name) { return make_temp_dir("gemma4ref") + "/" + name; }

}  // namespace tdm::test::g4
