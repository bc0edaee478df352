// SPDX-License-Identifier: Apache-2.0
// tests/support/glm_reference_load.cpp: loading of GlmReference: hyper-parameters from GGUF
// metadata (arch glm4, docs/models/glm-ocr.md §2.3) or from config.json's text_config, and the weights under
// either naming (§2.3, §3.1):
//   GGUF  blk.N.*, post_attention_norm on the attention output, ffn_norm before the MLP, q/k rows
//         in NeoX order when rope.dimension_sections is set; MTP as blk.<n_layer>.nextn.* + blk.<n_layer>.*
//   HF    model.language_model.layers.N.*, post_self_attn_layernorm on the attention output,
//         post_attention_layernorm before the MLP (§6.1), q/k rows in adjacent-pair order.
#include "support/glm_reference.h"

#include "common/quant.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <numeric>
#include <tuple>

namespace tdm::ref {
namespace {

Result<int64_t> json_int(const nlohmann::json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return Error::format("{}: \"{}\" missing or not an integer", where, key);
    return it->get<int64_t>();
}

Result<int64_t> json_int_or(const nlohmann::json& j, const char* key, int64_t dflt, const std::string& where) {
    if (!j.contains(key)) return dflt;
    return json_int(j, key, where);
}

Result<double> json_number_or(const nlohmann::json& j, const char* key, double dflt, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end()) return dflt;
    if (!it->is_number()) return Error::format("{}: \"{}\" is not a number", where, key);
    return it->get<double>();
}

Result<GlmHparams> hparams_gguf(const GgufFile& f) {
    const std::string arch = TDM_TRY(f.get_string_or("general.architecture", ""));
    if (arch != "glm4")
        return Error::format("{}: general.architecture is '{}', the GLM-OCR reference needs glm4", f.path(), arch);
    auto k = [](const char* name) { return std::string("glm4.") + name; };
    GlmHparams hp;
    const int64_t n_all = int64_t(TDM_TRY(f.get_uint(k("block_count"))));
    hp.n_nextn = int64_t(TDM_TRY(f.get_uint_or(k("nextn_predict_layers"), 0)));
    hp.n_layer = n_all - hp.n_nextn;
    hp.n_embd = int64_t(TDM_TRY(f.get_uint(k("embedding_length"))));
    hp.n_head = int64_t(TDM_TRY(f.get_uint(k("attention.head_count"))));
    hp.n_head_kv = int64_t(TDM_TRY(f.get_uint_or(k("attention.head_count_kv"), uint64_t(hp.n_head))));
    // head_dim is explicit in GLM-OCR (128, not n_embd / n_head = 96; §6.2).
    const uint64_t dflt_dim = hp.n_head > 0 ? uint64_t(hp.n_embd / hp.n_head) : 0;
    hp.head_dim = int64_t(TDM_TRY(f.get_uint_or(k("attention.key_length"), dflt_dim)));
    if (int64_t(TDM_TRY(f.get_uint_or(k("attention.value_length"), uint64_t(hp.head_dim)))) != hp.head_dim)
        return Error::format("{}: key_length and value_length differ", f.path());
    hp.n_ff = int64_t(TDM_TRY(f.get_uint(k("feed_forward_length"))));
    hp.n_rot = int64_t(TDM_TRY(f.get_uint_or(k("rope.dimension_count"), uint64_t(hp.head_dim))));
    hp.rope_theta = TDM_TRY(f.get_float_or(k("rope.freq_base"), 10000.0));
    hp.rms_eps = float(TDM_TRY(f.get_float(k("attention.layer_norm_rms_epsilon"))));
    if (f.find(k("rope.dimension_sections"))) {
        const std::vector<int64_t> sec = TDM_TRY(f.get_int_array(k("rope.dimension_sections")));
        if (sec.size() != 4) return Error::format("{}: rope.dimension_sections has {} entries, expected 4", f.path(), sec.size());
        for (size_t i = 0; i < 4; ++i) hp.sections[i] = int(sec[i]);
    }
    // llama.cpp's converter permutes q/k into NeoX order exactly when the model has sections, and
    // llama.cpp then ropes glm4 as MROPE (NeoX); without sections it is NORM (adjacent; §2.1).
    hp.mrope = std::accumulate(hp.sections.begin(), hp.sections.end(), 0) > 0;
    hp.pairing = hp.mrope ? RopePairing::NeoX : RopePairing::Adjacent;
    hp.tied = f.find_tensor("output.weight") == nullptr;
    return hp;
}

Result<GlmHparams> hparams_hf(const ModelSource& src) {
    const nlohmann::json* top = src.hf_config();
    if (!top) return Error::format("{}: no usable config.json", src.path());
    const std::string where = src.safetensors()->config_path();
    const std::string type = src.architecture();
    if (type != "glm_ocr" && type != "glm_ocr_text")
        return Error::format("{}: model_type is '{}', the GLM-OCR reference needs glm_ocr", where, type);
    const nlohmann::json& c = top->contains("text_config") ? (*top)["text_config"] : *top;
    GlmHparams hp;
    hp.n_embd = TDM_TRY(json_int(c, "hidden_size", where));
    hp.n_layer = TDM_TRY(json_int(c, "num_hidden_layers", where));
    hp.n_nextn = TDM_TRY(json_int_or(c, "num_nextn_predict_layers", 0, where));
    hp.n_head = TDM_TRY(json_int(c, "num_attention_heads", where));
    hp.n_head_kv = TDM_TRY(json_int_or(c, "num_key_value_heads", hp.n_head, where));
    hp.head_dim = TDM_TRY(json_int_or(c, "head_dim", hp.n_head > 0 ? hp.n_embd / hp.n_head : 0, where));
    hp.n_ff = TDM_TRY(json_int(c, "intermediate_size", where));
    hp.n_vocab = TDM_TRY(json_int_or(c, "vocab_size", 0, where));  // checked against the embedding
    hp.rms_eps = float(TDM_TRY(json_number_or(c, "rms_norm_eps", 1e-5, where)));
    // transformers v5 nests RoPE in rope_parameters; older configs keep rope_theta at the top and
    // mrope_section in rope_scaling.
    const nlohmann::json& rope = c.contains("rope_parameters") ? c["rope_parameters"] : c;
    hp.rope_theta = TDM_TRY(json_number_or(rope, "rope_theta", 10000.0, where));
    // The checkpoint rotates in full (§1); older GLM-4 text models used 0.5 but always say so.
    const double factor = TDM_TRY(json_number_or(rope, "partial_rotary_factor", 1.0, where));
    hp.n_rot = int64_t(double(hp.head_dim) * factor);
    const nlohmann::json* sec = rope.contains("mrope_section") ? &rope["mrope_section"] : nullptr;
    if (!sec && c.contains("rope_scaling") && c["rope_scaling"].is_object() && c["rope_scaling"].contains("mrope_section"))
        sec = &c["rope_scaling"]["mrope_section"];
    if (sec) {
        if (!sec->is_array() || sec->size() > 4) return Error::format("{}: mrope_section is not a list of 3", where);
        for (size_t i = 0; i < sec->size(); ++i) {
            if (!(*sec)[i].is_number_integer()) return Error::format("{}: mrope_section holds a non-integer", where);
            hp.sections[i] = (*sec)[i].get<int>();
        }
    }
    hp.mrope = std::accumulate(hp.sections.begin(), hp.sections.end(), 0) > 0;
    hp.pairing = RopePairing::Adjacent;  // HF rotate_half_llm: (2i, 2i + 1), whatever the sections
    const nlohmann::json* tie = c.contains("tie_word_embeddings") ? &c["tie_word_embeddings"]
                                : top->contains("tie_word_embeddings") ? &(*top)["tie_word_embeddings"]
                                                                       : nullptr;
    hp.tied = tie && tie->is_boolean() && tie->get<bool>();
    return hp;
}

}  // namespace

// Maps roles onto the file's tensor names and checks every shape (friend of GlmReference).
class GlmLoader {
public:
    using Matrix = GlmReference::Matrix;
    using Layer = GlmReference::Layer;

    GlmLoader(const ModelSource& s, const GlmHparams& hp) : s_(s), hp_(hp), gguf_(s.format() == SourceFormat::gguf) {
        if (!gguf_) root_ = s.find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
    }

    Result<const SourceTensor*> tensor(const std::string& name, std::vector<int64_t> ne) const {
        const SourceTensor* t = s_.find(name);
        if (!t) return Error::format("{}: tensor '{}' not found", s_.path(), name);
        const DTypeTraits* tr = dtype_traits(t->type);
        if (!tr || (!tr->quantized && t->type != uint32_t(DType::F32) && t->type != uint32_t(DType::F16) &&
                    t->type != uint32_t(DType::BF16)))
            return Error::format("{}: tensor '{}' has type {}, which the reference cannot decode", s_.path(), name, t->dtype);
        bool ok = t->n_dims == int(ne.size());
        for (size_t i = 0; ok && i < ne.size(); ++i) ok = t->ne[i] == ne[i];
        if (!ok)
            return Error::format("{}: tensor '{}': expected ne {}, found ({}, {}, {}) with {} dims", s_.path(), name,
                                 fmt::join(ne, ", "), t->ne[0], t->ne[1], t->ne[2], t->n_dims);
        return t;
    }
    // Rows [r0, r0 + rows) of the [.][cols] matrix `name` holding `total` rows (ne {cols, total}).
    Result<Matrix> matrix(const std::string& name, int64_t rows, int64_t cols, int64_t r0 = 0, int64_t total = 0) const {
        const SourceTensor* t = TDM_TRY(tensor(name, {cols, total > 0 ? total : rows}));
        const uint64_t rb = row_bytes(DType(t->type), uint64_t(cols));
        return Matrix{DType(t->type), std::span<const uint8_t>(t->data + uint64_t(r0) * rb, uint64_t(rows) * rb), rows, cols};
    }
    Result<Floats> vec(const std::string& name, int64_t n) const {
        const SourceTensor* t = TDM_TRY(tensor(name, {n}));
        Floats out(static_cast<size_t>(n));
        dequantize_row(DType(t->type), t->data, out.data(), n);
        return out;
    }
    std::string pick(const char* gguf, const char* hf) const { return gguf_ ? gguf : hf; }

    Result<Layer> layer(int64_t il) const {
        const int64_t E = hp_.n_embd, D = hp_.head_dim, F = hp_.n_ff, q = hp_.n_head * D, kv = hp_.n_head_kv * D;
        const std::string p = gguf_ ? "blk." + std::to_string(il) + "." : root_ + "layers." + std::to_string(il) + ".";
        Layer L;
        // The four norms are all [E]: a swapped mapping would load silently (§6.1).
        L.attn_norm = TDM_TRY(vec(p + pick("attn_norm.weight", "input_layernorm.weight"), E));
        L.attn_out_norm = TDM_TRY(vec(p + pick("post_attention_norm.weight", "post_self_attn_layernorm.weight"), E));
        L.ffn_norm = TDM_TRY(vec(p + pick("ffn_norm.weight", "post_attention_layernorm.weight"), E));
        L.ffn_out_norm = TDM_TRY(vec(p + pick("post_ffw_norm.weight", "post_mlp_layernorm.weight"), E));
        L.wq = TDM_TRY(matrix(p + pick("attn_q.weight", "self_attn.q_proj.weight"), q, E));
        L.wk = TDM_TRY(matrix(p + pick("attn_k.weight", "self_attn.k_proj.weight"), kv, E));
        L.wv = TDM_TRY(matrix(p + pick("attn_v.weight", "self_attn.v_proj.weight"), kv, E));
        L.wo = TDM_TRY(matrix(p + pick("attn_output.weight", "self_attn.o_proj.weight"), E, q));
        // GLM-4-0414's q/k/v biases (docs/models/glm4.md): added after each projection
        for (auto [bias, name, n] : {std::tuple{&L.bq, pick("attn_q.bias", "self_attn.q_proj.bias"), q},
                                     std::tuple{&L.bk, pick("attn_k.bias", "self_attn.k_proj.bias"), kv},
                                     std::tuple{&L.bv, pick("attn_v.bias", "self_attn.v_proj.bias"), kv}})
            if (s_.find(p + name)) *bias = TDM_TRY(vec(p + name, n));
        const std::string gu = p + pick("ffn_up.weight", "mlp.gate_up_proj.weight");
        L.gate = TDM_TRY(matrix(gu, F, E, 0, 2 * F));  // gate rows first (§6.4)
        L.up = TDM_TRY(matrix(gu, F, E, F, 2 * F));
        L.down = TDM_TRY(matrix(p + pick("ffn_down.weight", "mlp.down_proj.weight"), E, F));
        return L;
    }

    // The MTP layer's extras (§3.1). Its own embedding, head and head norm are optional: a file
    // without them shares the trunk's, as llama.cpp's NextN loaders fall back.
    Status mtp(Layer& L, const GlmReference& m) const {
        const int64_t E = hp_.n_embd, V = hp_.n_vocab;
        const std::string p = gguf_ ? "blk." + std::to_string(hp_.n_layer) + ".nextn."
                                    : root_ + "layers." + std::to_string(hp_.n_layer) + ".";
        L.eh_proj = TDM_TRY(matrix(p + "eh_proj.weight", E, 2 * E));
        L.enorm = TDM_TRY(vec(p + "enorm.weight", E));
        L.hnorm = TDM_TRY(vec(p + "hnorm.weight", E));
        const std::string embed = p + "embed_tokens.weight";
        const std::string head = p + pick("shared_head_head.weight", "shared_head.head.weight");
        const std::string head_norm = p + pick("shared_head_norm.weight", "shared_head.norm.weight");
        L.embed = s_.find(embed) ? TDM_TRY(matrix(embed, V, E)) : m.tok_embd_;
        L.head = s_.find(head) ? TDM_TRY(matrix(head, V, E)) : m.output_;
        L.head_norm = s_.find(head_norm) ? TDM_TRY(vec(head_norm, E)) : m.output_norm_;
        return {};
    }

    Status load(GlmReference& m) const {
        GlmHparams& hp = m.hp_;
        const std::string embd = gguf_ ? "token_embd.weight" : root_ + "embed_tokens.weight";
        const SourceTensor* e = s_.find(embd);
        if (!e) return Error::format("{}: token embedding '{}' not found", s_.path(), embd);
        if (hp.n_vocab > 0 && e->ne[1] != hp.n_vocab)
            return Error::format("{}: vocab_size {} but the embedding has {} rows", s_.path(), hp.n_vocab, e->ne[1]);
        hp.n_vocab = e->ne[1];
        m.tok_embd_ = TDM_TRY(matrix(embd, hp.n_vocab, hp.n_embd));
        m.output_ = hp.tied ? m.tok_embd_ : TDM_TRY(matrix(gguf_ ? "output.weight" : "lm_head.weight", hp.n_vocab, hp.n_embd));
        m.output_norm_ = TDM_TRY(vec(gguf_ ? "output_norm.weight" : root_ + "norm.weight", hp.n_embd));
        for (int64_t il = 0; il < hp.n_layer + hp.n_nextn; ++il) m.layers_.push_back(TDM_TRY(layer(il)));
        if (hp.n_nextn > 0) TDM_TRY(mtp(m.layers_.back(), m));
        return {};
    }

private:
    const ModelSource& s_;
    const GlmHparams& hp_;
    bool gguf_;
    std::string root_;
};

Result<GlmReference> GlmReference::open(const std::string& path, GlmRefOptions opts) {
    return load(TDM_TRY(ModelSource::open(path)), opts);
}

Result<GlmReference> GlmReference::load(std::unique_ptr<ModelSource> src, GlmRefOptions opts) {
    GlmReference m;
    m.opts_ = opts;
    m.hp_ = src->format() == SourceFormat::gguf ? TDM_TRY(hparams_gguf(*src->gguf())) : TDM_TRY(hparams_hf(*src));
    const GlmHparams& hp = m.hp_;
    if (hp.n_nextn > 1) return Error::format("{}: {} MTP layers; the reference handles one", src->path(), hp.n_nextn);
    const bool bad = hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_nextn < 0 || hp.n_head <= 0 || hp.n_head_kv <= 0 ||
                     hp.n_head % hp.n_head_kv != 0 || hp.head_dim <= 0 || hp.n_ff <= 0 || hp.n_rot <= 0 ||
                     hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim || hp.rms_eps <= 0.0f;
    if (bad)
        return Error::format("{}: inconsistent hyper-parameters (n_embd {}, n_layer {} + {}, heads {}/{}, head_dim {}, "
                             "n_rot {}, n_ff {})",
                             src->path(), hp.n_embd, hp.n_layer, hp.n_nextn, hp.n_head, hp.n_head_kv, hp.head_dim,
                             hp.n_rot, hp.n_ff);
    TDM_TRY(GlmLoader(*src, m.hp_).load(m));
    if (opts.pairing_override) m.hp_.pairing = *opts.pairing_override;
    m.src_ = std::move(src);  // the matrices point into its mappings
    return m;
}

void GlmMtpCache::truncate(int64_t n) {
    TDM_ASSERT(n >= 0 && n <= size());
    const size_t per_k = pos.empty() ? 0 : k.size() / pos.size(), per_v = pos.empty() ? 0 : v.size() / pos.size();
    k.resize(size_t(n) * per_k);
    v.resize(size_t(n) * per_v);
    pos.resize(size_t(n));
}

}  // namespace tdm::ref
