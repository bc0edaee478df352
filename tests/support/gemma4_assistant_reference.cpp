// SPDX-License-Identifier: Apache-2.0
// tests/support/gemma4_assistant_reference.cpp: Gemma4AssistantReference (see the header):
// hyper-parameters from GGUF (gemma4-assistant.* keys) or config.json (gemma4_assistant with a
// gemma4_text text_config), the weights under either naming (docs/models/gemma4.md §3.2), the checks
// against the target, then the draft step, the two LM heads and the drafting round (§3.3-3.5).
#include "support/gemma4_assistant_reference.h"

#include "common/quant.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
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

Result<Gemma4AssistantHparams> hparams_gguf(const GgufFile& f) {
    const std::string arch = TDM_TRY(f.get_string_or("general.architecture", ""));
    if (arch != "gemma4-assistant")
        return Error::format("{}: general.architecture is '{}', the Gemma 4 assistant reference needs 'gemma4-assistant'",
                             f.path(), arch);
    auto k = [](const char* name) { return std::string("gemma4-assistant.") + name; };
    Gemma4AssistantHparams hp;
    hp.n_embd = int64_t(TDM_TRY(f.get_uint(k("embedding_length"))));
    hp.n_embd_backbone = int64_t(TDM_TRY(f.get_uint(k("embedding_length_out"))));
    hp.n_layer = int64_t(TDM_TRY(f.get_uint(k("block_count"))));
    const int64_t nextn = int64_t(TDM_TRY(f.get_uint(k("nextn_predict_layers"))));
    if (nextn != hp.n_layer)
        return Error::format("{}: nextn_predict_layers is {}, block_count {} (they must be equal)", f.path(), nextn,
                             hp.n_layer);
    hp.n_head = int64_t(TDM_TRY(f.get_uint(k("attention.head_count"))));
    hp.head_dim_full = int64_t(TDM_TRY(f.get_uint(k("attention.key_length"))));
    hp.head_dim_swa = int64_t(TDM_TRY(f.get_uint(k("attention.key_length_swa"))));
    if (int64_t(TDM_TRY(f.get_uint_or(k("attention.value_length"), uint64_t(hp.head_dim_full)))) != hp.head_dim_full ||
        int64_t(TDM_TRY(f.get_uint_or(k("attention.value_length_swa"), uint64_t(hp.head_dim_swa)))) != hp.head_dim_swa)
        return Error::format("{}: value_length differs from key_length", f.path());
    if (int64_t(TDM_TRY(f.get_uint_or(k("rope.dimension_count"), uint64_t(hp.head_dim_full)))) != hp.head_dim_full ||
        int64_t(TDM_TRY(f.get_uint_or(k("rope.dimension_count_swa"), uint64_t(hp.head_dim_swa)))) != hp.head_dim_swa)
        return Error::format("{}: rope.dimension_count(_swa) must equal the head size of its layer type", f.path());
    hp.n_head_kv = TDM_TRY(per_layer_ints(f, k("attention.head_count_kv"), hp.n_layer));
    const std::vector<int64_t> ff = TDM_TRY(per_layer_ints(f, k("feed_forward_length"), hp.n_layer));
    hp.n_ff = ff.front();
    if (std::any_of(ff.begin(), ff.end(), [&](int64_t v) { return v != hp.n_ff; }))
        return Error::format("{}: feed_forward_length differs between layers", f.path());
    hp.rms_eps = float(TDM_TRY(f.get_float(k("attention.layer_norm_rms_epsilon"))));
    hp.window = int64_t(TDM_TRY(f.get_uint(k("attention.sliding_window"))));
    hp.sliding = TDM_TRY(f.get_bool_array(k("attention.sliding_window_pattern")));
    if (int64_t(hp.sliding.size()) != hp.n_layer)
        return Error::format("{}: {} has {} entries, expected one per layer ({})", f.path(),
                             k("attention.sliding_window_pattern"), hp.sliding.size(), hp.n_layer);
    hp.rope_theta_full = TDM_TRY(f.get_float(k("rope.freq_base")));
    hp.rope_theta_swa = TDM_TRY(f.get_float(k("rope.freq_base_swa")));
    hp.softcap = float(TDM_TRY(f.get_float_or(k("final_logit_softcapping"), 0.0)));
    // No GGUF key is specified for the head's top-k; default to the released models' 32.
    hp.n_centroids_top_k = int64_t(TDM_TRY(f.get_uint_or(k("centroid_intermediate_top_k"), 32)));
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

// partial_rotary_factor of full layers comes back through `factor`.
Result<Gemma4AssistantHparams> hparams_hf(const ModelSource& src, double& factor) {
    const nlohmann::json* top = src.hf_config();
    if (!top) return Error::format("{}: no usable config.json", src.path());
    const std::string where = src.safetensors()->config_path();
    if (src.architecture() != "gemma4_assistant")
        return Error::format("{}: model_type is '{}', the Gemma 4 assistant reference needs gemma4_assistant", where,
                             src.architecture());
    auto tc = top->find("text_config");
    if (tc == top->end() || !tc->is_object()) return Error::format("{}: gemma4_assistant without a text_config", where);
    const nlohmann::json& c = *tc;

    Gemma4AssistantHparams hp;
    hp.n_embd_backbone = TDM_TRY(json_int(*top, "backbone_hidden_size", where));
    hp.ordered = TDM_TRY(json_bool_or(*top, "use_ordered_embeddings", false, where));
    hp.n_centroids = TDM_TRY(json_int_or(*top, "num_centroids", 2048, where));
    hp.n_centroids_top_k = TDM_TRY(json_int_or(*top, "centroid_intermediate_top_k", 32, where));
    hp.n_embd = TDM_TRY(json_int(c, "hidden_size", where));
    hp.n_layer = TDM_TRY(json_int(c, "num_hidden_layers", where));
    hp.n_head = TDM_TRY(json_int(c, "num_attention_heads", where));
    const int64_t kv_swa = TDM_TRY(json_int(c, "num_key_value_heads", where));
    hp.head_dim_swa = TDM_TRY(json_int(c, "head_dim", where));
    hp.head_dim_full = TDM_TRY(json_int_or(c, "global_head_dim", hp.head_dim_swa, where));
    const bool k_eq_v = TDM_TRY(json_bool_or(c, "attention_k_eq_v", false, where));
    const int64_t global_kv = TDM_TRY(json_int_or(c, "num_global_key_value_heads", 0, where));
    hp.n_ff = TDM_TRY(json_int(c, "intermediate_size", where));
    hp.window = TDM_TRY(json_int(c, "sliding_window", where));
    hp.rms_eps = float(TDM_TRY(json_number_or(c, "rms_norm_eps", 1e-6, where)));
    hp.softcap = float(TDM_TRY(json_number_or(c, "final_logit_softcapping", 0.0, where)));
    // HF's validate_architecture: no per-layer inputs, no MoE, no double-wide MLP.
    if (TDM_TRY(json_int_or(c, "hidden_size_per_layer_input", 0, where)) != 0 ||
        TDM_TRY(json_bool_or(c, "enable_moe_block", false, where)) ||
        TDM_TRY(json_bool_or(c, "use_double_wide_mlp", false, where)))
        return Error::format("{}: the assistant's text_config must have no per-layer inputs, MoE or double-wide MLP",
                             where);
    if (hp.n_layer <= 0 || hp.n_layer > 64) return Error::format("{}: num_hidden_layers is {}", where, hp.n_layer);
    if (auto it = c.find("layer_types"); it != c.end() && !it->is_null()) {
        if (!it->is_array() || int64_t(it->size()) != hp.n_layer)
            return Error::format("{}: layer_types must list one type per layer ({})", where, hp.n_layer);
        for (const auto& t : *it) {
            if (t == "sliding_attention") hp.sliding.push_back(true);
            else if (t == "full_attention") hp.sliding.push_back(false);
            else return Error::format("{}: unknown layer type {}", where, t.dump());
        }
    } else {
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.sliding.push_back(il != hp.n_layer - 1 && (il + 1) % 6 != 0);
    }
    for (int64_t il = 0; il < hp.n_layer; ++il)
        hp.n_head_kv.push_back(hp.sliding[size_t(il)] ? kv_swa : (k_eq_v && global_kv > 0 ? global_kv : kv_swa));
    hp.rope_theta_swa = 10000.0;
    hp.rope_theta_full = 1000000.0;
    factor = 0.25;
    if (auto it = c.find("rope_parameters"); it != c.end() && it->is_object()) {
        if (auto s = it->find("sliding_attention"); s != it->end() && s->is_object())
            hp.rope_theta_swa = TDM_TRY(json_number_or(*s, "rope_theta", hp.rope_theta_swa, where));
        if (auto f = it->find("full_attention"); f != it->end() && f->is_object()) {
            hp.rope_theta_full = TDM_TRY(json_number_or(*f, "rope_theta", hp.rope_theta_full, where));
            factor = TDM_TRY(json_number_or(*f, "partial_rotary_factor", factor, where));
            if (auto rt = f->find("rope_type"); rt != f->end() && *rt == "default") factor = 1.0;
        }
    }
    return hp;
}

bool decodable(const SourceTensor& t) {
    const DTypeTraits* tr = dtype_traits(t.type);
    return tr && (tr->quantized || t.type == uint32_t(DType::F32) || t.type == uint32_t(DType::F16) ||
                  t.type == uint32_t(DType::BF16));
}

}  // namespace

// ===== loading ==================================================================================

Result<Gemma4AssistantReference> Gemma4AssistantReference::open(const std::string& path, const Gemma4Reference& target,
                                                                Gemma4AssistantOptions opts) {
    return load(TDM_TRY(ModelSource::open(path)), target, opts);
}

Result<Gemma4AssistantReference> Gemma4AssistantReference::load(std::unique_ptr<ModelSource> src,
                                                                const Gemma4Reference& target,
                                                                Gemma4AssistantOptions opts) {
    Gemma4AssistantReference m;
    m.opts_ = opts;
    const ModelSource& s = *src;
    const bool gguf = s.format() == SourceFormat::gguf;
    double factor = 0.0;
    m.hp_ = gguf ? TDM_TRY(hparams_gguf(*s.gguf())) : TDM_TRY(hparams_hf(s, factor));
    Gemma4AssistantHparams& hp = m.hp_;
    const int64_t Ha = hp.n_embd, Hb = hp.n_embd_backbone;
    if (Ha <= 0 || Hb <= 0 || hp.n_layer <= 0 || hp.n_head <= 0 || hp.head_dim_swa <= 0 || hp.head_dim_swa % 2 != 0 ||
        hp.head_dim_full <= 0 || hp.head_dim_full % 2 != 0 || hp.window <= 0 || hp.n_ff <= 0)
        return Error::format("{}: inconsistent hyper-parameters (n_embd {}, backbone {}, n_layer {}, n_head {}, head "
                             "dims {}/{}, window {}, n_ff {})",
                             s.path(), Ha, Hb, hp.n_layer, hp.n_head, hp.head_dim_swa, hp.head_dim_full, hp.window,
                             hp.n_ff);

    auto find = [&](const std::string& name, std::vector<int64_t> ne) -> Result<const SourceTensor*> {
        const SourceTensor* t = s.find(name);
        if (!t) return Error::format("{}: tensor '{}' not found", s.path(), name);
        bool ok = t->n_dims == int(ne.size());
        for (size_t d = 0; ok && d < ne.size(); ++d) ok = t->ne[d] == ne[d];
        if (!ok)
            return Error::format("{}: tensor '{}': expected ne ({}, {}), found ({}, {}) with {} dims", s.path(), name,
                                 ne[0], ne.size() > 1 ? ne[1] : 1, t->ne[0], t->ne[1], t->n_dims);
        return t;
    };
    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) -> Result<Matrix> {
        const SourceTensor* t = TDM_TRY(find(name, {cols, rows}));
        if (!decodable(*t)) return Error::format("{}: tensor '{}' has type {}, which the reference cannot decode",
                                                 s.path(), name, t->dtype);
        return Matrix{DType(t->type), std::span<const uint8_t>(t->data, t->nbytes), rows, cols};
    };
    auto vector = [&](const std::string& name, int64_t cols) -> Result<Floats> {
        const SourceTensor* t = TDM_TRY(find(name, {cols}));
        if (!decodable(*t)) return Error::format("{}: tensor '{}' has type {}, which the reference cannot decode",
                                                 s.path(), name, t->dtype);
        Floats out(static_cast<size_t>(cols));
        dequantize_row(DType(t->type), t->data, out.data(), cols);
        return out;
    };

    // Globals. The vocabulary is the drafter's own table's.
    const std::string embd = gguf ? "token_embd.weight" : "model.embed_tokens.weight";
    const SourceTensor* te = s.find(embd);
    if (!te) return Error::format("{}: tensor '{}' not found", s.path(), embd);
    hp.n_vocab = te->ne[1];
    m.tok_embd_ = TDM_TRY(matrix(embd, hp.n_vocab, Ha));
    m.output_norm_ = TDM_TRY(vector(gguf ? "output_norm.weight" : "model.norm.weight", Ha));
    m.pre_proj_ = TDM_TRY(matrix(gguf ? "nextn.pre_projection.weight" : "pre_projection.weight", Ha, 2 * Hb));
    m.post_proj_ = TDM_TRY(matrix(gguf ? "nextn.post_projection.weight" : "post_projection.weight", Hb, Ha));

    // Full-layer RoPE divisors: GGUF rope_freqs, or HF's partial_rotary_factor (+inf = angle 0).
    const int64_t half_full = hp.head_dim_full / 2;
    if (gguf) {
        m.rope_factors_ = TDM_TRY(vector("rope_freqs.weight", half_full));
        for (float f : m.rope_factors_) hp.n_rot_full += f == 1.0f ? 1 : 0;
    } else {
        hp.n_rot_full = int64_t(factor * double(hp.head_dim_full) / 2.0);
        if (hp.n_rot_full < 0 || hp.n_rot_full > half_full)
            return Error::format("{}: partial_rotary_factor {} out of range", s.path(), factor);
        m.rope_factors_.assign(size_t(half_full), std::numeric_limits<float>::infinity());
        for (int64_t i = 0; i < hp.n_rot_full; ++i) m.rope_factors_[size_t(i)] = 1.0f;
    }

    // Ordered head: GGUF signals it by the centroid tensor, HF by use_ordered_embeddings.
    const std::string cname = gguf ? "masked_embd_centroids.weight" : "masked_embedding.centroids.weight";
    const std::string oname = gguf ? "masked_embd_ordering.weight" : "masked_embedding.token_ordering";
    if (gguf) {
        const SourceTensor* c = s.find(cname);
        hp.ordered = c != nullptr;
        if (c) hp.n_centroids = c->ne[1];
    }
    if (hp.ordered) {
        if (hp.n_centroids <= 0 || hp.n_vocab % hp.n_centroids != 0 || hp.n_centroids_top_k <= 0 ||
            hp.n_centroids_top_k > hp.n_centroids)
            return Error::format("{}: {} centroids with top-k {} cannot partition a vocabulary of {}", s.path(),
                                 hp.n_centroids, hp.n_centroids_top_k, hp.n_vocab);
        m.centroids_ = TDM_TRY(matrix(cname, hp.n_centroids, Ha));
        const SourceTensor* o = TDM_TRY(find(oname, {hp.n_vocab}));
        const bool i32 = gguf ? o->type == uint32_t(DType::I32) : o->dtype == "I32";
        const bool i64 = !gguf && o->dtype == "I64";
        if (!i32 && !i64)
            return Error::format("{}: tensor '{}' has type {}, expected integer ids ({})", s.path(), oname, o->dtype,
                                 gguf ? "I32" : "I64 or I32");
        std::vector<bool> seen(size_t(hp.n_vocab), false);
        for (int64_t i = 0; i < hp.n_vocab; ++i) {
            int64_t id = 0;
            if (i64) std::memcpy(&id, o->data + 8 * i, 8);
            else {
                int32_t v = 0;
                std::memcpy(&v, o->data + 4 * i, 4);
                id = v;
            }
            if (id < 0 || id >= hp.n_vocab || seen[size_t(id)])
                return Error::format("{}: '{}' is not a permutation of the vocabulary (entry {} is {})", s.path(), oname,
                                     i, id);
            seen[size_t(id)] = true;
            m.ordering_.push_back(int32_t(id));
        }
    }

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        Layer Ly;
        const int64_t D = hp.sliding[size_t(il)] ? hp.head_dim_swa : hp.head_dim_full, q_rows = hp.n_head * D;
        const std::string b = gguf ? "blk." + std::to_string(il) + "." : "model.layers." + std::to_string(il) + ".";
        auto nm = [&](const char* g, const char* h) { return b + (gguf ? g : h); };
        Ly.attn_norm = TDM_TRY(vector(nm("attn_norm.weight", "input_layernorm.weight"), Ha));
        Ly.wq = TDM_TRY(matrix(nm("attn_q.weight", "self_attn.q_proj.weight"), q_rows, Ha));
        Ly.q_norm = TDM_TRY(vector(nm("attn_q_norm.weight", "self_attn.q_norm.weight"), D));
        Ly.wo = TDM_TRY(matrix(nm("attn_output.weight", "self_attn.o_proj.weight"), Ha, q_rows));
        Ly.post_attention_norm = TDM_TRY(vector(nm("post_attention_norm.weight", "post_attention_layernorm.weight"), Ha));
        Ly.ffn_norm = TDM_TRY(vector(nm("ffn_norm.weight", "pre_feedforward_layernorm.weight"), Ha));
        Ly.gate = TDM_TRY(matrix(nm("ffn_gate.weight", "mlp.gate_proj.weight"), hp.n_ff, Ha));
        Ly.up = TDM_TRY(matrix(nm("ffn_up.weight", "mlp.up_proj.weight"), hp.n_ff, Ha));
        Ly.down = TDM_TRY(matrix(nm("ffn_down.weight", "mlp.down_proj.weight"), Ha, hp.n_ff));
        Ly.post_ffw_norm = TDM_TRY(vector(nm("post_ffw_norm.weight", "post_feedforward_layernorm.weight"), Ha));
        Ly.out_scale = TDM_TRY(vector(nm("layer_output_scale.weight", "layer_scalar"), 1))[0];
        m.layers_.push_back(std::move(Ly));
    }
    m.src_ = std::move(src);  // the matrices point into its mappings
    TDM_TRY(m.check_target(target));
    return m;
}

// The drafter consumes the target's embedding, hidden rows and K/V as they are (spec §3.1).
Status Gemma4AssistantReference::check_target(const Gemma4Reference& target) const {
    const Gemma4AssistantHparams& hp = hp_;
    const Gemma4Hparams& t = target.hparams();
    const std::string& path = src_->path();
    if (hp.n_embd_backbone != t.n_embd)
        return Error::format("{}: backbone hidden size (embedding_length_out / backbone_hidden_size) is {}, the "
                             "target's hidden size is {}",
                             path, hp.n_embd_backbone, t.n_embd);
    if (hp.n_vocab != t.n_vocab)
        return Error::format("{}: the drafter's vocabulary (token_embd rows) is {}, the target's is {}", path, hp.n_vocab,
                             t.n_vocab);
    if (hp.head_dim_swa != t.head_dim_swa || hp.head_dim_full != t.head_dim_full)
        return Error::format("{}: head dims (sliding/full) are {}/{}, the target's are {}/{}", path, hp.head_dim_swa,
                             hp.head_dim_full, t.head_dim_swa, t.head_dim_full);
    if (hp.window != t.window)
        return Error::format("{}: sliding window is {}, the target's is {}", path, hp.window, t.window);
    if (hp.rope_theta_swa != t.rope_theta_swa || hp.rope_theta_full != t.rope_theta_full ||
        hp.n_rot_full != t.n_rot_full)
        return Error::format("{}: RoPE (theta sliding/full, rotated full slots) is {}/{}/{}, the target's is {}/{}/{}",
                             path, hp.rope_theta_swa, hp.rope_theta_full, hp.n_rot_full, t.rope_theta_swa,
                             t.rope_theta_full, t.n_rot_full);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const bool swa = hp.sliding[size_t(il)];
        const int64_t src_l = target.shared_kv_layer(swa);
        if (src_l < 0)
            return Error::format("{}: layer {} is {}, the target has no layer of that type with its own K/V", path, il,
                                 swa ? "sliding" : "full");
        const int64_t kv = t.n_head_kv[size_t(src_l)];
        if (hp.n_head_kv[size_t(il)] != kv || hp.n_head % kv != 0)
            return Error::format("{}: layer {} has {} KV heads ({} query heads), the target's {} layer {} has {}", path,
                                 il, hp.n_head_kv[size_t(il)], hp.n_head, swa ? "sliding" : "full", src_l, kv);
    }
    return {};
}

// ===== forward ==================================================================================

Floats Gemma4AssistantReference::mm(std::span<const float> x, const Matrix& m) {
    return matmul(x, m.type, m.bytes, m.rows, m.cols);
}

Gemma4AssistantHead Gemma4AssistantReference::head(std::span<const float> hn) const {
    const Gemma4AssistantHparams& hp = hp_;
    TDM_ASSERT(int64_t(hn.size()) == hp.n_embd);
    Gemma4AssistantHead out;
    if (!hp.ordered) {
        // logits = hn E_a^T (tied head over the drafter's own table).
        out.logits = mm(hn, tok_embd_);
        out.token = argmax(out.logits, hp.n_vocab)[0];
        return out;
    }
    // c = hn C^T; the top-k clusters, largest first; their token groups in that order.
    const int64_t group = hp.n_vocab / hp.n_centroids;
    const Floats c = mm(hn, centroids_);
    for (int32_t cl : top_k(c, hp.n_centroids, hp.n_centroids_top_k))
        out.candidates.insert(out.candidates.end(), ordering_.begin() + cl * group, ordering_.begin() + (cl + 1) * group);
    // s = hn E_a[cand]^T; logits = min(s) - 1 everywhere else.
    const Floats rows = get_rows(tok_embd_.type, tok_embd_.bytes, hp.n_embd, out.candidates);
    const Floats s = matmul(hn, DType::F32,
                            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(rows.data()), rows.size() * 4),
                            int64_t(out.candidates.size()), hp.n_embd);
    const float lo = *std::min_element(s.begin(), s.end());
    out.logits.assign(size_t(hp.n_vocab), lo - 1.0f);
    size_t best = 0;
    for (size_t j = 0; j < s.size(); ++j) {
        out.logits[size_t(out.candidates[j])] = s[j];
        if (s[j] > s[best]) best = j;  // first candidate on ties
    }
    out.token = out.candidates[best];
    return out;
}

Gemma4AssistantStep Gemma4AssistantReference::step(const Gemma4Reference& target, const Gemma4Cache& target_cache,
                                                   std::span<const float> hb, int32_t tok, int64_t p) const {
    const Gemma4AssistantHparams& hp = hp_;
    const Gemma4Hparams& thp = target.hparams();
    const int64_t Ha = hp.n_embd, Hb = hp.n_embd_backbone;
    TDM_ASSERT_MSG(thp.n_embd == Hb && thp.n_vocab == hp.n_vocab, "drafter and target do not match");
    TDM_ASSERT_MSG(int64_t(hb.size()) == Hb, "hidden row of the wrong width");
    TDM_ASSERT_MSG(p >= 0 && p <= target_cache.n_past, "draft position past the target cache");

    // x = pre_projection(concat[E_t[tok] * sqrt(Hb), hb])                   [Ha]
    const int32_t ids[1] = {tok};
    const Floats e = target.embed(ids);
    Floats x = mm(concat(e, Hb, hb, Hb), pre_proj_);
    const int32_t q_pos[1] = {int32_t(p)};

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const Layer& Ly = layers_[size_t(il)];
        const bool swa = hp.sliding[size_t(il)];
        const int64_t D = swa ? hp.head_dim_swa : hp.head_dim_full;
        // q = rope(q_norm(q_proj(attn_norm(x))), p)                          [n_head][D]
        const Floats a = rms_norm(x, Ha, hp.rms_eps, NormWeight::Plain, Ly.attn_norm);
        RopeParams rp;
        rp.n_rot = D;
        rp.pairing = RopePairing::NeoX;
        rp.theta = swa ? hp.rope_theta_swa : hp.rope_theta_full;
        if (!swa) rp.freq_factors = rope_factors_;
        const Floats q = rope(rms_norm(mm(a, Ly.wq), D, hp.rms_eps, NormWeight::Plain, Ly.q_norm), 1, hp.n_head, D,
                              q_pos, rp);
        // K/V: the target's own-KV layer of this type, committed positions [lo, p).
        const int64_t src_l = target.shared_kv_layer(swa), n_kv = thp.n_head_kv[size_t(src_l)];
        const int64_t lo = swa ? std::max<int64_t>(0, p - hp.window) : 0, row = n_kv * D;
        const Floats& ck = target_cache.k[size_t(src_l)];
        const Floats& cv = target_cache.v[size_t(src_l)];
        TDM_ASSERT(int64_t(ck.size()) >= p * row && int64_t(cv.size()) >= p * row);
        const std::span<const float> k(ck.data() + lo * row, size_t((p - lo) * row));
        const std::span<const float> v(cv.data() + lo * row, size_t((p - lo) * row));
        std::vector<int32_t> k_pos;
        for (int64_t j = lo; j < p; ++j) k_pos.push_back(int32_t(j));
        AttnParams ap;
        ap.n_head = hp.n_head;
        ap.n_head_kv = n_kv;
        ap.head_dim = D;
        ap.head_dim_v = D;
        ap.scale = 1.0f;
        ap.window = 0;  // the range above is the window
        const Floats o = attention(q, q_pos, k, v, k_pos, ap);
        // x = x + post_attention_norm(o_proj(o))
        x = add(x, rms_norm(mm(o, Ly.wo), Ha, hp.rms_eps, NormWeight::Plain, Ly.post_attention_norm), Ha);
        // x = x + post_ffw_norm(down(gelu_tanh(gate(h)) * up(h))), h = ffn_norm(x)
        const Floats h = rms_norm(x, Ha, hp.rms_eps, NormWeight::Plain, Ly.ffn_norm);
        const Floats f = mm(geglu(mm(h, Ly.gate), mm(h, Ly.up)), Ly.down);
        x = add(x, rms_norm(f, Ha, hp.rms_eps, NormWeight::Plain, Ly.post_ffw_norm), Ha);
        x = scale(x, Ly.out_scale);  // layer_output_scale: the whole stream
    }

    // hn = output_norm(x); hb' = post_projection(hn); logits = head(hn) (softcapped if set)
    const Floats hn = rms_norm(x, Ha, hp.rms_eps, NormWeight::Plain, output_norm_);
    Gemma4AssistantStep out;
    out.hidden = mm(hn, post_proj_);
    Gemma4AssistantHead hd = head(hn);
    out.token = hd.token;
    out.logits = hp.softcap > 0.0f && opts_.apply_softcap ? softcap(hd.logits, hp.softcap) : std::move(hd.logits);
    return out;
}

std::vector<int32_t> Gemma4AssistantReference::draft(const Gemma4Reference& target, const Gemma4Cache& target_cache,
                                                     std::span<const float> h_prev, int32_t tok, int64_t p, int k,
                                                     std::vector<Floats>* step_logits) const {
    std::vector<int32_t> out;
    Floats hb(h_prev.begin(), h_prev.end());
    for (int j = 0; j < k; ++j) {
        // Constant position p; the recurrent state is hb only.
        Gemma4AssistantStep st = step(target, target_cache, hb, tok, p);
        tok = st.token;
        hb = std::move(st.hidden);
        out.push_back(tok);
        if (step_logits) step_logits->push_back(std::move(st.logits));
    }
    return out;
}

}  // namespace tdm::ref
