// SPDX-License-Identifier: Apache-2.0
// tests/support/qwen3_reference.cpp: loading (hyper-parameters and weights from GGUF or an HF
// directory, names mapped onto one parameter set) and the forward pass of Qwen3Reference.
#include "support/qwen3_reference.h"

#include "common/quant.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace tdm::ref {
namespace {

// ===== hyper-parameters =========================================================================

Result<Qwen3Hparams> hparams_gguf(const GgufFile& f) {
    const std::string arch = TDM_TRY(f.get_string_or("general.architecture", ""));
    if (arch != "qwen3")
        return Error::format("{}: general.architecture is '{}', the Qwen3 reference needs 'qwen3'", f.path(), arch);
    Qwen3Hparams hp;
    hp.n_embd = int64_t(TDM_TRY(f.get_uint("qwen3.embedding_length")));
    hp.n_layer = int64_t(TDM_TRY(f.get_uint("qwen3.block_count")));
    hp.n_head = int64_t(TDM_TRY(f.get_uint("qwen3.attention.head_count")));
    hp.n_head_kv = int64_t(TDM_TRY(f.get_uint_or("qwen3.attention.head_count_kv", uint64_t(hp.n_head))));
    if (hp.n_head <= 0) return Error::format("{}: qwen3.attention.head_count is 0", f.path());
    hp.head_dim = int64_t(TDM_TRY(f.get_uint_or("qwen3.attention.key_length", uint64_t(hp.n_embd / hp.n_head))));
    const int64_t v_dim = int64_t(TDM_TRY(f.get_uint_or("qwen3.attention.value_length", uint64_t(hp.head_dim))));
    if (v_dim != hp.head_dim)
        return Error::format("{}: key_length {} != value_length {} (Qwen3 uses one head size)", f.path(), hp.head_dim,
                             v_dim);
    hp.n_ff = int64_t(TDM_TRY(f.get_uint("qwen3.feed_forward_length")));
    hp.rope_theta = TDM_TRY(f.get_float_or("qwen3.rope.freq_base", 10000.0));  // llama.cpp's default
    hp.rms_eps = float(TDM_TRY(f.get_float("qwen3.attention.layer_norm_rms_epsilon")));
    hp.tied = f.find_tensor("output.weight") == nullptr;
    return hp;
}

Result<int64_t> json_int(const nlohmann::json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer())
        return Error::format("{}: \"{}\" missing or not an integer", where, key);
    return it->get<int64_t>();
}

Result<Qwen3Hparams> hparams_hf(const ModelSource& src) {
    const nlohmann::json* cfg = src.hf_config();
    if (!cfg) return Error::format("{}: no usable config.json", src.path());
    const std::string where = src.safetensors()->config_path();
    if (src.architecture() != "qwen3")
        return Error::format("{}: model_type is '{}', the Qwen3 reference needs 'qwen3'", where, src.architecture());
    Qwen3Hparams hp;
    hp.n_embd = TDM_TRY(json_int(*cfg, "hidden_size", where));
    hp.n_layer = TDM_TRY(json_int(*cfg, "num_hidden_layers", where));
    hp.n_head = TDM_TRY(json_int(*cfg, "num_attention_heads", where));
    if (hp.n_head <= 0) return Error::format("{}: num_attention_heads is {}", where, hp.n_head);
    hp.n_head_kv = cfg->contains("num_key_value_heads") ? TDM_TRY(json_int(*cfg, "num_key_value_heads", where)) : hp.n_head;
    hp.head_dim = cfg->contains("head_dim") ? TDM_TRY(json_int(*cfg, "head_dim", where)) : hp.n_embd / hp.n_head;
    hp.n_ff = TDM_TRY(json_int(*cfg, "intermediate_size", where));
    auto number = [&](const char* key, double dflt) -> Result<double> {
        auto it = cfg->find(key);
        if (it == cfg->end()) return dflt;
        if (!it->is_number()) return Error::format("{}: \"{}\" is not a number", where, key);
        return it->get<double>();
    };
    hp.rope_theta = TDM_TRY(number("rope_theta", 10000.0));  // transformers' Qwen3Config default
    hp.rms_eps = float(TDM_TRY(number("rms_norm_eps", 1e-6)));
    auto tie = cfg->find("tie_word_embeddings");
    hp.tied = tie != cfg->end() && tie->is_boolean() && tie->get<bool>();  // Qwen3Config default: false
    return hp;
}

// ===== weights ==================================================================================

struct Names {
    const char* gguf;
    const char* hf;
};

std::string tensor_name(const ModelSource& src, Names n, int64_t il) {
    const std::string pattern = src.format() == SourceFormat::gguf ? n.gguf : n.hf;
    const size_t at = pattern.find("{}");
    if (at == std::string::npos) return pattern;
    return pattern.substr(0, at) + std::to_string(il) + pattern.substr(at + 2);
}

Result<const SourceTensor*> find_checked(const ModelSource& src, const std::string& name, int64_t rows, int64_t cols,
                                         bool vector) {
    const SourceTensor* t = src.find(name);
    if (!t) return Error::format("{}: tensor '{}' not found", src.path(), name);
    const DTypeTraits* tr = dtype_traits(t->type);
    if (!tr || (!tr->quantized && t->type != uint32_t(DType::F32) && t->type != uint32_t(DType::F16) &&
                t->type != uint32_t(DType::BF16)))
        return Error::format("{}: tensor '{}' has type {}, which the reference cannot decode", src.path(), name, t->dtype);
    const bool shape_ok = vector ? (t->n_dims == 1 && t->ne[0] == cols)
                                 : (t->n_dims == 2 && t->ne[0] == cols && t->ne[1] == rows);
    if (!shape_ok)
        return Error::format("{}: tensor '{}': expected ne ({}, {}), found ({}, {}) with {} dims", src.path(), name, cols,
                             vector ? 1 : rows, t->ne[0], t->ne[1], t->n_dims);
    return t;
}

}  // namespace

Result<Qwen3Reference> Qwen3Reference::open(const std::string& path, Qwen3RefOptions opts) {
    return load(TDM_TRY(ModelSource::open(path)), opts);
}

Result<Qwen3Reference> Qwen3Reference::load(std::unique_ptr<ModelSource> src, Qwen3RefOptions opts) {
    Qwen3Reference m;
    m.opts_ = opts;
    m.hp_ = src->format() == SourceFormat::gguf ? TDM_TRY(hparams_gguf(*src->gguf())) : TDM_TRY(hparams_hf(*src));
    Qwen3Hparams& hp = m.hp_;
    if (hp.n_embd <= 0 || hp.n_layer <= 0 || hp.n_head_kv <= 0 || hp.head_dim <= 0 || hp.head_dim % 2 != 0 ||
        hp.n_ff <= 0 || hp.n_head % hp.n_head_kv != 0)
        return Error::format("{}: inconsistent hyper-parameters (n_embd {}, n_layer {}, n_head {}, n_head_kv {}, "
                             "head_dim {}, n_ff {})",
                             src->path(), hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff);

    const ModelSource& s = *src;
    auto matrix = [&](Names n, int64_t il, int64_t rows, int64_t cols) -> Result<Matrix> {
        const SourceTensor* t = TDM_TRY(find_checked(s, tensor_name(s, n, il), rows, cols, false));
        return Matrix{DType(t->type), std::span<const uint8_t>(t->data, t->nbytes), rows, cols};
    };
    auto vector = [&](Names n, int64_t il, int64_t cols) -> Result<Floats> {
        const SourceTensor* t = TDM_TRY(find_checked(s, tensor_name(s, n, il), 1, cols, true));
        Floats out(static_cast<size_t>(cols));
        dequantize_row(DType(t->type), t->data, out.data(), cols);
        return out;
    };

    const Names embd{"token_embd.weight", "model.embed_tokens.weight"};
    const SourceTensor* e = s.find(tensor_name(s, embd, 0));
    if (!e) return Error::format("{}: token embedding '{}' not found", s.path(), tensor_name(s, embd, 0));
    hp.n_vocab = e->ne[1];
    m.tok_embd_ = TDM_TRY(matrix(embd, 0, hp.n_vocab, hp.n_embd));
    m.output_ = hp.tied ? m.tok_embd_ : TDM_TRY(matrix({"output.weight", "lm_head.weight"}, 0, hp.n_vocab, hp.n_embd));
    m.output_norm_ = TDM_TRY(vector({"output_norm.weight", "model.norm.weight"}, 0, hp.n_embd));

    const int64_t q_rows = hp.n_head * hp.head_dim, kv_rows = hp.n_head_kv * hp.head_dim;
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        Layer L;
        L.attn_norm = TDM_TRY(vector({"blk.{}.attn_norm.weight", "model.layers.{}.input_layernorm.weight"}, il, hp.n_embd));
        L.q_norm = TDM_TRY(vector({"blk.{}.attn_q_norm.weight", "model.layers.{}.self_attn.q_norm.weight"}, il, hp.head_dim));
        L.k_norm = TDM_TRY(vector({"blk.{}.attn_k_norm.weight", "model.layers.{}.self_attn.k_norm.weight"}, il, hp.head_dim));
        L.ffn_norm = TDM_TRY(
            vector({"blk.{}.ffn_norm.weight", "model.layers.{}.post_attention_layernorm.weight"}, il, hp.n_embd));
        L.wq = TDM_TRY(matrix({"blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight"}, il, q_rows, hp.n_embd));
        L.wk = TDM_TRY(matrix({"blk.{}.attn_k.weight", "model.layers.{}.self_attn.k_proj.weight"}, il, kv_rows, hp.n_embd));
        L.wv = TDM_TRY(matrix({"blk.{}.attn_v.weight", "model.layers.{}.self_attn.v_proj.weight"}, il, kv_rows, hp.n_embd));
        L.wo = TDM_TRY(
            matrix({"blk.{}.attn_output.weight", "model.layers.{}.self_attn.o_proj.weight"}, il, hp.n_embd, q_rows));
        L.gate = TDM_TRY(matrix({"blk.{}.ffn_gate.weight", "model.layers.{}.mlp.gate_proj.weight"}, il, hp.n_ff, hp.n_embd));
        L.up = TDM_TRY(matrix({"blk.{}.ffn_up.weight", "model.layers.{}.mlp.up_proj.weight"}, il, hp.n_ff, hp.n_embd));
        L.down = TDM_TRY(matrix({"blk.{}.ffn_down.weight", "model.layers.{}.mlp.down_proj.weight"}, il, hp.n_embd, hp.n_ff));
        m.layers_.push_back(std::move(L));
    }
    m.src_ = std::move(src);  // the matrices point into its mappings
    return m;
}

// ===== forward ==================================================================================

Floats Qwen3Reference::forward(std::span<const int32_t> tokens, int64_t pos0, Qwen3Trace* trace) const {
    return run(tokens, pos0, nullptr, trace);
}

Floats Qwen3Reference::forward(std::span<const int32_t> tokens, Qwen3Cache& cache, Qwen3Trace* trace) const {
    return run(tokens, cache.n_past, &cache, trace);
}

Floats Qwen3Reference::run(std::span<const int32_t> tokens, int64_t pos0, Qwen3Cache* cache, Qwen3Trace* trace) const {
    const Qwen3Hparams& hp = hp_;
    const int64_t n = int64_t(tokens.size());
    const int64_t hd = hp.head_dim;
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp.n_vocab, "token id out of range");
    if (cache && cache->k.empty()) {
        cache->k.resize(size_t(hp.n_layer));
        cache->v.resize(size_t(hp.n_layer));
    }
    auto name = [&](const char* what, Floats value, int64_t il = -1) {
        if (trace) (*trace)[il < 0 ? std::string(what) : std::string(what) + "-" + std::to_string(il)] = std::move(value);
    };
    auto mm = [](std::span<const float> x, const Matrix& w) { return matmul(x, w.type, w.bytes, w.rows, w.cols); };

    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(pos0 + i);
    RopeParams rope_p;
    rope_p.n_rot = hd;  // Qwen3 rotates the whole head, NeoX pairing (dims i and i + hd/2)
    rope_p.theta = hp.rope_theta;
    rope_p.pairing = RopePairing::NeoX;
    AttnParams attn_p;
    attn_p.n_head = hp.n_head;
    attn_p.n_head_kv = hp.n_head_kv;
    attn_p.head_dim = hd;
    attn_p.head_dim_v = hd;
    attn_p.scale = float(1.0 / std::sqrt(double(hd)));

    Floats x = get_rows(tok_embd_.type, tok_embd_.bytes, hp.n_embd, tokens);  // [n][n_embd]
    name("inp_embd", x);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const Layer& L = layers_[size_t(il)];
        // Attention block.
        Floats h = rms_norm(x, hp.n_embd, hp.rms_eps, NormWeight::Plain, L.attn_norm);
        name("attn_norm", h, il);
        Floats q = mm(h, L.wq);  // [n][n_head * hd]
        Floats k = mm(h, L.wk);  // [n][n_head_kv * hd]
        Floats v = mm(h, L.wv);  // [n][n_head_kv * hd]
        // Per-head RMSNorm: every hd-wide slice is a row of its own.
        q = rms_norm(q, hd, hp.rms_eps, NormWeight::Plain, L.q_norm);
        k = rms_norm(k, hd, hp.rms_eps, NormWeight::Plain, L.k_norm);
        q = rope(q, n, hp.n_head, hd, pos, rope_p);
        k = rope(k, n, hp.n_head_kv, hd, pos, rope_p);
        if (opts_.f16_kv) {
            k = cast_round(k, DType::F16);
            v = cast_round(v, DType::F16);
        }
        name("Qcur", q, il);
        name("Kcur", k, il);
        name("Vcur", v, il);

        // Keys: the cache's (positions 0 .. n_past - 1) followed by this call's.
        std::vector<int32_t> k_pos;
        Floats a;
        if (cache) {
            Floats& ck = cache->k[size_t(il)];
            Floats& cv = cache->v[size_t(il)];
            ck.insert(ck.end(), k.begin(), k.end());
            cv.insert(cv.end(), v.begin(), v.end());
            for (int64_t j = 0; j < cache->n_past + n; ++j) k_pos.push_back(int32_t(j));
            a = attention(q, pos, ck, cv, k_pos, attn_p);
        } else {
            a = attention(q, pos, k, v, pos, attn_p);
        }
        name("kqv_out", a, il);
        x = add(x, mm(a, L.wo), hp.n_embd);
        name("ffn_inp", x, il);

        // Feed-forward block: down(silu(gate(h)) * up(h)).
        h = rms_norm(x, hp.n_embd, hp.rms_eps, NormWeight::Plain, L.ffn_norm);
        Floats f = mm(swiglu(mm(h, L.gate), mm(h, L.up)), L.down);
        name("ffn_out", f, il);
        x = add(x, f, hp.n_embd);
        name("l_out", x, il);
    }
    if (cache) cache->n_past += n;

    Floats xn = rms_norm(x, hp.n_embd, hp.rms_eps, NormWeight::Plain, output_norm_);
    name("result_norm", xn);
    Floats logits = mm(xn, output_);  // [n][n_vocab]
    if (trace) name("result_output", logits);
    return logits;
}

std::vector<int32_t> Qwen3Reference::generate(std::span<const int32_t> prompt, int n) const {
    TDM_ASSERT_MSG(!prompt.empty(), "generate needs a prompt");
    std::vector<int32_t> out;
    Qwen3Cache cache;
    Floats logits = forward(prompt, cache);
    while (int(out.size()) < n) {
        // Only the last row predicts the next token.
        const std::span<const float> last(logits.data() + logits.size() - size_t(hp_.n_vocab), size_t(hp_.n_vocab));
        const int32_t next = argmax(last, hp_.n_vocab)[0];
        out.push_back(next);
        if (int(out.size()) == n) break;
        const int32_t one[1] = {next};
        logits = forward(one, cache);
    }
    return out;
}

}  // namespace tdm::ref
