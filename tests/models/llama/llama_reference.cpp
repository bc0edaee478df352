// SPDX-License-Identifier: Apache-2.0
// tests/models/llama/llama_reference.cpp: the Llama reference forward (llama_reference.h).
#include "llama_reference.h"

#include "common/fp16.h"
#include "common/quant.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace tdm::test {
namespace {

Result<std::vector<float>> ref_tensor(const ModelSource& src, const std::string& name, int64_t elements) {
    const SourceTensor* t = src.find(name);
    if (!t) return Error::format("{}: no tensor {}", src.path(), name);
    const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    if (n != elements) return Error::format("{}: {} has {} elements, expected {}", src.path(), name, n, elements);
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t->type), t->data, out.data(), n);
    return out;
}

// HF _compute_llama3_parameters: inv_freq / divisor per pair, divisor 1 for wavelengths
// under original / high_freq_factor, `factor` over original / low_freq_factor, and a
// smooth mix between.
std::vector<double> llama3_divisors(double theta, int64_t dim, double factor, double low, double high, double original) {
    std::vector<double> d(size_t(dim / 2));
    for (int64_t i = 0; i < dim / 2; ++i) {
        const double inv_freq = 1.0 / std::pow(theta, double(2 * i) / double(dim));
        const double wavelen = 2.0 * M_PI / inv_freq;
        if (wavelen < original / high)
            d[size_t(i)] = 1.0;
        else if (wavelen > original / low)
            d[size_t(i)] = factor;
        else {
            const double smooth = (original / wavelen - low) / (high - low);
            // new inv_freq = (1 - smooth) inv_freq / factor + smooth inv_freq
            d[size_t(i)] = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
    }
    return d;
}

Result<LlamaRefHparams> read_llama_hparams(const ModelSource& src) {
    LlamaRefHparams hp;
    if (const GgufFile* g = src.gguf()) {
        if (src.architecture() != "llama") return Error::format("{}: not a llama GGUF", src.path());
        hp.n_embd = int64_t(TDM_TRY(g->get_uint("llama.embedding_length")));
        hp.n_layer = int64_t(TDM_TRY(g->get_uint("llama.block_count")));
        hp.n_head = int64_t(TDM_TRY(g->get_uint("llama.attention.head_count")));
        hp.n_head_kv = int64_t(TDM_TRY(g->get_uint_or("llama.attention.head_count_kv", uint64_t(hp.n_head))));
        hp.head_dim = int64_t(TDM_TRY(g->get_uint_or("llama.attention.key_length", uint64_t(hp.n_embd / hp.n_head))));
        hp.n_ff = int64_t(TDM_TRY(g->get_uint("llama.feed_forward_length")));
        hp.rope_theta = TDM_TRY(g->get_float_or("llama.rope.freq_base", 10000.0));
        hp.rms_eps = TDM_TRY(g->get_float_or("llama.attention.layer_norm_rms_epsilon", 1e-5));
        const SourceTensor* e = src.find("token_embd.weight");
        if (!e) return Error::format("{}: no token_embd.weight", src.path());
        hp.n_vocab = e->ne[1];
        hp.tied = !src.find("output.weight");
        hp.rope_divisor.assign(size_t(hp.head_dim / 2), 1.0);
        if (src.find("rope_freqs.weight")) {
            const std::vector<float> f = TDM_TRY(ref_tensor(src, "rope_freqs.weight", hp.head_dim / 2));
            for (size_t i = 0; i < f.size(); ++i) hp.rope_divisor[i] = f[i];
        }
        return hp;
    }
    const nlohmann::json* c = src.hf_config();
    if (!c || c->value("model_type", "") != "llama") return Error::format("{}: not an HF llama directory", src.path());
    hp.hf = true;
    hp.n_embd = c->at("hidden_size").get<int64_t>();
    hp.n_layer = c->at("num_hidden_layers").get<int64_t>();
    hp.n_head = c->at("num_attention_heads").get<int64_t>();
    hp.n_head_kv = c->value("num_key_value_heads", hp.n_head);
    hp.head_dim = c->value("head_dim", hp.n_embd / hp.n_head);
    hp.n_ff = c->at("intermediate_size").get<int64_t>();
    hp.n_vocab = c->at("vocab_size").get<int64_t>();
    hp.rope_theta = c->value("rope_theta", 10000.0);
    hp.rms_eps = c->value("rms_norm_eps", 1e-5);
    hp.tied = c->value("tie_word_embeddings", false);
    hp.rope_divisor.assign(size_t(hp.head_dim / 2), 1.0);
    if (c->contains("rope_scaling") && c->at("rope_scaling").is_object()) {
        const nlohmann::json& r = c->at("rope_scaling");
        if (r.value("rope_type", "") != "llama3") return Error::format("{}: rope_scaling is not llama3", src.path());
        hp.rope_divisor = llama3_divisors(hp.rope_theta, hp.head_dim, r.at("factor").get<double>(),
                                          r.at("low_freq_factor").get<double>(), r.at("high_freq_factor").get<double>(),
                                          r.at("original_max_position_embeddings").get<double>());
    }
    return hp;
}

void ref_rms_norm(float* x, int64_t n, const std::vector<float>& w, double eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const double s = 1.0 / std::sqrt(ss / double(n) + eps);
    for (int64_t i = 0; i < n; ++i) x[i] = float(double(x[i]) * s * w[size_t(i)]);
}

// y[r] = sum_c W[r][c] x[c], W row-major [rows][cols].
std::vector<float> ref_matvec(const std::vector<float>& w, const std::vector<float>& x, int64_t rows) {
    const int64_t cols = int64_t(x.size());
    std::vector<float> y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (int64_t c = 0; c < cols; ++c) acc += double(w[size_t(r * cols + c)]) * x[size_t(c)];
        y[size_t(r)] = float(acc);
    }
    return y;
}

}  // namespace

Result<LlamaReference> LlamaReference::open(const std::string& path, bool f16_kv) {
    LlamaReference r;
    r.src_ = TDM_TRY(ModelSource::open(path));
    r.f16_kv_ = f16_kv;
    r.hp_ = TDM_TRY(read_llama_hparams(*r.src_));
    const LlamaRefHparams& hp = r.hp_;
    const ModelSource& s = *r.src_;
    const bool hf = hp.hf;
    const int64_t E = hp.n_embd, Q = hp.n_head * hp.head_dim, K = hp.n_head_kv * hp.head_dim, F = hp.n_ff;
    r.embd_ = TDM_TRY(ref_tensor(s, hf ? "model.embed_tokens.weight" : "token_embd.weight", hp.n_vocab * E));
    r.out_norm_ = TDM_TRY(ref_tensor(s, hf ? "model.norm.weight" : "output_norm.weight", E));
    r.output_ = hp.tied ? r.embd_ : TDM_TRY(ref_tensor(s, hf ? "lm_head.weight" : "output.weight", hp.n_vocab * E));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".", h = "model.layers." + std::to_string(il) + ".";
        auto t = [&](const char* gguf, const char* hf_name, int64_t n) {
            return ref_tensor(s, hf ? h + hf_name : g + gguf, n);
        };
        Layer l;
        l.attn_norm = TDM_TRY(t("attn_norm.weight", "input_layernorm.weight", E));
        l.wq = TDM_TRY(t("attn_q.weight", "self_attn.q_proj.weight", Q * E));
        l.wk = TDM_TRY(t("attn_k.weight", "self_attn.k_proj.weight", K * E));
        l.wv = TDM_TRY(t("attn_v.weight", "self_attn.v_proj.weight", K * E));
        l.wo = TDM_TRY(t("attn_output.weight", "self_attn.o_proj.weight", E * Q));
        l.ffn_norm = TDM_TRY(t("ffn_norm.weight", "post_attention_layernorm.weight", E));
        l.gate = TDM_TRY(t("ffn_gate.weight", "mlp.gate_proj.weight", F * E));
        l.up = TDM_TRY(t("ffn_up.weight", "mlp.up_proj.weight", F * E));
        l.down = TDM_TRY(t("ffn_down.weight", "mlp.down_proj.weight", E * F));
        r.layers_.push_back(std::move(l));
    }
    return r;
}

std::vector<float> LlamaReference::forward(const std::vector<int32_t>& tokens) const {
    const LlamaRefHparams& hp = hp_;
    const int64_t D = hp.head_dim, E = hp.n_embd, Hq = hp.n_head, Hk = hp.n_head_kv;
    std::vector<std::vector<std::vector<float>>> Ks(size_t(hp.n_layer)), Vs(size_t(hp.n_layer));
    std::vector<float> logits;
    for (size_t p = 0; p < tokens.size(); ++p) {
        std::vector<float> x(embd_.begin() + tokens[p] * E, embd_.begin() + (tokens[p] + 1) * E);
        auto rope = [&](float* head) {
            for (int64_t i = 0; i < D / 2; ++i) {
                const double a = double(p) * std::pow(hp.rope_theta, -2.0 * double(i) / double(D)) /
                                 hp.rope_divisor[size_t(i)];
                // HF: rotate_half pairs (i, i + D/2); GGUF: the permuted rows pair (2i, 2i+1)
                const int64_t i0 = hp.hf ? i : 2 * i, i1 = hp.hf ? i + D / 2 : 2 * i + 1;
                const double x0 = head[i0], x1 = head[i1];
                head[i0] = float(x0 * std::cos(a) - x1 * std::sin(a));
                head[i1] = float(x1 * std::cos(a) + x0 * std::sin(a));
            }
        };
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            const Layer& l = layers_[size_t(il)];
            std::vector<float> h = x;
            ref_rms_norm(h.data(), E, l.attn_norm, hp.rms_eps);
            std::vector<float> q = ref_matvec(l.wq, h, Hq * D), k = ref_matvec(l.wk, h, Hk * D), v = ref_matvec(l.wv, h, Hk * D);
            for (int64_t hh = 0; hh < Hq; ++hh) rope(q.data() + hh * D);
            for (int64_t hh = 0; hh < Hk; ++hh) rope(k.data() + hh * D);
            if (f16_kv_) {
                for (float& e : k) e = round_f16(e);
                for (float& e : v) e = round_f16(e);
            }
            Ks[size_t(il)].push_back(k);
            Vs[size_t(il)].push_back(v);
            std::vector<float> attn(static_cast<size_t>(Hq * D));
            for (int64_t hh = 0; hh < Hq; ++hh) {
                const int64_t kh = hh / (Hq / Hk);  // GQA: consecutive query heads share a KV head
                std::vector<double> sc(p + 1);
                double mx = -1e300, sum = 0;
                for (size_t j = 0; j <= p; ++j) {
                    double d = 0;
                    for (int64_t c = 0; c < D; ++c) d += double(q[size_t(hh * D + c)]) * Ks[size_t(il)][j][size_t(kh * D + c)];
                    sc[j] = d / std::sqrt(double(D));
                    mx = std::max(mx, sc[j]);
                }
                for (size_t j = 0; j <= p; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
                for (int64_t c = 0; c < D; ++c) {
                    double acc = 0;
                    for (size_t j = 0; j <= p; ++j) acc += sc[j] * Vs[size_t(il)][j][size_t(kh * D + c)];
                    attn[size_t(hh * D + c)] = float(acc / sum);
                }
            }
            const std::vector<float> o = ref_matvec(l.wo, attn, E);
            for (int64_t i = 0; i < E; ++i) x[size_t(i)] += o[size_t(i)];
            h = x;
            ref_rms_norm(h.data(), E, l.ffn_norm, hp.rms_eps);
            std::vector<float> g = ref_matvec(l.gate, h, hp.n_ff);
            const std::vector<float> u = ref_matvec(l.up, h, hp.n_ff);
            for (int64_t i = 0; i < hp.n_ff; ++i)
                g[size_t(i)] = float(double(g[size_t(i)]) / (1.0 + std::exp(-double(g[size_t(i)]))) * u[size_t(i)]);
            const std::vector<float> d = ref_matvec(l.down, g, E);
            for (int64_t i = 0; i < E; ++i) x[size_t(i)] += d[size_t(i)];
        }
        ref_rms_norm(x.data(), E, out_norm_, hp.rms_eps);
        const std::vector<float> row = ref_matvec(output_, x, hp.n_vocab);
        logits.insert(logits.end(), row.begin(), row.end());
    }
    return logits;
}

}  // namespace tdm::test
