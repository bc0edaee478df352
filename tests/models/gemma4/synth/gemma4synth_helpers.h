/* SPDX-License-Identifier: Apache-2.0 */
// tests/models/gemma4/synth/gemma4synth_helpers.h: what the synthetic Gemma 4 tests share: presets, opening
// files, decoding whole tensors, and the expected tensor table written out by hand from
// docs/models/gemma4.md §2.1 (independently of gemma4_params.cpp, so that a wrong name or shape there
// is caught).
#pragma once

#include <gtest/gtest.h>

#include "common/quant.h"
#include "formats/model_source.h"
#include "gemma4/synth/gemma4_synth.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tdm::g4test {

inline synth::Gemma4Shape preset(const char* name) {
    auto s = synth::gemma4_preset(name);
    EXPECT_TRUE(s.ok()) << name;
    return s.ok() ? *s : synth::Gemma4Shape{};
}

inline std::unique_ptr<ModelSource> open_source(const std::string& path) {
    auto r = ModelSource::open(path);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(*r) : nullptr;
}

inline std::vector<float> values(const SourceTensor& t) {
    const int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t.type), t.data, out.data(), n);
    return out;
}

struct ExpectedTensor {
    std::vector<int64_t> ne;  // GGUF order (the HF shape reversed)
    std::string hf;           // full HF name
    bool in_gguf = true;
    bool in_hf = true;
};

// gguf name -> expectation, for every tensor either layout holds (rope_freqs: GGUF only).
inline std::map<std::string, ExpectedTensor> expected_tensors(const synth::Gemma4Shape& s) {
    const std::string P = "model.language_model.";
    const int64_t H = s.n_embd, Pl = s.n_embd_per_layer, L = s.n_layer;
    std::map<std::string, ExpectedTensor> m;
    m["token_embd.weight"] = {{H, s.n_vocab}, P + "embed_tokens.weight"};
    m["output_norm.weight"] = {{H}, P + "norm.weight"};
    m["rope_freqs.weight"] = {{s.head_dim_full / 2}, "", true, false};
    if (Pl > 0) {
        m["per_layer_token_embd.weight"] = {{L * Pl, s.n_vocab_per_layer}, P + "embed_tokens_per_layer.weight"};
        m["per_layer_model_proj.weight"] = {{H, L * Pl}, P + "per_layer_model_projection.weight"};
        m["per_layer_proj_norm.weight"] = {{Pl}, P + "per_layer_projection_norm.weight"};
    }
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        const std::string h = P + "layers." + std::to_string(il) + ".";
        const bool full = !s.is_swa(il);
        const int64_t D = full ? s.head_dim_full : s.head_dim_swa;
        const int64_t kv = (full ? s.n_head_kv_full : s.n_head_kv_swa) * D, q = s.n_head * D;
        const bool shared = il >= s.n_layer - s.n_kv_shared;
        const int64_t ff = (s.double_wide_mlp && shared) ? 2 * s.n_ff : s.n_ff;
        m[g + "attn_norm.weight"] = {{H}, h + "input_layernorm.weight"};
        m[g + "attn_q.weight"] = {{H, q}, h + "self_attn.q_proj.weight"};
        m[g + "attn_k.weight"] = {{H, kv}, h + "self_attn.k_proj.weight", !shared, true};
        if (!(full && s.k_eq_v)) m[g + "attn_v.weight"] = {{H, kv}, h + "self_attn.v_proj.weight", !shared, true};
        m[g + "attn_output.weight"] = {{q, H}, h + "self_attn.o_proj.weight"};
        m[g + "attn_q_norm.weight"] = {{D}, h + "self_attn.q_norm.weight"};
        m[g + "attn_k_norm.weight"] = {{D}, h + "self_attn.k_norm.weight"};
        m[g + "post_attention_norm.weight"] = {{H}, h + "post_attention_layernorm.weight"};
        m[g + "ffn_norm.weight"] = {{H}, h + "pre_feedforward_layernorm.weight"};
        m[g + "ffn_gate.weight"] = {{H, ff}, h + "mlp.gate_proj.weight"};
        m[g + "ffn_up.weight"] = {{H, ff}, h + "mlp.up_proj.weight"};
        m[g + "ffn_down.weight"] = {{ff, H}, h + "mlp.down_proj.weight"};
        m[g + "post_ffw_norm.weight"] = {{H}, h + "post_feedforward_layernorm.weight"};
        m[g + "layer_output_scale.weight"] = {{1}, h + "layer_scalar"};
        if (s.n_expert > 0) {
            const int64_t E = s.n_expert, Ie = s.n_ff_expert;
            m[g + "ffn_gate_inp.weight"] = {{H, E}, h + "router.proj.weight"};
            m[g + "ffn_gate_inp.scale"] = {{H}, h + "router.scale"};
            m[g + "ffn_down_exps.scale"] = {{E}, h + "router.per_expert_scale"};
            m[g + "ffn_gate_up_exps.weight"] = {{H, 2 * Ie, E}, h + "experts.gate_up_proj"};
            m[g + "ffn_down_exps.weight"] = {{Ie, H, E}, h + "experts.down_proj"};
            m[g + "pre_ffw_norm_2.weight"] = {{H}, h + "pre_feedforward_layernorm_2.weight"};
            m[g + "post_ffw_norm_1.weight"] = {{H}, h + "post_feedforward_layernorm_1.weight"};
            m[g + "post_ffw_norm_2.weight"] = {{H}, h + "post_feedforward_layernorm_2.weight"};
        }
        if (Pl > 0) {
            m[g + "inp_gate.weight"] = {{H, Pl}, h + "per_layer_input_gate.weight"};
            m[g + "proj.weight"] = {{Pl, H}, h + "per_layer_projection.weight"};
            m[g + "post_norm.weight"] = {{H}, h + "post_per_layer_input_norm.weight"};
        }
    }
    return m;
}

}  // namespace tdm::g4test
