// SPDX-License-Identifier: Apache-2.0
// tests/support/gemma4_reference_load.cpp: loading of Gemma4Reference: hyper-parameters from
// GGUF metadata (gemma4.* keys as llama.cpp's converter writes them) or from config.json's
// text_config (both the global_head_dim / num_global_key_value_heads form and the newer
// per_layer_config form), and the weights under either naming (docs/models/gemma4.md §2.1). The two
// layouts differ in conventions the loader applies itself: GGUF carries rope_freqs (divisors
// emulating proportional RoPE) and scales embeddings by fp32 sqrtf; HF has no rope_freqs (the
// rotated slots come from partial_rotary_factor) and rounds the scale to the table's dtype.
#include "support/gemma4_reference.h"

#include "common/fp16.h"
#include "common/quant.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace tdm::ref {
namespace {

// ===== hyper-parameters from GGUF ===============================================================

// A per-layer INT array of n_layer entries, or one scalar for every layer.
Result<std::vector<int64_t>> per_layer_ints(const GgufFile& f, const std::string& key, int64_t n_layer) {
    const GgufValue* v = f.find(key);
    if (!v) return Error::format("{}: key {} not found", f.path(), key);
    if (v->type == GgufType::ARRAY) {
        std::vector<int64_t> a = TDM_TRY(f.get_int_array(key));
        if (int64_t(a.size()) != n_layer)
            return Error::format("{}: {} has {} entries, expected one per layer ({})", f.path(), key, a.size(), n_layer);
        return a;
    }
    return std::vector<int64_t>(size_t(n_layer), int64_t(TDM_TRY(f.get_uint(key))));
}

Result<Gemma4Hparams> hparams_gguf(const GgufFile& f) {
    const std::string arch = TDM_TRY(f.get_string_or("general.architecture", ""));
    if (arch != "gemma4")
        return Error::format("{}: general.architecture is '{}', the Gemma 4 reference needs 'gemma4'", f.path(), arch);
    auto k = [](const char* name) { return std::string("gemma4.") + name; };
    Gemma4Hparams hp;
    hp.n_embd = int64_t(TDM_TRY(f.get_uint(k("embedding_length"))));
    hp.n_layer = int64_t(TDM_TRY(f.get_uint(k("block_count"))));
    hp.n_head = int64_t(TDM_TRY(f.get_uint(k("attention.head_count"))));
    hp.head_dim_full = int64_t(TDM_TRY(f.get_uint(k("attention.key_length"))));
    hp.head_dim_swa = int64_t(TDM_TRY(f.get_uint(k("attention.key_length_swa"))));
    if (int64_t(TDM_TRY(f.get_uint_or(k("attention.value_length"), uint64_t(hp.head_dim_full)))) != hp.head_dim_full ||
        int64_t(TDM_TRY(f.get_uint_or(k("attention.value_length_swa"), uint64_t(hp.head_dim_swa)))) != hp.head_dim_swa)
        return Error::format("{}: value_length differs from key_length (Gemma 4 uses one head size per layer type)",
                             f.path());
    // llama.cpp emulates proportional RoPE with a full-width rotation plus rope_freqs divisors.
    if (int64_t(TDM_TRY(f.get_uint_or(k("rope.dimension_count"), uint64_t(hp.head_dim_full)))) != hp.head_dim_full ||
        int64_t(TDM_TRY(f.get_uint_or(k("rope.dimension_count_swa"), uint64_t(hp.head_dim_swa)))) != hp.head_dim_swa)
        return Error::format("{}: rope.dimension_count(_swa) must equal the head size of its layer type", f.path());
    hp.n_head_kv = TDM_TRY(per_layer_ints(f, k("attention.head_count_kv"), hp.n_layer));
    hp.n_ff = TDM_TRY(per_layer_ints(f, k("feed_forward_length"), hp.n_layer));
    hp.rms_eps = float(TDM_TRY(f.get_float(k("attention.layer_norm_rms_epsilon"))));
    hp.window = int64_t(TDM_TRY(f.get_uint(k("attention.sliding_window"))));
    hp.sliding = TDM_TRY(f.get_bool_array(k("attention.sliding_window_pattern")));
    if (int64_t(hp.sliding.size()) != hp.n_layer)
        return Error::format("{}: {} has {} entries, expected one per layer ({})", f.path(),
                             k("attention.sliding_window_pattern"), hp.sliding.size(), hp.n_layer);
    hp.n_kv_shared = int64_t(TDM_TRY(f.get_uint_or(k("attention.shared_kv_layers"), 0)));
    hp.n_embd_per_layer = int64_t(TDM_TRY(f.get_uint_or(k("embedding_length_per_layer_input"), 0)));
    hp.rope_theta_full = TDM_TRY(f.get_float(k("rope.freq_base")));
    hp.rope_theta_swa = TDM_TRY(f.get_float(k("rope.freq_base_swa")));
    hp.softcap = float(TDM_TRY(f.get_float_or(k("final_logit_softcapping"), 0.0)));
    hp.n_expert = int64_t(TDM_TRY(f.get_uint_or(k("expert_count"), 0)));
    if (hp.n_expert > 0) {
        hp.n_expert_used = int64_t(TDM_TRY(f.get_uint(k("expert_used_count"))));
        hp.n_ff_exp = int64_t(TDM_TRY(f.get_uint(k("expert_feed_forward_length"))));
    }
    return hp;
}

// ===== hyper-parameters from config.json ========================================================

Result<int64_t> json_int(const nlohmann::json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return Error::format("{}: \"{}\" missing or not an integer", where, key);
    return it->get<int64_t>();
}

Result<int64_t> json_int_or(const nlohmann::json& j, const char* key, int64_t dflt, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    return json_int(j, key, where);
}

Result<double> json_number_or(const nlohmann::json& j, const char* key, double dflt, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_number()) return Error::format("{}: \"{}\" is not a number", where, key);
    return it->get<double>();
}

Result<bool> json_bool_or(const nlohmann::json& j, const char* key, bool dflt, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) return Error::format("{}: \"{}\" is not a boolean", where, key);
    return it->get<bool>();
}

// What the HF text config says beyond Gemma4Hparams: the rotated fraction of full layers.
struct HfExtra {
    double partial_rotary_factor = 0.25;
};

Result<Gemma4Hparams> hparams_hf(const ModelSource& src, HfExtra& extra) {
    const nlohmann::json* top = src.hf_config();
    if (!top) return Error::format("{}: no usable config.json", src.path());
    const std::string where = src.safetensors()->config_path();
    const std::string type = src.architecture();
    if (type != "gemma4" && type != "gemma4_text")
        return Error::format("{}: model_type is '{}', the Gemma 4 reference needs gemma4 or gemma4_text", where, type);
    if (type == "gemma4" && !top->contains("text_config"))
        return Error::format("{}: model_type gemma4 without a text_config", where);
    const nlohmann::json& c = type == "gemma4" ? (*top)["text_config"] : *top;
    if (!c.is_object()) return Error::format("{}: text_config is not an object", where);

    Gemma4Hparams hp;
    hp.n_embd = TDM_TRY(json_int(c, "hidden_size", where));
    hp.n_layer = TDM_TRY(json_int(c, "num_hidden_layers", where));
    hp.n_head = TDM_TRY(json_int(c, "num_attention_heads", where));
    const int64_t kv_swa = TDM_TRY(json_int(c, "num_key_value_heads", where));
    hp.head_dim_swa = TDM_TRY(json_int(c, "head_dim", where));
    hp.window = TDM_TRY(json_int(c, "sliding_window", where));
    hp.rms_eps = float(TDM_TRY(json_number_or(c, "rms_norm_eps", 1e-6, where)));
    hp.softcap = float(TDM_TRY(json_number_or(c, "final_logit_softcapping", 0.0, where)));
    hp.n_kv_shared = TDM_TRY(json_int_or(c, "num_kv_shared_layers", 0, where));
    hp.n_embd_per_layer = TDM_TRY(json_int_or(c, "hidden_size_per_layer_input", 0, where));
    if (hp.n_embd_per_layer > 0) hp.n_vocab_per_layer = TDM_TRY(json_int(c, "vocab_size_per_layer_input", where));
    const bool k_eq_v = TDM_TRY(json_bool_or(c, "attention_k_eq_v", false, where));
    const bool double_wide = TDM_TRY(json_bool_or(c, "use_double_wide_mlp", false, where));
    if (TDM_TRY(json_bool_or(c, "enable_moe_block", false, where))) {
        hp.n_expert = TDM_TRY(json_int(c, "num_experts", where));
        hp.n_expert_used = TDM_TRY(json_int(c, "top_k_experts", where));
        hp.n_ff_exp = TDM_TRY(json_int(c, "moe_intermediate_size", where));
    }
    if (hp.n_layer <= 0 || hp.n_layer > 4096) return Error::format("{}: num_hidden_layers is {}", where, hp.n_layer);

    // Layer types: the explicit list, else HF's default (full iff (i+1) % 6 == 0, last full).
    if (auto it = c.find("layer_types"); it != c.end() && !it->is_null()) {
        if (!it->is_array() || int64_t(it->size()) != hp.n_layer)
            return Error::format("{}: layer_types must list one type per layer ({})", where, hp.n_layer);
        for (const auto& t : *it) {
            if (t == "sliding_attention") hp.sliding.push_back(true);
            else if (t == "full_attention") hp.sliding.push_back(false);
            else return Error::format("{}: unknown layer type {}", where, t.dump());
        }
    } else {
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.sliding.push_back((il + 1) % 6 != 0 && il != hp.n_layer - 1);
    }

    // Full-layer head size and KV heads: per_layer_config overrides, else global_head_dim and
    // (on K=V models) num_global_key_value_heads.
    const nlohmann::json* plc = nullptr;
    if (auto it = c.find("per_layer_config"); it != c.end() && !it->is_null()) {
        if (!it->is_object()) return Error::format("{}: per_layer_config is not an object", where);
        plc = &*it;
    }
    const int64_t global_dim = TDM_TRY(json_int_or(c, "global_head_dim", 0, where));
    const int64_t global_kv = TDM_TRY(json_int_or(c, "num_global_key_value_heads", 0, where));
    hp.head_dim_full = 0;
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        if (hp.sliding[size_t(il)]) {
            hp.n_head_kv.push_back(kv_swa);
            continue;
        }
        int64_t dim = global_dim, kv = (k_eq_v && global_kv > 0) ? global_kv : kv_swa;
        if (plc) {
            if (auto e = plc->find(std::to_string(il)); e != plc->end()) {
                if (!e->is_object()) return Error::format("{}: per_layer_config[{}] is not an object", where, il);
                dim = TDM_TRY(json_int_or(*e, "head_dim", dim, where));
                kv = TDM_TRY(json_int_or(*e, "num_key_value_heads", kv, where));
            }
        }
        if (dim <= 0)
            return Error::format("{}: full layer {} has no head size (global_head_dim or per_layer_config)", where, il);
        if (hp.head_dim_full != 0 && dim != hp.head_dim_full)
            return Error::format("{}: full layers have different head sizes ({} and {})", where, hp.head_dim_full, dim);
        hp.head_dim_full = dim;
        hp.n_head_kv.push_back(kv);
    }
    if (hp.head_dim_full == 0) hp.head_dim_full = global_dim > 0 ? global_dim : hp.head_dim_swa;

    // Dense MLP width per layer, doubled on KV-shared layers with use_double_wide_mlp.
    const int64_t first_shared = hp.n_layer - hp.n_kv_shared;
    if (auto it = c.find("intermediate_size"); it != c.end() && it->is_array()) {
        if (int64_t(it->size()) != hp.n_layer)
            return Error::format("{}: intermediate_size lists {} widths for {} layers", where, it->size(), hp.n_layer);
        for (const auto& w : *it) {
            if (!w.is_number_integer()) return Error::format("{}: intermediate_size holds a non-integer", where);
            hp.n_ff.push_back(w.get<int64_t>());
        }
    } else {
        const int64_t n_ff = TDM_TRY(json_int(c, "intermediate_size", where));
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.n_ff.push_back(double_wide && il >= first_shared ? 2 * n_ff : n_ff);
    }

    // RoPE per layer type (defaults: HF Gemma4TextConfig's rope_parameters).
    hp.rope_theta_swa = 10000.0;
    hp.rope_theta_full = 1000000.0;
    if (auto it = c.find("rope_parameters"); it != c.end() && it->is_object()) {
        if (auto s = it->find("sliding_attention"); s != it->end() && s->is_object())
            hp.rope_theta_swa = TDM_TRY(json_number_or(*s, "rope_theta", hp.rope_theta_swa, where));
        if (auto f = it->find("full_attention"); f != it->end() && f->is_object()) {
            hp.rope_theta_full = TDM_TRY(json_number_or(*f, "rope_theta", hp.rope_theta_full, where));
            extra.partial_rotary_factor =
                TDM_TRY(json_number_or(*f, "partial_rotary_factor", extra.partial_rotary_factor, where));
            auto rt = f->find("rope_type");
            if (rt != f->end() && rt->is_string() && *rt != "proportional" && *rt != "default")
                return Error::format("{}: full_attention rope_type {} is not supported", where, rt->dump());
            if (rt != f->end() && *rt == "default") extra.partial_rotary_factor = 1.0;
        }
    }
    // HF tags full layers K=V by config; the loader checks v_proj against it.
    hp.k_eq_v.assign(size_t(hp.n_layer), false);
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.k_eq_v[size_t(il)] = k_eq_v && !hp.sliding[size_t(il)];
    return hp;
}

// ===== tensors ==================================================================================

struct Names {
    const char* gguf;  // "blk.{}.attn_q.weight"
    const char* hf;    // relative to the text model prefix: "layers.{}.self_attn.q_proj.weight"
};

bool decodable(const SourceTensor& t) {
    const DTypeTraits* tr = dtype_traits(t.type);
    return tr && (tr->quantized || t.type == uint32_t(DType::F32) || t.type == uint32_t(DType::F16) ||
                  t.type == uint32_t(DType::BF16));
}

}  // namespace

float gemma4_embed_scale(int64_t n, SourceFormat format, DType table) {
    const float s = std::sqrt(float(n));
    if (format == SourceFormat::gguf) return s;
    const float one[1] = {s};
    if (table == DType::BF16) return from_bf16(to_bf16(one))[0];
    if (table == DType::F16) return from_f16(to_f16(one))[0];
    return s;
}

Result<Gemma4Reference> Gemma4Reference::open(const std::string& path, Gemma4RefOptions opts) {
    return load(TDM_TRY(ModelSource::open(path)), opts);
}

Result<Gemma4Reference> Gemma4Reference::load(std::unique_ptr<ModelSource> src, Gemma4RefOptions opts) {
    Gemma4Reference m;
    m.opts_ = opts;
    const ModelSource& s = *src;
    const bool gguf = s.format() == SourceFormat::gguf;
    HfExtra extra;
    m.hp_ = gguf ? TDM_TRY(hparams_gguf(*s.gguf())) : TDM_TRY(hparams_hf(s, extra));
    Gemma4Hparams& hp = m.hp_;
    const int64_t L = hp.n_layer, E = hp.n_embd, P = hp.n_embd_per_layer;
    if (E <= 0 || L <= 0 || hp.n_head <= 0 || hp.head_dim_swa <= 0 || hp.head_dim_swa % 2 != 0 ||
        hp.head_dim_full <= 0 || hp.head_dim_full % 2 != 0 || hp.window <= 0 || hp.n_kv_shared < 0 ||
        hp.n_kv_shared >= L || P < 0)
        return Error::format("{}: inconsistent hyper-parameters (n_embd {}, n_layer {}, n_head {}, head dims {}/{}, "
                             "window {}, shared KV layers {}, per-layer input {})",
                             s.path(), E, L, hp.n_head, hp.head_dim_swa, hp.head_dim_full, hp.window, hp.n_kv_shared, P);
    for (int64_t il = 0; il < L; ++il)
        if (hp.n_head_kv[size_t(il)] <= 0 || hp.n_head % hp.n_head_kv[size_t(il)] != 0 || hp.n_ff[size_t(il)] <= 0)
            return Error::format("{}: layer {}: {} KV heads for {} query heads, n_ff {}", s.path(), il,
                                 hp.n_head_kv[size_t(il)], hp.n_head, hp.n_ff[size_t(il)]);
    if (hp.n_expert > 0 && (hp.n_expert_used <= 0 || hp.n_expert_used > hp.n_expert || hp.n_ff_exp <= 0))
        return Error::format("{}: MoE with {} experts, {} used, width {}", s.path(), hp.n_expert, hp.n_expert_used,
                             hp.n_ff_exp);

    // KV sharing: layer l >= L - n_kv_shared attends over the last own-KV layer of its type.
    const int64_t first_shared = L - hp.n_kv_shared;
    hp.kv_source.resize(size_t(L));
    for (int64_t il = 0; il < L; ++il) {
        hp.kv_source[size_t(il)] = il;
        if (il < first_shared) continue;
        int64_t src_l = -1;
        for (int64_t j = first_shared - 1; j >= 0 && src_l < 0; --j)
            if (hp.sliding[size_t(j)] == hp.sliding[size_t(il)]) src_l = j;
        if (src_l < 0)
            return Error::format("{}: KV-shared layer {} ({}) has no earlier non-shared layer of its type", s.path(), il,
                                 hp.sliding[size_t(il)] ? "sliding" : "full");
        hp.kv_source[size_t(il)] = src_l;
        hp.n_head_kv[size_t(il)] = hp.n_head_kv[size_t(src_l)];
    }

    // Tensor lookup with shape checks (ggml order: ne0 = columns).
    std::string prefix;
    if (!gguf) prefix = s.find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
    auto name_of = [&](Names n, int64_t il) {
        std::string pattern = gguf ? n.gguf : prefix + n.hf;
        const size_t at = pattern.find("{}");
        return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(il) + pattern.substr(at + 2);
    };
    auto find = [&](Names n, int64_t il, std::vector<int64_t> ne) -> Result<const SourceTensor*> {
        const std::string name = name_of(n, il);
        const SourceTensor* t = s.find(name);
        if (!t) return Error::format("{}: tensor '{}' not found", s.path(), name);
        if (!decodable(*t))
            return Error::format("{}: tensor '{}' has type {}, which the reference cannot decode", s.path(), name, t->dtype);
        bool ok = t->n_dims == int(ne.size());
        for (size_t d = 0; ok && d < ne.size(); ++d) ok = t->ne[d] == ne[d];
        if (!ok)
            return Error::format("{}: tensor '{}': expected ne ({}, {}, {}), found ({}, {}, {}) with {} dims", s.path(),
                                 name, ne[0], ne.size() > 1 ? ne[1] : 1, ne.size() > 2 ? ne[2] : 1, t->ne[0], t->ne[1],
                                 t->ne[2], t->n_dims);
        return t;
    };
    auto matrix = [&](Names n, int64_t il, int64_t rows, int64_t cols) -> Result<Matrix> {
        const SourceTensor* t = TDM_TRY(find(n, il, {cols, rows}));
        return Matrix{DType(t->type), std::span<const uint8_t>(t->data, t->nbytes), rows, cols};
    };
    auto vector = [&](Names n, int64_t il, int64_t cols) -> Result<Floats> {
        const SourceTensor* t = TDM_TRY(find(n, il, {cols}));
        Floats out(static_cast<size_t>(cols));
        dequantize_row(DType(t->type), t->data, out.data(), cols);
        return out;
    };
    // Stacked experts [n_expert][rows][cols] (ggml {cols, rows, n_expert}), one Matrix each.
    auto experts = [&](Names n, int64_t il, int64_t rows, int64_t cols) -> Result<std::vector<Matrix>> {
        const SourceTensor* t = TDM_TRY(find(n, il, {cols, rows, hp.n_expert}));
        const uint64_t bytes = row_bytes(DType(t->type), uint64_t(cols)) * uint64_t(rows);
        std::vector<Matrix> out;
        for (int64_t e = 0; e < hp.n_expert; ++e)
            out.push_back(Matrix{DType(t->type), std::span<const uint8_t>(t->data + uint64_t(e) * bytes, bytes), rows, cols});
        return out;
    };

    // Globals.
    const Names embd{"token_embd.weight", "embed_tokens.weight"};
    const SourceTensor* te = s.find(name_of(embd, 0));
    if (!te) return Error::format("{}: token embedding '{}' not found", s.path(), name_of(embd, 0));
    hp.n_vocab = te->ne[1];
    m.tok_embd_ = TDM_TRY(matrix(embd, 0, hp.n_vocab, E));
    hp.embd_scale = gemma4_embed_scale(E, s.format(), m.tok_embd_.type);
    m.output_norm_ = TDM_TRY(vector({"output_norm.weight", "norm.weight"}, 0, E));

    // Proportional RoPE of full layers as frequency divisors over the full head: GGUF's own
    // rope_freqs, or for HF 1 on the int(factor * D / 2) rotated slots and +inf (angle 0) elsewhere.
    const int64_t half_full = hp.head_dim_full / 2;
    if (gguf) {
        m.rope_factors_ = TDM_TRY(vector({"rope_freqs.weight", ""}, 0, half_full));
        hp.n_rot_full = 0;
        for (float f : m.rope_factors_) hp.n_rot_full += f == 1.0f ? 1 : 0;
    } else {
        hp.n_rot_full = int64_t(extra.partial_rotary_factor * double(hp.head_dim_full) / 2.0);
        if (hp.n_rot_full < 0 || hp.n_rot_full > half_full)
            return Error::format("{}: partial_rotary_factor {} out of range", s.path(), extra.partial_rotary_factor);
        m.rope_factors_.assign(size_t(half_full), std::numeric_limits<float>::infinity());
        for (int64_t i = 0; i < hp.n_rot_full; ++i) m.rope_factors_[size_t(i)] = 1.0f;
    }

    // Per-layer embeddings: token table [Vp][L*P], projection [L*P][E], norm [P].
    if (P > 0) {
        const Names tok{"per_layer_token_embd.weight", "embed_tokens_per_layer.weight"};
        const SourceTensor* t = s.find(name_of(tok, 0));
        if (!t) return Error::format("{}: per-layer embedding table '{}' not found", s.path(), name_of(tok, 0));
        if (gguf) hp.n_vocab_per_layer = t->ne[1];
        if (t->n_dims != 2 || t->ne[0] != L * P || t->ne[1] != hp.n_vocab_per_layer || hp.n_vocab_per_layer < hp.n_vocab)
            return Error::format("{}: per-layer embedding table '{}' has ne ({}, {}), expected ({} = {} layers x {}, "
                                 "vocab_size_per_layer_input {} >= n_vocab {})",
                                 s.path(), name_of(tok, 0), t->ne[0], t->ne[1], L * P, L, P, hp.n_vocab_per_layer,
                                 hp.n_vocab);
        m.ple_tok_ = TDM_TRY(matrix(tok, 0, hp.n_vocab_per_layer, L * P));
        hp.ple_scale = gemma4_embed_scale(P, s.format(), m.ple_tok_.type);
        m.ple_proj_ = TDM_TRY(matrix({"per_layer_model_proj.weight", "per_layer_model_projection.weight"}, 0, L * P, E));
        m.ple_proj_norm_ = TDM_TRY(vector({"per_layer_proj_norm.weight", "per_layer_projection_norm.weight"}, 0, P));
    }

    hp.k_eq_v.resize(size_t(L), false);
    for (int64_t il = 0; il < L; ++il) {
        Layer Ly;
        const int64_t D = hp.sliding[size_t(il)] ? hp.head_dim_swa : hp.head_dim_full;
        const int64_t kv_rows = hp.n_head_kv[size_t(il)] * D, q_rows = hp.n_head * D;
        Ly.attn_norm = TDM_TRY(vector({"blk.{}.attn_norm.weight", "layers.{}.input_layernorm.weight"}, il, E));
        Ly.wq = TDM_TRY(matrix({"blk.{}.attn_q.weight", "layers.{}.self_attn.q_proj.weight"}, il, q_rows, E));
        Ly.q_norm = TDM_TRY(vector({"blk.{}.attn_q_norm.weight", "layers.{}.self_attn.q_norm.weight"}, il, D));
        if (hp.kv_source[size_t(il)] == il) {  // own K/V; KV-shared layers ignore any k/v weights
            Ly.wk = TDM_TRY(matrix({"blk.{}.attn_k.weight", "layers.{}.self_attn.k_proj.weight"}, il, kv_rows, E));
            Ly.k_norm = TDM_TRY(vector({"blk.{}.attn_k_norm.weight", "layers.{}.self_attn.k_norm.weight"}, il, D));
            const Names wv{"blk.{}.attn_v.weight", "layers.{}.self_attn.v_proj.weight"};
            // GGUF marks K=V full layers by the missing attn_v (llama.cpp's converter drops it).
            if (gguf && !hp.sliding[size_t(il)] && !s.find(name_of(wv, il))) hp.k_eq_v[size_t(il)] = true;
            if (!hp.k_eq_v[size_t(il)]) Ly.wv = TDM_TRY(matrix(wv, il, kv_rows, E));
        } else {
            hp.k_eq_v[size_t(il)] = hp.k_eq_v[size_t(hp.kv_source[size_t(il)])];
        }
        Ly.wo = TDM_TRY(matrix({"blk.{}.attn_output.weight", "layers.{}.self_attn.o_proj.weight"}, il, E, q_rows));
        Ly.post_attention_norm =
            TDM_TRY(vector({"blk.{}.post_attention_norm.weight", "layers.{}.post_attention_layernorm.weight"}, il, E));
        Ly.ffn_norm = TDM_TRY(vector({"blk.{}.ffn_norm.weight", "layers.{}.pre_feedforward_layernorm.weight"}, il, E));
        const int64_t ff = hp.n_ff[size_t(il)];
        Ly.gate = TDM_TRY(matrix({"blk.{}.ffn_gate.weight", "layers.{}.mlp.gate_proj.weight"}, il, ff, E));
        Ly.up = TDM_TRY(matrix({"blk.{}.ffn_up.weight", "layers.{}.mlp.up_proj.weight"}, il, ff, E));
        Ly.down = TDM_TRY(matrix({"blk.{}.ffn_down.weight", "layers.{}.mlp.down_proj.weight"}, il, E, ff));
        Ly.post_ffw_norm =
            TDM_TRY(vector({"blk.{}.post_ffw_norm.weight", "layers.{}.post_feedforward_layernorm.weight"}, il, E));
        Ly.out_scale = TDM_TRY(vector({"blk.{}.layer_output_scale.weight", "layers.{}.layer_scalar"}, il, 1))[0];
        if (hp.n_expert > 0) {
            const int64_t ne = hp.n_expert, fe = hp.n_ff_exp;
            Ly.router = TDM_TRY(matrix({"blk.{}.ffn_gate_inp.weight", "layers.{}.router.proj.weight"}, il, ne, E));
            Ly.router_scale = TDM_TRY(vector({"blk.{}.ffn_gate_inp.scale", "layers.{}.router.scale"}, il, E));
            Ly.per_expert_scale =
                TDM_TRY(vector({"blk.{}.ffn_down_exps.scale", "layers.{}.router.per_expert_scale"}, il, ne));
            Ly.exp_gate_up = TDM_TRY(experts({"blk.{}.ffn_gate_up_exps.weight", "layers.{}.experts.gate_up_proj"}, il,
                                             2 * fe, E));
            Ly.exp_down = TDM_TRY(experts({"blk.{}.ffn_down_exps.weight", "layers.{}.experts.down_proj"}, il, E, fe));
            Ly.pre_ffw_norm_2 =
                TDM_TRY(vector({"blk.{}.pre_ffw_norm_2.weight", "layers.{}.pre_feedforward_layernorm_2.weight"}, il, E));
            Ly.post_ffw_norm_1 =
                TDM_TRY(vector({"blk.{}.post_ffw_norm_1.weight", "layers.{}.post_feedforward_layernorm_1.weight"}, il, E));
            Ly.post_ffw_norm_2 =
                TDM_TRY(vector({"blk.{}.post_ffw_norm_2.weight", "layers.{}.post_feedforward_layernorm_2.weight"}, il, E));
        }
        if (P > 0) {
            Ly.inp_gate = TDM_TRY(matrix({"blk.{}.inp_gate.weight", "layers.{}.per_layer_input_gate.weight"}, il, P, E));
            Ly.proj = TDM_TRY(matrix({"blk.{}.proj.weight", "layers.{}.per_layer_projection.weight"}, il, E, P));
            Ly.post_norm =
                TDM_TRY(vector({"blk.{}.post_norm.weight", "layers.{}.post_per_layer_input_norm.weight"}, il, E));
        }
        m.layers_.push_back(std::move(Ly));
    }
    m.src_ = std::move(src);  // the matrices point into its mappings
    return m;
}

}  // namespace tdm::ref
