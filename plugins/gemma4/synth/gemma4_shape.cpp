// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/gemma4_shape.cpp: presets, shape and option checks, type choices and the
// rope_freqs values of the synthetic Gemma 4 models (gemma4_synth.h).
#include "gemma4/synth/gemma4_synth.h"

#include "gemma4/synth/gemma4_vocab.h"
#include "synth/synth_files.h"

#include <cmath>

namespace tdm::synth {
namespace {

using LT = Gemma4LayerType;

struct Preset {
    std::string_view name;
    Gemma4Shape shape;
};

// Full layers where (il + 1) % period == 0, and the last layer always (HF's default layer_types).
std::vector<LT> periodic_layers(int32_t n_layer, int32_t period) {
    std::vector<LT> t(size_t(n_layer), LT::sliding);
    for (int32_t il = 0; il < n_layer; ++il)
        if ((il + 1) % period == 0 || il == n_layer - 1) t[size_t(il)] = LT::full;
    return t;
}

Gemma4Shape tiny_common(std::vector<LT> layers) {
    Gemma4Shape s;
    s.n_vocab = 1024;
    s.n_embd = 64;
    s.n_layer = int32_t(layers.size());
    s.n_head = 4;
    s.layer_types = std::move(layers);
    s.head_dim_swa = 32;
    s.head_dim_full = 64;
    s.sliding_window = 8;
    s.n_ctx_train = 4096;
    return s;
}

Gemma4Shape tiny_e2b() {
    Gemma4Shape s = tiny_common({LT::sliding, LT::sliding, LT::full, LT::sliding, LT::full});
    s.n_head_kv_swa = 1;
    s.n_head_kv_full = 1;
    s.n_ff = 128;
    s.double_wide_mlp = true;
    s.n_kv_shared = 2;  // layers 3 (sliding) and 4 (full) reuse layers 1 and 2
    s.n_embd_per_layer = 16;
    s.n_vocab_per_layer = s.n_vocab;
    return s;
}

Gemma4Shape tiny_31b() {
    Gemma4Shape s = tiny_common(periodic_layers(6, 6));
    s.n_head_kv_swa = 2;
    s.n_head_kv_full = 1;
    s.k_eq_v = true;
    s.n_ff = 128;
    return s;
}

Gemma4Shape tiny_26b() {
    Gemma4Shape s = tiny_31b();
    s.n_ff = 64;
    s.n_expert = 4;
    s.n_expert_used = 2;
    s.n_ff_expert = 32;
    return s;
}

// docs/models/gemma4.md §1, from the released config.json files.
Gemma4Shape released(int32_t n_embd, int32_t n_layer, int32_t period, int32_t n_head, int32_t kv_swa, int32_t kv_full,
                     bool k_eq_v, int32_t n_ff, int32_t window, int32_t n_ctx) {
    Gemma4Shape s;
    s.n_vocab = 262144;
    s.n_embd = n_embd;
    s.n_layer = n_layer;
    s.n_head = n_head;
    s.layer_types = periodic_layers(n_layer, period);
    s.n_head_kv_swa = kv_swa;
    s.n_head_kv_full = kv_full;
    s.head_dim_swa = 256;
    s.head_dim_full = 512;
    s.k_eq_v = k_eq_v;
    s.n_ff = n_ff;
    s.n_vocab_per_layer = 262144;  // in every released config, used only with PLE
    s.sliding_window = window;
    s.n_ctx_train = n_ctx;
    return s;
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> kPresets = [] {
        Gemma4Shape e2b = released(1536, 35, 5, 8, 1, 1, false, 6144, 512, 131072);
        e2b.double_wide_mlp = true;
        e2b.n_kv_shared = 20;
        e2b.n_embd_per_layer = 256;
        Gemma4Shape e4b = released(2560, 42, 6, 8, 2, 2, false, 10240, 512, 131072);
        e4b.n_kv_shared = 18;
        e4b.n_embd_per_layer = 256;
        Gemma4Shape moe = released(2816, 30, 6, 16, 8, 2, true, 2112, 1024, 262144);
        moe.n_expert = 128;
        moe.n_expert_used = 8;
        moe.n_ff_expert = 704;
        Gemma4Shape dense = released(5376, 60, 6, 32, 16, 4, true, 21504, 1024, 262144);
        return std::vector<Preset>{{"tiny-e2b", tiny_e2b()}, {"tiny-31b", tiny_31b()}, {"tiny-26b", tiny_26b()},
                                   {"e2b", e2b},           {"e4b", e4b},           {"26b-a4b", moe},
                                   {"31b", dense}};
    }();
    return kPresets;
}

bool positive_finite(float v) { return v > 0.0f && std::isfinite(v); }

}  // namespace

Result<Gemma4Shape> gemma4_preset(std::string_view name) {
    for (const Preset& p : presets())
        if (p.name == name) return p.shape;
    std::string known;
    for (const Preset& p : presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Error::format("unknown gemma4 preset '{}' (known: {})", name, known);
}

std::vector<std::string_view> gemma4_preset_names() {
    std::vector<std::string_view> names;
    for (const Preset& p : presets()) names.push_back(p.name);
    return names;
}

std::string gemma4_layer_pattern(const Gemma4Shape& s) {
    std::string out;
    for (LT t : s.layer_types) {
        if (!out.empty()) out += ' ';
        out += t == LT::sliding ? 'S' : 'F';
    }
    return out;
}

Status validate_gemma4(const Gemma4Shape& s, const Gemma4SynthOptions& o) {
    auto positive = [](std::string_view field, int64_t v) -> Status {
        if (v <= 0) return Error::format("gemma4 shape: {} must be positive, got {}", field, v);
        return {};
    };
    TDM_TRY(positive("n_embd", s.n_embd));
    TDM_TRY(positive("n_layer", s.n_layer));
    TDM_TRY(positive("n_head", s.n_head));
    TDM_TRY(positive("n_head_kv_swa", s.n_head_kv_swa));
    TDM_TRY(positive("n_head_kv_full", s.n_head_kv_full));
    TDM_TRY(positive("head_dim_swa", s.head_dim_swa));
    TDM_TRY(positive("head_dim_full", s.head_dim_full));
    TDM_TRY(positive("n_ff", s.n_ff));
    TDM_TRY(positive("sliding_window", s.sliding_window));
    TDM_TRY(positive("n_ctx_train", s.n_ctx_train));
    TDM_TRY(gemma4_vocab_layout(s.n_vocab));  // also the n_vocab check

    if (s.layer_types.size() != size_t(s.n_layer))
        return Error::format("gemma4 shape: layer_types has {} entries for n_layer {}", s.layer_types.size(),
                             s.n_layer);
    for (auto [field, kv] : {std::pair{"n_head_kv_swa", s.n_head_kv_swa}, std::pair{"n_head_kv_full", s.n_head_kv_full}})
        if (s.n_head % kv != 0)
            return Error::format("gemma4 shape: n_head {} is not a multiple of {} {}", s.n_head, field, kv);
    for (auto [field, d] : {std::pair{"head_dim_swa", s.head_dim_swa}, std::pair{"head_dim_full", s.head_dim_full}})
        if (d % 2 != 0) return Error::format("gemma4 shape: {} {} must be even (NeoX RoPE rotates pairs)", field, d);
    if (!s.k_eq_v && s.n_head_kv_full != s.n_head_kv_swa)
        return Error::format("gemma4 shape: n_head_kv_full {} differs from n_head_kv_swa {} without k_eq_v (HF "
                             "uses num_key_value_heads on full layers unless attention_k_eq_v)",
                             s.n_head_kv_full, s.n_head_kv_swa);

    if (s.n_kv_shared < 0 || s.n_kv_shared >= s.n_layer)
        return Error::format("gemma4 shape: n_kv_shared {} must be in [0, n_layer {})", s.n_kv_shared, s.n_layer);
    for (int il = s.n_layer - s.n_kv_shared; il < s.n_layer; ++il) {
        bool has_source = false;
        for (int j = 0; j < s.n_layer - s.n_kv_shared; ++j) has_source = has_source || s.is_swa(j) == s.is_swa(il);
        if (!has_source)
            return Error::format("gemma4 shape: n_kv_shared {}: KV-shared layer {} ({}) has no earlier non-shared "
                                 "layer of its type to share with",
                                 s.n_kv_shared, il, s.is_swa(il) ? "sliding" : "full");
    }

    if (s.n_expert < 0) return Error::format("gemma4 shape: n_expert must be >= 0, got {}", s.n_expert);
    if (s.n_expert > 0) {
        if (s.n_expert_used < 1 || s.n_expert_used > s.n_expert)
            return Error::format("gemma4 shape: n_expert_used {} must be in [1, n_expert {}]", s.n_expert_used,
                                 s.n_expert);
        TDM_TRY(positive("n_ff_expert", s.n_ff_expert));
    } else if (s.n_expert_used != 0 || s.n_ff_expert != 0) {
        return Error::format("gemma4 shape: n_expert_used {} / n_ff_expert {} without experts (n_expert 0)",
                             s.n_expert_used, s.n_ff_expert);
    }

    if (s.n_embd_per_layer < 0)
        return Error::format("gemma4 shape: n_embd_per_layer must be >= 0, got {}", s.n_embd_per_layer);
    if (s.n_vocab_per_layer < 0)
        return Error::format("gemma4 shape: n_vocab_per_layer must be >= 0, got {}", s.n_vocab_per_layer);
    if (s.n_embd_per_layer > 0 && s.n_vocab_per_layer == 0)
        return Error::format("gemma4 shape: n_vocab_per_layer must be positive with n_embd_per_layer {}",
                             s.n_embd_per_layer);

    if (!positive_finite(s.rope_theta_swa))
        return Error::format("gemma4 shape: rope_theta_swa must be positive, got {}", s.rope_theta_swa);
    if (!positive_finite(s.rope_theta_full))
        return Error::format("gemma4 shape: rope_theta_full must be positive, got {}", s.rope_theta_full);
    if (!(s.partial_rotary_factor > 0.0f && s.partial_rotary_factor <= 1.0f) || s.n_rot_full_pairs() < 1)
        return Error::format("gemma4 shape: partial_rotary_factor {} must be in (0, 1] and rotate at least one pair "
                             "of head_dim_full {}",
                             s.partial_rotary_factor, s.head_dim_full);
    if (!(s.final_logit_softcapping >= 0.0f) || !std::isfinite(s.final_logit_softcapping))
        return Error::format("gemma4 shape: final_logit_softcapping must be >= 0, got {}", s.final_logit_softcapping);
    if (!positive_finite(s.rms_eps)) return Error::format("gemma4 shape: rms_eps must be positive, got {}", s.rms_eps);

    if (!is_synth_weight_type(o.weight_type))
        return Error::format("gemma4 synth: weight type {} is not one of f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, "
                             "q4_K, q5_K, q6_K",
                             ggml_type_name(uint32_t(o.weight_type)));
    if (o.n_threads < 0) return Error::format("gemma4 synth: n_threads must be >= 0, got {}", o.n_threads);
    return {};
}

std::vector<float> gemma4_rope_freqs(const Gemma4Shape& s) {
    std::vector<float> f(size_t(s.head_dim_full / 2), 1e30f);
    for (int32_t i = 0; i < s.n_rot_full_pairs() && i < s.head_dim_full / 2; ++i) f[size_t(i)] = 1.0f;
    return f;
}

}  // namespace tdm::synth
