// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_tiny_assistant.cpp: preset, random weights and the GGUF / HF writers of the
// tiny gemma4_assistant drafters (see gemma4_tiny_assistant.h). Names and keys follow
// docs/models/gemma4.md §3.1-3.2 (HF Gemma4AssistantForCausalLM, llama.cpp's gemma4-assistant arch).
//
// GGUF keys (prefix "gemma4-assistant."): context_length, embedding_length (Ha),
// embedding_length_out (Hb), block_count, nextn_predict_layers (= block_count),
// feed_forward_length, attention.head_count, attention.head_count_kv (INT32 per layer: the
// target's KV heads of the layer's type), attention.key_length / value_length (full head dim),
// attention.key_length_swa / value_length_swa, attention.sliding_window,
// attention.sliding_window_pattern (BOOL per layer), attention.layer_norm_rms_epsilon,
// rope.dimension_count / rope.dimension_count_swa, rope.freq_base / rope.freq_base_swa,
// final_logit_softcapping (only when set), centroid_intermediate_top_k (ordered head only; the
// spec names no GGUF key for it, this one is HF's field name).
#include "gemma4_tiny_assistant.h"

#include "common/error.h"
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

uint32_t next(uint32_t& seed) {
    seed = seed * 1664525u + 1013904223u;
    return seed;
}

std::vector<float> noise_gemma4_tiny_assistant(size_t n, uint32_t& seed) {
    std::vector<float> v(n);
    for (float& x : v) x = float(int32_t(next(seed))) / 2147483648.0f;  // [-1, 1)
    return v;
}

void check_gemma4_tiny_assistant(const Status& s) {
    if (!s.ok()) throw std::runtime_error(s.error().message());
}

std::vector<uint8_t> encode_gemma4_tiny_assistant(const std::vector<float>& v, DType t) {
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

// Full HF name -> GGUF name (docs/models/gemma4.md §3.2).
std::string gguf_name_gemma4_tiny_assistant(const std::string& hf) {
    static const std::map<std::string, std::string> globals = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"pre_projection.weight", "nextn.pre_projection.weight"},
        {"post_projection.weight", "nextn.post_projection.weight"},
        {"masked_embedding.centroids.weight", "masked_embd_centroids.weight"},
    };
    static const std::map<std::string, std::string> layer = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
        {"layer_scalar", "layer_output_scale.weight"},
    };
    if (auto it = globals.find(hf); it != globals.end()) return it->second;
    const std::string prefix = "model.layers.";
    const size_t dot = hf.find('.', prefix.size());
    return "blk." + hf.substr(prefix.size(), dot - prefix.size()) + "." + layer.at(hf.substr(dot + 1));
}

}  // namespace

AssistantPreset assistant_preset(const std::string& target_name, const AssistantBreak& brk) {
    const Preset t = preset(target_name);
    AssistantPreset ap;
    Preset& d = ap.text;
    d = Preset{};
    d.n_vocab = t.n_vocab + brk.vocab_delta;
    d.n_embd = 32;
    d.n_head = 4;
    d.layers = "SSSF";
    // The drafter attends over the target's K/V, so these are the target's.
    d.kv_swa = t.kv_swa;
    d.kv_full = t.kv_full;
    d.global_kv_null = t.global_kv_null;
    d.hd_swa = t.hd_swa;
    d.hd_full = t.hd_full + brk.head_dim_delta;
    d.k_eq_v = t.k_eq_v;
    d.window = t.window + brk.window_delta;
    d.factor = t.factor;
    d.n_ff = 64;
    d.n_kv_shared = 4;
    ap.n_embd_backbone = t.n_embd + brk.backbone_delta;
    if (target_name == "tiny-e2b") {
        ap.ordered = true;
        ap.n_centroids = 32;
        ap.n_centroids_top_k = 4;
    } else {
        ap.softcap = 30.0;
    }
    return ap;
}

AssistantWeights make_assistant_weights(const AssistantPreset& ap, uint32_t seed, DType type) {
    AssistantWeights out;
    Weights& w = out.w;
    const Preset& p = ap.text;
    const int64_t Ha = p.n_embd, Hb = ap.n_embd_backbone, V = p.n_vocab;
    auto mat = [&](const std::string& name, std::vector<int64_t> shape, float s) {
        std::vector<float> v = noise_gemma4_tiny_assistant(size_t(shape[0] * shape[1]), seed);
        for (float& x : v) x *= s;
        w[name] = Tensor{std::move(shape), std::move(v)};
    };
    auto lin = [&](const std::string& name, int64_t rows, int64_t cols) {
        mat(name, {rows, cols}, float(1.0 / std::sqrt(double(cols))));
    };
    auto vec = [&](const std::string& name, int64_t n, float center, float spread) {
        std::vector<float> v = noise_gemma4_tiny_assistant(size_t(n), seed);
        for (float& x : v) x = center + spread * x;
        w[name] = Tensor{{n}, std::move(v)};
    };
    mat("model.embed_tokens.weight", {V, Ha}, 1.0f);
    vec("model.norm.weight", Ha, 1.0f, 0.2f);
    lin("pre_projection.weight", Ha, 2 * Hb);
    lin("post_projection.weight", Hb, Ha);
    for (int64_t il = 0; il < int64_t(p.layers.size()); ++il) {
        const std::string l = "model.layers." + std::to_string(il) + ".";
        const int64_t D = head_dim_of(p, il);
        vec(l + "input_layernorm.weight", Ha, 1.0f, 0.2f);
        lin(l + "self_attn.q_proj.weight", p.n_head * D, Ha);
        vec(l + "self_attn.q_norm.weight", D, 1.0f, 0.2f);
        lin(l + "self_attn.o_proj.weight", Ha, p.n_head * D);
        vec(l + "post_attention_layernorm.weight", Ha, 1.0f, 0.2f);
        vec(l + "pre_feedforward_layernorm.weight", Ha, 1.0f, 0.2f);
        lin(l + "mlp.gate_proj.weight", p.n_ff, Ha);
        lin(l + "mlp.up_proj.weight", p.n_ff, Ha);
        lin(l + "mlp.down_proj.weight", Ha, p.n_ff);
        vec(l + "post_feedforward_layernorm.weight", Ha, 1.0f, 0.2f);
        vec(l + "layer_scalar", 1, 1.0f, 0.5f);
    }
    if (ap.ordered) {
        if (V % ap.n_centroids != 0) throw std::runtime_error("vocabulary not a multiple of num_centroids");
        mat("masked_embedding.centroids.weight", {ap.n_centroids, Ha}, 1.0f);
        // Fisher-Yates over 0..V-1.
        out.ordering.resize(size_t(V));
        for (int64_t i = 0; i < V; ++i) out.ordering[size_t(i)] = i;
        for (int64_t i = V - 1; i > 0; --i) std::swap(out.ordering[size_t(i)], out.ordering[next(seed) % uint32_t(i + 1)]);
    }
    if (type != DType::F32)
        for (auto& [name, t] : w) t.data = ref::cast_round(t.data, type);
    return out;
}

std::string write_assistant_gguf(const AssistantPreset& ap, const AssistantWeights& w, const std::string& path,
                                 const AssistantWriteOptions& o) {
    const Preset& p = ap.text;
    const int64_t L = int64_t(p.layers.size());
    GgufWriter g;
    const std::string a = "gemma4-assistant.";
    g.add_string("general.architecture", "gemma4-assistant");
    g.add_u32(a + "context_length", 4096);
    g.add_u32(a + "embedding_length", uint32_t(p.n_embd));
    g.add_u32(a + "embedding_length_out", uint32_t(ap.n_embd_backbone));
    g.add_u32(a + "block_count", uint32_t(L));
    g.add_u32(a + "nextn_predict_layers", uint32_t(L));
    g.add_u32(a + "feed_forward_length", uint32_t(p.n_ff));
    g.add_u32(a + "attention.head_count", uint32_t(p.n_head));
    std::vector<int32_t> kv;
    std::vector<bool> pattern;
    for (int64_t il = 0; il < L; ++il) {
        kv.push_back(int32_t(kv_heads_of(p, il)));
        pattern.push_back(is_sliding(p, il));
    }
    g.add_array(a + "attention.head_count_kv", kv);
    g.add_u32(a + "attention.key_length", uint32_t(p.hd_full));
    g.add_u32(a + "attention.value_length", uint32_t(p.hd_full));
    g.add_u32(a + "attention.key_length_swa", uint32_t(p.hd_swa));
    g.add_u32(a + "attention.value_length_swa", uint32_t(p.hd_swa));
    g.add_u32(a + "attention.sliding_window", uint32_t(p.window));
    g.add_array(a + "attention.sliding_window_pattern", pattern);
    g.add_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    g.add_u32(a + "rope.dimension_count", uint32_t(p.hd_full));
    g.add_u32(a + "rope.dimension_count_swa", uint32_t(p.hd_swa));
    g.add_f32(a + "rope.freq_base", 1e6f);
    g.add_f32(a + "rope.freq_base_swa", 1e4f);
    if (ap.softcap > 0.0) g.add_f32(a + "final_logit_softcapping", float(ap.softcap));
    if (ap.ordered) g.add_u32(a + "centroid_intermediate_top_k", uint32_t(ap.n_centroids_top_k));

    auto put = [&](const std::string& name, std::vector<int64_t> ne, std::vector<uint8_t> bytes, DType t) {
        if (name == o.brk.drop_tensor) return;
        check_gemma4_tiny_assistant(g.add_tensor(name, uint32_t(t), std::move(ne), std::move(bytes)));
    };
    // rope_freqs as the target's: [1.0] * rotated slots + [1e30] * the rest.
    const int64_t rot = int64_t(p.factor * double(p.hd_full) / 2.0);
    std::vector<float> freqs(size_t(p.hd_full / 2), 1e30f);
    for (int64_t i = 0; i < rot; ++i) freqs[size_t(i)] = 1.0f;
    put("rope_freqs.weight", {p.hd_full / 2}, encode_gemma4_tiny_assistant(freqs, DType::F32), DType::F32);
    for (const auto& [hf, t] : w.w) {
        const std::vector<int64_t> ne(t.shape.rbegin(), t.shape.rend());
        const DType type = t.shape.size() == 1 ? DType::F32 : o.type;
        put(gguf_name_gemma4_tiny_assistant(hf), ne, encode_gemma4_tiny_assistant(t.data, type), type);
    }
    if (ap.ordered) {
        // Integer ids, never quantised (spec §3.4).
        std::vector<uint8_t> bytes(w.ordering.size() * 4);
        for (size_t i = 0; i < w.ordering.size(); ++i) {
            const int32_t id = int32_t(w.ordering[i]);
            std::memcpy(bytes.data() + 4 * i, &id, 4);
        }
        put("masked_embd_ordering.weight", {int64_t(w.ordering.size())}, std::move(bytes), DType::I32);
    }
    check_gemma4_tiny_assistant(g.write_file(path));
    return path;
}

std::string write_assistant_hf(const AssistantPreset& ap, const AssistantWeights& w, const std::string& dir,
                               const AssistantWriteOptions& o) {
    const Preset& p = ap.text;
    const int64_t L = int64_t(p.layers.size());
    std::filesystem::create_directories(dir);
    nlohmann::json types = nlohmann::json::array();
    for (int64_t il = 0; il < L; ++il) types.push_back(is_sliding(p, il) ? "sliding_attention" : "full_attention");
    const nlohmann::json tc = {
        {"model_type", "gemma4_text"},
        {"hidden_size", p.n_embd},
        {"num_hidden_layers", L},
        {"layer_types", types},
        {"num_attention_heads", p.n_head},
        {"num_key_value_heads", p.kv_swa},
        {"head_dim", p.hd_swa},
        {"global_head_dim", p.hd_full},
        {"num_global_key_value_heads", p.global_kv_null ? nlohmann::json(nullptr) : nlohmann::json(p.kv_full)},
        {"attention_k_eq_v", p.k_eq_v},
        {"intermediate_size", p.n_ff},
        {"use_double_wide_mlp", false},
        {"enable_moe_block", false},
        {"num_kv_shared_layers", L},
        {"hidden_size_per_layer_input", 0},
        {"vocab_size_per_layer_input", 0},
        {"sliding_window", p.window},
        {"rope_parameters",
         {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
          {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", p.factor}, {"rope_theta", 1000000.0}}}}},
        {"final_logit_softcapping", ap.softcap > 0.0 ? nlohmann::json(ap.softcap) : nlohmann::json(nullptr)},
        {"rms_norm_eps", 1e-6},
        {"vocab_size", p.n_vocab},
        {"max_position_embeddings", 4096},
        {"tie_word_embeddings", true},
        {"hidden_activation", "gelu_pytorch_tanh"},
    };
    const nlohmann::json cfg = {
        {"architectures", {"Gemma4AssistantForCausalLM"}},
        {"model_type", "gemma4_assistant"},
        {"backbone_hidden_size", ap.n_embd_backbone},
        {"use_ordered_embeddings", ap.ordered},
        {"num_centroids", ap.n_centroids},
        {"centroid_intermediate_top_k", ap.n_centroids_top_k},
        {"tie_word_embeddings", true},
        {"text_config", tc},
    };
    std::ofstream(dir + "/config.json") << cfg.dump(2);

    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dt = o.type == DType::BF16 ? "BF16" : o.type == DType::F16 ? "F16" : "F32";
    for (const auto& [hf, t] : w.w)
        if (hf != o.brk.drop_tensor) check_gemma4_tiny_assistant(st.add_tensor(hf, dt, t.shape, encode_gemma4_tiny_assistant(t.data, o.type)));
    if (ap.ordered && o.brk.drop_tensor != "masked_embedding.token_ordering") {
        std::vector<uint8_t> bytes(w.ordering.size() * 8);
        std::memcpy(bytes.data(), w.ordering.data(), bytes.size());
        check_gemma4_tiny_assistant(st.add_tensor("masked_embedding.token_ordering", "I64", {int64_t(w.ordering.size())}, std::move(bytes)));
    }
    check_gemma4_tiny_assistant(st.write_file(dir + "/model.safetensors"));
    return dir;
}

}  // namespace tdm::test::g4
