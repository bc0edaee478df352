// SPDX-License-Identifier: Apache-2.0
// tests/support/qwen35_reference_load.cpp: loading of Qwen35Reference: hyper-parameters from GGUF
// metadata (docs/formats/gguf.md A.11, docs/models/qwen35.md §3) or from config.json's text_config, and the weights
// under either naming, each with its own convention (docs/models/qwen35.md §3, docs/models/common.md §1 and §6):
//   GGUF  blk.N.*, norms hold 1 + w, GDN value heads tiled, ssm_a = -exp(A_log), conv {K, C};
//   HF    model.language_model.layers.N.* / mtp.*, norms hold w, heads grouped, A_log, conv [C,1,K],
//         experts per expert or fused (gate_up_proj gate first).
#include "support/qwen35_reference.h"

#include "common/quant.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

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

std::vector<bool> interval_pattern(int64_t n_layer, int64_t interval) {
    std::vector<bool> r(static_cast<size_t>(n_layer));
    for (int64_t il = 0; il < n_layer; ++il) r[size_t(il)] = (il + 1) % interval != 0;
    return r;
}

Result<Qwen35Hparams> hparams_gguf(const GgufFile& f) {
    const std::string arch = TDM_TRY(f.get_string_or("general.architecture", ""));
    if (arch != "qwen35" && arch != "qwen35moe")
        return Error::format("{}: general.architecture is '{}', the Qwen3.5 reference needs qwen35 or qwen35moe",
                             f.path(), arch);
    auto k = [&](const char* name) { return arch + "." + name; };
    Qwen35Hparams hp;
    const int64_t n_all = int64_t(TDM_TRY(f.get_uint(k("block_count"))));
    const int64_t n_nextn = int64_t(TDM_TRY(f.get_uint_or(k("nextn_predict_layers"), 0)));
    if (n_nextn > 1) return Error::format("{}: {} MTP layers; the reference handles one", f.path(), n_nextn);
    hp.n_layer = n_all - n_nextn;
    hp.has_mtp = n_nextn == 1;
    hp.n_embd = int64_t(TDM_TRY(f.get_uint(k("embedding_length"))));
    hp.n_head = int64_t(TDM_TRY(f.get_uint(k("attention.head_count"))));
    hp.n_head_kv = int64_t(TDM_TRY(f.get_uint_or(k("attention.head_count_kv"), uint64_t(hp.n_head))));
    hp.head_dim = int64_t(TDM_TRY(f.get_uint(k("attention.key_length"))));
    if (int64_t(TDM_TRY(f.get_uint_or(k("attention.value_length"), uint64_t(hp.head_dim)))) != hp.head_dim)
        return Error::format("{}: key_length and value_length differ", f.path());
    hp.n_rot = int64_t(TDM_TRY(f.get_uint_or(k("rope.dimension_count"), uint64_t(hp.head_dim))));
    const std::vector<int64_t> sec = TDM_TRY(f.get_int_array(k("rope.dimension_sections")));  // required by llama.cpp
    if (sec.size() != 4) return Error::format("{}: rope.dimension_sections has {} entries, expected 4", f.path(), sec.size());
    for (size_t i = 0; i < 4; ++i) hp.mrope_sections[i] = int(sec[i]);
    hp.rope_theta = TDM_TRY(f.get_float_or(k("rope.freq_base"), 10000.0));
    hp.rms_eps = float(TDM_TRY(f.get_float(k("attention.layer_norm_rms_epsilon"))));
    hp.n_expert = int64_t(TDM_TRY(f.get_uint_or(k("expert_count"), 0)));
    if (arch == "qwen35moe" && hp.n_expert == 0) return Error::format("{}: qwen35moe without expert_count", f.path());
    if (hp.n_expert > 0) {
        hp.n_expert_used = int64_t(TDM_TRY(f.get_uint(k("expert_used_count"))));
        hp.n_ff_exp = int64_t(TDM_TRY(f.get_uint(k("expert_feed_forward_length"))));
        hp.n_ff_shexp = int64_t(TDM_TRY(f.get_uint(k("expert_shared_feed_forward_length"))));
    } else {
        hp.n_ff = int64_t(TDM_TRY(f.get_uint(k("feed_forward_length"))));
    }
    hp.gdn_conv_kernel = int64_t(TDM_TRY(f.get_uint(k("ssm.conv_kernel"))));
    hp.gdn_d_k = int64_t(TDM_TRY(f.get_uint(k("ssm.state_size"))));
    hp.gdn_n_k_heads = int64_t(TDM_TRY(f.get_uint(k("ssm.group_count"))));
    hp.gdn_n_v_heads = int64_t(TDM_TRY(f.get_uint(k("ssm.time_step_rank"))));
    const int64_t inner = int64_t(TDM_TRY(f.get_uint(k("ssm.inner_size"))));
    if (hp.gdn_n_v_heads <= 0 || inner % hp.gdn_n_v_heads != 0)
        return Error::format("{}: ssm.inner_size {} is not a multiple of ssm.time_step_rank {}", f.path(), inner,
                             hp.gdn_n_v_heads);
    hp.gdn_d_v = inner / hp.gdn_n_v_heads;
    // Layer kinds: an explicit per-layer list wins over the interval (llama.cpp's order).
    if (const GgufValue* v = f.find(k("attention.recurrent_layers")); v && v->type == GgufType::ARRAY) {
        if (int64_t(v->count) < hp.n_layer || gguf_scalar_size(v->elem_type) == 0)
            return Error::format("{}: attention.recurrent_layers is not a per-layer flag array", f.path());
        const uint32_t step = gguf_scalar_size(v->elem_type);
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.recurrent.push_back(v->data[size_t(il) * step] != 0);
    } else {
        const int64_t interval = int64_t(TDM_TRY(f.get_uint_or(k("full_attention_interval"), 4)));
        if (interval <= 0) return Error::format("{}: full_attention_interval is 0", f.path());
        hp.recurrent = interval_pattern(hp.n_layer, interval);
    }
    hp.tied = f.find_tensor("output.weight") == nullptr;
    hp.head_order = GdnHeadOrder::tiled;
    hp.one_plus_norms = false;
    return hp;
}

Result<Qwen35Hparams> hparams_hf(const ModelSource& src) {
    const nlohmann::json* top = src.hf_config();
    if (!top) return Error::format("{}: no usable config.json", src.path());
    const std::string where = src.safetensors()->config_path();
    const std::string type = src.architecture();
    if (type != "qwen3_5" && type != "qwen3_5_moe" && type != "qwen3_5_text" && type != "qwen3_5_moe_text")
        return Error::format("{}: model_type is '{}', the Qwen3.5 reference needs qwen3_5 or qwen3_5_moe", where, type);
    // The multimodal wrappers nest the language model's hyper-parameters in text_config.
    const nlohmann::json& c = top->contains("text_config") ? (*top)["text_config"] : *top;
    Qwen35Hparams hp;
    hp.n_embd = TDM_TRY(json_int(c, "hidden_size", where));
    hp.n_layer = TDM_TRY(json_int(c, "num_hidden_layers", where));
    hp.n_head = TDM_TRY(json_int(c, "num_attention_heads", where));
    hp.n_head_kv = TDM_TRY(json_int_or(c, "num_key_value_heads", hp.n_head, where));
    hp.head_dim = TDM_TRY(json_int_or(c, "head_dim", 256, where));
    const nlohmann::json rope = c.contains("rope_parameters") ? c["rope_parameters"] : c;
    const double factor = TDM_TRY(json_number_or(rope, "partial_rotary_factor", 0.25, where));
    hp.n_rot = int64_t(double(hp.head_dim) * factor);
    hp.rope_theta = TDM_TRY(json_number_or(rope, "rope_theta", 10000.0, where));
    if (auto it = rope.find("mrope_section"); it != rope.end()) {
        if (!it->is_array() || it->size() > 4) return Error::format("{}: mrope_section is not a list of 3", where);
        for (size_t i = 0; i < it->size(); ++i) hp.mrope_sections[i] = (*it)[i].get<int>();
    } else {
        hp.mrope_sections = {11, 11, 10, 0};  // transformers' default, written by the converter too
    }
    hp.rms_eps = float(TDM_TRY(json_number_or(c, "rms_norm_eps", 1e-6, where)));
    hp.n_expert = TDM_TRY(json_int_or(c, "num_experts", 0, where));
    if ((type == "qwen3_5_moe" || type == "qwen3_5_moe_text") && hp.n_expert == 0)
        return Error::format("{}: MoE model_type without num_experts", where);
    if (hp.n_expert > 0) {
        hp.n_expert_used = TDM_TRY(json_int(c, "num_experts_per_tok", where));
        hp.n_ff_exp = TDM_TRY(json_int(c, "moe_intermediate_size", where));
        hp.n_ff_shexp = TDM_TRY(json_int(c, "shared_expert_intermediate_size", where));
    } else {
        hp.n_ff = TDM_TRY(json_int(c, "intermediate_size", where));
    }
    hp.gdn_n_k_heads = TDM_TRY(json_int(c, "linear_num_key_heads", where));
    hp.gdn_n_v_heads = TDM_TRY(json_int(c, "linear_num_value_heads", where));
    hp.gdn_d_k = TDM_TRY(json_int(c, "linear_key_head_dim", where));
    hp.gdn_d_v = TDM_TRY(json_int(c, "linear_value_head_dim", where));
    hp.gdn_conv_kernel = TDM_TRY(json_int_or(c, "linear_conv_kernel_dim", 4, where));
    if (auto it = c.find("layer_types"); it != c.end() && it->is_array()) {
        if (int64_t(it->size()) != hp.n_layer) return Error::format("{}: layer_types has {} entries", where, it->size());
        for (const auto& t : *it) hp.recurrent.push_back(t == "linear_attention");
    } else {
        hp.recurrent = interval_pattern(hp.n_layer, TDM_TRY(json_int_or(c, "full_attention_interval", 4, where)));
    }
    const int64_t n_mtp = TDM_TRY(json_int_or(c, "mtp_num_hidden_layers", 0, where));
    if (n_mtp > 1) return Error::format("{}: {} MTP layers; the reference handles one", where, n_mtp);
    hp.has_mtp = n_mtp == 1;
    // tie_word_embeddings: the text config's, else the wrapper's; transformers' default is false.
    const nlohmann::json* tie = c.contains("tie_word_embeddings") ? &c["tie_word_embeddings"]
                                : top->contains("tie_word_embeddings") ? &(*top)["tie_word_embeddings"]
                                                                       : nullptr;
    hp.tied = tie && tie->is_boolean() && tie->get<bool>();
    hp.head_order = GdnHeadOrder::grouped;
    hp.one_plus_norms = true;
    return hp;
}

}  // namespace

// Maps roles onto the file's tensor names and checks every shape (friend of Qwen35Reference).
class Qwen35Loader {
public:
    using Matrix = Qwen35Reference::Matrix;
    using Norm = Qwen35Reference::Norm;
    using Layer = Qwen35Reference::Layer;

    Qwen35Loader(const ModelSource& s, const Qwen35Hparams& hp) : s_(s), hp_(hp), gguf_(s.format() == SourceFormat::gguf) {}

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
    // A [rows][cols] matrix (ne {cols, rows}).
    Result<Matrix> matrix(const std::string& name, int64_t rows, int64_t cols) const {
        const SourceTensor* t = TDM_TRY(tensor(name, {cols, rows}));
        return Matrix{DType(t->type), std::span<const uint8_t>(t->data, t->nbytes), rows, cols};
    }
    Result<Floats> floats(const std::string& name, std::vector<int64_t> ne) const {
        const SourceTensor* t = TDM_TRY(tensor(name, std::move(ne)));
        int64_t n = 1;
        for (int i = 0; i < t->n_dims; ++i) n *= t->ne[i];
        Floats out(static_cast<size_t>(n));
        dequantize_row(DType(t->type), t->data, out.data(), n);
        return out;
    }
    Result<Norm> norm(const std::string& name, int64_t n) const {
        return Norm{TDM_TRY(floats(name, {n})), hp_.one_plus_norms};
    }
    // Rows [r0, r0 + rows) of a [.][cols] matrix stored in tensor t (for experts).
    static Matrix slice(const SourceTensor& t, int64_t r0, int64_t rows, int64_t cols) {
        const uint64_t rb = row_bytes(DType(t.type), uint64_t(cols));
        return Matrix{DType(t.type), std::span<const uint8_t>(t.data + uint64_t(r0) * rb, uint64_t(rows) * rb), rows, cols};
    }

    // Layer-name prefixes: blk.N. in GGUF; model.language_model.layers.N. or mtp.layers.0. in HF.
    std::string prefix(int64_t il, bool mtp) const {
        if (gguf_) return "blk." + std::to_string(il) + ".";
        return mtp ? "mtp.layers.0." : hf_root_ + "layers." + std::to_string(il) + ".";
    }
    std::string pick(const char* gguf, const char* hf) const { return gguf_ ? gguf : hf; }

    Status attention(Layer& L, const std::string& p) const {
        const int64_t E = hp_.n_embd, D = hp_.head_dim, q = hp_.n_head * D, kv = hp_.n_head_kv * D;
        L.wq = TDM_TRY(matrix(p + pick("attn_q.weight", "self_attn.q_proj.weight"), 2 * q, E));
        L.wk = TDM_TRY(matrix(p + pick("attn_k.weight", "self_attn.k_proj.weight"), kv, E));
        L.wv = TDM_TRY(matrix(p + pick("attn_v.weight", "self_attn.v_proj.weight"), kv, E));
        L.wo = TDM_TRY(matrix(p + pick("attn_output.weight", "self_attn.o_proj.weight"), E, q));
        L.q_norm = TDM_TRY(norm(p + pick("attn_q_norm.weight", "self_attn.q_norm.weight"), D));
        L.k_norm = TDM_TRY(norm(p + pick("attn_k_norm.weight", "self_attn.k_norm.weight"), D));
        return {};
    }

    Status gated_delta_net(Layer& L, const std::string& p) const {
        const int64_t E = hp_.n_embd, Nv = hp_.gdn_n_v_heads, dv = hp_.gdn_d_v, K = hp_.gdn_conv_kernel;
        const int64_t vd = Nv * dv, cd = 2 * hp_.gdn_n_k_heads * hp_.gdn_d_k + vd;
        const std::string a = gguf_ ? p : p + "linear_attn.";
        L.qkv = TDM_TRY(matrix(a + pick("attn_qkv.weight", "in_proj_qkv.weight"), cd, E));
        L.gate_z = TDM_TRY(matrix(a + pick("attn_gate.weight", "in_proj_z.weight"), vd, E));
        L.beta = TDM_TRY(matrix(a + pick("ssm_beta.weight", "in_proj_b.weight"), Nv, E));
        L.alpha = TDM_TRY(matrix(a + pick("ssm_alpha.weight", "in_proj_a.weight"), Nv, E));
        L.out = TDM_TRY(matrix(a + pick("ssm_out.weight", "out_proj.weight"), E, vd));
        L.gdn.norm = TDM_TRY(floats(a + pick("ssm_norm.weight", "norm.weight"), {dv}));  // plain weight in both
        L.gdn.dt_bias = TDM_TRY(floats(a + pick("ssm_dt.bias", "dt_bias"), {Nv}));
        if (gguf_) {
            L.gdn.a = TDM_TRY(floats(a + "ssm_a", {Nv}));  // -exp(A_log), precomputed by the converter
            L.gdn.conv = TDM_TRY(floats(a + "ssm_conv1d.weight", {K, cd}));
        } else {
            // HF: A = -exp(A_log) in f32, as Qwen3_5GatedDeltaNet computes it.
            L.gdn.a = TDM_TRY(floats(a + "A_log", {Nv}));
            for (float& x : L.gdn.a) x = -std::exp(x);
            L.gdn.conv = TDM_TRY(floats(a + "conv1d.weight", {K, 1, cd}));  // [C, 1, K] in HF order
        }
        return {};
    }

    Status experts(Layer& L, const std::string& p, bool mtp) const {
        const int64_t E = hp_.n_embd, X = hp_.n_expert, I = hp_.n_ff_exp;
        L.experts.resize(size_t(X));
        if (gguf_) {
            const SourceTensor* g = TDM_TRY(tensor(p + "ffn_gate_exps.weight", {E, I, X}));
            const SourceTensor* u = TDM_TRY(tensor(p + "ffn_up_exps.weight", {E, I, X}));
            const SourceTensor* d = TDM_TRY(tensor(p + "ffn_down_exps.weight", {I, E, X}));
            for (int64_t e = 0; e < X; ++e)
                L.experts[size_t(e)] = {slice(*g, e * I, I, E), slice(*u, e * I, I, E), slice(*d, e * E, E, I)};
            return {};
        }
        const std::string m = p + "mlp.experts.";
        if (!mtp && s_.find(m + "gate_up_proj")) {
            // Fused (transformers v5): gate_up_proj [X, 2I, E], gate rows first; down_proj [X, E, I].
            const SourceTensor* gu = TDM_TRY(tensor(m + "gate_up_proj", {E, 2 * I, X}));
            const SourceTensor* d = TDM_TRY(tensor(m + "down_proj", {I, E, X}));
            for (int64_t e = 0; e < X; ++e)
                L.experts[size_t(e)] = {slice(*gu, e * 2 * I, I, E), slice(*gu, e * 2 * I + I, I, E), slice(*d, e * E, E, I)};
            return {};
        }
        for (int64_t e = 0; e < X; ++e) {
            const std::string x = m + std::to_string(e) + ".";
            L.experts[size_t(e)] = {TDM_TRY(matrix(x + "gate_proj.weight", I, E)), TDM_TRY(matrix(x + "up_proj.weight", I, E)),
                                    TDM_TRY(matrix(x + "down_proj.weight", E, I))};
        }
        return {};
    }

    Status ffn(Layer& L, const std::string& p, bool mtp) const {
        const int64_t E = hp_.n_embd;
        if (hp_.n_expert == 0) {
            L.ffn_gate = TDM_TRY(matrix(p + pick("ffn_gate.weight", "mlp.gate_proj.weight"), hp_.n_ff, E));
            L.ffn_up = TDM_TRY(matrix(p + pick("ffn_up.weight", "mlp.up_proj.weight"), hp_.n_ff, E));
            L.ffn_down = TDM_TRY(matrix(p + pick("ffn_down.weight", "mlp.down_proj.weight"), E, hp_.n_ff));
            return {};
        }
        const int64_t S = hp_.n_ff_shexp;
        L.router = TDM_TRY(matrix(p + pick("ffn_gate_inp.weight", "mlp.gate.weight"), hp_.n_expert, E));
        TDM_TRY(experts(L, p, mtp));
        L.sh_gate = TDM_TRY(matrix(p + pick("ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"), S, E));
        L.sh_up = TDM_TRY(matrix(p + pick("ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"), S, E));
        L.sh_down = TDM_TRY(matrix(p + pick("ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"), E, S));
        L.sh_router = TDM_TRY(matrix(p + pick("ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"), 1, E));
        return {};
    }

    Result<Layer> layer(int64_t il, bool recurrent, bool mtp) const {
        const int64_t E = hp_.n_embd;
        const std::string p = prefix(il, mtp);
        Layer L;
        L.recurrent = recurrent;
        L.attn_norm = TDM_TRY(norm(p + pick("attn_norm.weight", "input_layernorm.weight"), E));
        L.post_norm = TDM_TRY(norm(p + pick("post_attention_norm.weight", "post_attention_layernorm.weight"), E));
        if (recurrent)
            TDM_TRY(gated_delta_net(L, p));
        else
            TDM_TRY(attention(L, p));
        TDM_TRY(ffn(L, p, mtp));
        if (mtp) {
            const std::string n = gguf_ ? p + "nextn." : "mtp.";
            L.eh_proj = TDM_TRY(matrix(n + pick("eh_proj.weight", "fc.weight"), E, 2 * E));
            L.enorm = TDM_TRY(norm(n + pick("enorm.weight", "pre_fc_norm_embedding.weight"), E));
            L.hnorm = TDM_TRY(norm(n + pick("hnorm.weight", "pre_fc_norm_hidden.weight"), E));
            // llama.cpp treats shared_head_norm as optional and falls back to output_norm.
            const std::string hn = n + pick("shared_head_norm.weight", "norm.weight");
            if (!gguf_ || s_.find(hn)) L.head_norm = TDM_TRY(norm(hn, E));
        }
        return L;
    }

    Status load(Qwen35Reference& m) {
        Qwen35Hparams& hp = m.hp_;
        if (!gguf_) hf_root_ = s_.find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
        const std::string embd = gguf_ ? "token_embd.weight" : hf_root_ + "embed_tokens.weight";
        const SourceTensor* e = s_.find(embd);
        if (!e) return Error::format("{}: token embedding '{}' not found", s_.path(), embd);
        hp.n_vocab = e->ne[1];
        m.tok_embd_ = TDM_TRY(matrix(embd, hp.n_vocab, hp.n_embd));
        m.output_ = hp.tied ? m.tok_embd_ : TDM_TRY(matrix(gguf_ ? "output.weight" : "lm_head.weight", hp.n_vocab, hp.n_embd));
        m.output_norm_ = TDM_TRY(norm(gguf_ ? "output_norm.weight" : hf_root_ + "norm.weight", hp.n_embd));
        for (int64_t il = 0; il < hp.n_layer; ++il) m.layers_.push_back(TDM_TRY(layer(il, hp.recurrent[size_t(il)], false)));
        if (hp.has_mtp) {
            m.layers_.push_back(TDM_TRY(layer(hp.n_layer, /*recurrent=*/false, /*mtp=*/true)));
            if (m.layers_.back().head_norm.w.empty()) m.layers_.back().head_norm = m.output_norm_;
        }
        return {};
    }

private:
    const ModelSource& s_;
    const Qwen35Hparams& hp_;
    bool gguf_;
    std::string hf_root_;
};

Result<Qwen35Reference> Qwen35Reference::open(const std::string& path, Qwen35RefOptions opts) {
    return load(TDM_TRY(ModelSource::open(path)), opts);
}

Result<Qwen35Reference> Qwen35Reference::load(std::unique_ptr<ModelSource> src, Qwen35RefOptions opts) {
    Qwen35Reference m;
    m.opts_ = opts;
    m.hp_ = src->format() == SourceFormat::gguf ? TDM_TRY(hparams_gguf(*src->gguf())) : TDM_TRY(hparams_hf(*src));
    const Qwen35Hparams& hp = m.hp_;
    const bool bad = hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_head <= 0 || hp.n_head_kv <= 0 ||
                     hp.n_head % hp.n_head_kv != 0 || hp.head_dim <= 0 || hp.n_rot <= 0 || hp.n_rot % 2 != 0 ||
                     hp.n_rot > hp.head_dim || hp.gdn_n_k_heads <= 0 || hp.gdn_n_v_heads % hp.gdn_n_k_heads != 0 ||
                     hp.gdn_d_k <= 0 || hp.gdn_d_v <= 0 || hp.gdn_conv_kernel <= 0 ||
                     (hp.n_expert > 0 ? hp.n_expert_used <= 0 || hp.n_expert_used > hp.n_expert : hp.n_ff <= 0);
    if (bad)
        return Error::format("{}: inconsistent hyper-parameters (n_embd {}, n_layer {}, heads {}/{}, head_dim {}, n_rot {}, "
                             "GDN heads {}/{}, experts {}/{})",
                             src->path(), hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_rot,
                             hp.gdn_n_k_heads, hp.gdn_n_v_heads, hp.n_expert_used, hp.n_expert);
    TDM_TRY(Qwen35Loader(*src, m.hp_).load(m));
    if (opts.head_order_override) m.hp_.head_order = *opts.head_order_override;
    m.src_ = std::move(src);  // the matrices point into its mappings
    return m;
}

void Qwen35MtpCache::truncate(int64_t n) {
    TDM_ASSERT(n >= 0 && n <= size());
    const size_t per = pos.empty() ? 0 : k.size() / pos.size();
    k.resize(size_t(n) * per);
    v.resize(size_t(n) * (pos.empty() ? 0 : v.size() / pos.size()));
    pos.resize(size_t(n));
}

}  // namespace tdm::ref
