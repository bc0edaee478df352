// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_reference.cpp: the DFlash reference block (dflash_reference.h).
#include "dflash_reference.h"

#include "common/fp16.h"
#include "common/quant.h"
#include "formats/gguf.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace tdm::test {
namespace {

using Vec = std::vector<double>;

Result<std::vector<float>> ref_tensor(const ModelSource& src, const std::string& name, int64_t elements) {
    const SourceTensor* t = src.find(name);
    if (!t) return Error::format("{}: no tensor {}", src.path(), name);
    const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    if (n != elements) return Error::format("{}: {} has {} elements, expected {}", src.path(), name, n, elements);
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(DType(t->type), t->data, out.data(), n);
    return out;
}

// y[r] = sum_c W[r][c] x[c], W row-major [rows][cols]
Vec matvec(const std::vector<float>& w, int64_t rows, int64_t cols, const Vec& x) {
    Vec y(size_t(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0.0;
        const float* wr = w.data() + r * cols;
        for (int64_t c = 0; c < cols; ++c) s += double(wr[c]) * x[size_t(c)];
        y[size_t(r)] = s;
    }
    return y;
}

// RMSNorm of each consecutive group of w.size() values of x
Vec rms_norm(const Vec& x, const std::vector<float>& w, double eps) {
    Vec y(x.size());
    const size_t n = w.size();
    for (size_t g = 0; g < x.size(); g += n) {
        double ss = 0.0;
        for (size_t i = 0; i < n; ++i) ss += x[g + i] * x[g + i];
        const double inv = 1.0 / std::sqrt(ss / double(n) + eps);
        for (size_t i = 0; i < n; ++i) y[g + i] = x[g + i] * inv * double(w[i]);
    }
    return y;
}

// HF's rotate_half RoPE (pairs i, i + D/2) of each head of x [n_head][D] at position pos.
void rope(Vec& x, int64_t n_head, int64_t D, int64_t pos, double theta) {
    for (int64_t h = 0; h < n_head; ++h) {
        double* v = x.data() + h * D;
        for (int64_t i = 0; i < D / 2; ++i) {
            const double angle = double(pos) * std::pow(theta, -double(2 * i) / double(D));
            const double xa = v[i], xb = v[i + D / 2];
            v[i] = xa * std::cos(angle) - xb * std::sin(angle);
            v[i + D / 2] = xb * std::cos(angle) + xa * std::sin(angle);
        }
    }
}

void round_f16(Vec& x) {
    for (double& v : x) v = double(tdm::round_f16(float(v)));
}

}  // namespace

namespace {

// The head's hyper-parameters from z-lab's config.json.
Status read_hf_hparams(const ModelSource& h, DflashRefHparams* hp) {
    const nlohmann::json* c = h.hf_config();
    if (!c) return Error::format("{}: no config.json", h.path());
    hp->n_layer = (*c)["num_hidden_layers"].get<int64_t>();
    hp->n_embd = (*c)["hidden_size"].get<int64_t>();
    hp->n_head = (*c)["num_attention_heads"].get<int64_t>();
    hp->n_head_kv = (*c)["num_key_value_heads"].get<int64_t>();
    hp->head_dim = c->value("head_dim", hp->n_embd / hp->n_head);
    hp->n_ff = (*c)["intermediate_size"].get<int64_t>();
    hp->rope_theta = (*c)["rope_theta"].get<double>();
    hp->rms_eps = (*c)["rms_norm_eps"].get<double>();
    hp->block_size = (*c)["block_size"].get<int64_t>();
    hp->mask_token = (*c)["dflash_config"]["mask_token_id"].get<int64_t>();
    hp->target_layers = (*c)["dflash_config"]["target_layer_ids"].get<std::vector<int64_t>>();
    return {};
}

// The same from llama.cpp's dflash.* keys; its target_layers name the tapped layers' inputs.
Status read_gguf_hparams(const ModelSource& h, DflashRefHparams* hp) {
    const GgufFile* g = h.gguf();
    if (!g) return Error::format("{}: not a GGUF file", h.path());
    hp->n_layer = TDM_TRY(g->get_int("dflash.block_count"));
    hp->n_embd = TDM_TRY(g->get_int("dflash.embedding_length"));
    hp->n_head = TDM_TRY(g->get_int("dflash.attention.head_count"));
    hp->n_head_kv = TDM_TRY(g->get_int("dflash.attention.head_count_kv"));
    hp->head_dim = TDM_TRY(g->get_int_or("dflash.attention.key_length", hp->n_embd / hp->n_head));
    hp->n_ff = TDM_TRY(g->get_int("dflash.feed_forward_length"));
    hp->rope_theta = TDM_TRY(g->get_float("dflash.rope.freq_base"));
    hp->rms_eps = TDM_TRY(g->get_float("dflash.attention.layer_norm_rms_epsilon"));
    hp->block_size = TDM_TRY(g->get_int_or("dflash.block_size", 16));
    hp->mask_token = TDM_TRY(g->get_int("tokenizer.ggml.mask_token_id"));
    for (int64_t l : TDM_TRY(g->get_int_array("dflash.target_layers"))) hp->target_layers.push_back(l - 1);
    return {};
}

}  // namespace

Result<DflashReference> DflashReference::open(const std::string& head_path, const std::string& target_path) {
    DflashReference r;
    r.head_ = TDM_TRY(ModelSource::open(head_path));
    r.target_ = TDM_TRY(ModelSource::open(target_path));
    const ModelSource& h = *r.head_;
    const bool hf = h.format() == SourceFormat::safetensors;
    DflashRefHparams& hp = r.hp_;
    TDM_TRY(hf ? read_hf_hparams(h, &hp) : read_gguf_hparams(h, &hp));
    const ModelSource& t = *r.target_;
    const SourceTensor* te = t.find("token_embd.weight");
    if (!te) return Error::format("{}: no token_embd.weight", t.path());
    hp.n_vocab = te->ne[1];
    const int64_t H = hp.n_embd, D = hp.head_dim, F = hp.n_ff, Q = hp.n_head * D, KV = hp.n_head_kv * D;
    r.embd_ = TDM_TRY(ref_tensor(t, "token_embd.weight", hp.n_vocab * H));
    r.output_ = t.find("output.weight") ? TDM_TRY(ref_tensor(t, "output.weight", hp.n_vocab * H)) : r.embd_;
    // {GGUF name, HF name}: the same row-major matrices in both (no q/k permutation)
    auto get = [&](const char* gguf, const char* hf_name, int64_t n) {
        return ref_tensor(h, hf ? hf_name : gguf, n);
    };
    r.fc_ = TDM_TRY(get("fc.weight", "fc.weight", H * int64_t(hp.target_layers.size()) * H));
    r.hidden_norm_ = TDM_TRY(get("enc.output_norm.weight", "hidden_norm.weight", H));
    r.out_norm_ = TDM_TRY(get("output_norm.weight", "norm.weight", H));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".", p = "layers." + std::to_string(il) + ".";
        auto layer = [&](const char* gguf, const char* hf_name, int64_t n) {
            return get((g + gguf).c_str(), (p + hf_name).c_str(), n);
        };
        Layer L;
        L.attn_norm = TDM_TRY(layer("attn_norm.weight", "input_layernorm.weight", H));
        L.wq = TDM_TRY(layer("attn_q.weight", "self_attn.q_proj.weight", Q * H));
        L.wk = TDM_TRY(layer("attn_k.weight", "self_attn.k_proj.weight", KV * H));
        L.wv = TDM_TRY(layer("attn_v.weight", "self_attn.v_proj.weight", KV * H));
        L.wo = TDM_TRY(layer("attn_output.weight", "self_attn.o_proj.weight", H * Q));
        L.q_norm = TDM_TRY(layer("attn_q_norm.weight", "self_attn.q_norm.weight", D));
        L.k_norm = TDM_TRY(layer("attn_k_norm.weight", "self_attn.k_norm.weight", D));
        L.ffn_norm = TDM_TRY(layer("ffn_norm.weight", "post_attention_layernorm.weight", H));
        L.gate = TDM_TRY(layer("ffn_gate.weight", "mlp.gate_proj.weight", F * H));
        L.up = TDM_TRY(layer("ffn_up.weight", "mlp.up_proj.weight", F * H));
        L.down = TDM_TRY(layer("ffn_down.weight", "mlp.down_proj.weight", H * F));
        r.layers_.push_back(std::move(L));
    }
    return r;
}

DflashBlock DflashReference::block(int32_t token, int32_t p, const std::vector<std::vector<float>>& taps) const {
    const DflashRefHparams& hp = hp_;
    const int64_t H = hp.n_embd, D = hp.head_dim, F = hp.n_ff, Q = hp.n_head * D, KV = hp.n_head_kv * D;
    const int64_t b = hp.block_size, k_in = int64_t(hp.target_layers.size()) * H;
    std::vector<Vec> ctx;  // hidden_norm(fc(taps)) of each context position
    for (int32_t j = 0; j < p; ++j) {
        const Vec in(taps[size_t(j)].begin(), taps[size_t(j)].end());
        ctx.push_back(rms_norm(matvec(fc_, H, k_in, in), hidden_norm_, hp.rms_eps));
    }
    std::vector<Vec> h;  // the block rows: the target's embeddings of their tokens
    for (int64_t i = 0; i < b; ++i) {
        const int64_t t = i == 0 ? token : hp.mask_token;
        h.emplace_back(embd_.begin() + t * H, embd_.begin() + (t + 1) * H);
    }
    const int64_t group = hp.n_head / hp.n_head_kv;
    for (const Layer& L : layers_) {
        std::vector<Vec> keys, values, x;
        auto add_kv = [&](const Vec& in, int64_t pos) {
            Vec k = rms_norm(matvec(L.wk, KV, H, in), L.k_norm, hp.rms_eps);
            rope(k, hp.n_head_kv, D, pos, hp.rope_theta);
            Vec v = matvec(L.wv, KV, H, in);
            round_f16(k);
            round_f16(v);
            keys.push_back(std::move(k));
            values.push_back(std::move(v));
        };
        for (int32_t j = 0; j < p; ++j) add_kv(ctx[size_t(j)], j);
        for (int64_t i = 0; i < b; ++i) {
            x.push_back(rms_norm(h[size_t(i)], L.attn_norm, hp.rms_eps));
            add_kv(x.back(), p + i);
        }
        for (int64_t i = 0; i < b; ++i) {
            Vec q = rms_norm(matvec(L.wq, Q, H, x[size_t(i)]), L.q_norm, hp.rms_eps);
            rope(q, hp.n_head, D, p + i, hp.rope_theta);
            Vec att(size_t(Q), 0.0);
            for (int64_t hd = 0; hd < hp.n_head; ++hd) {  // every key: context and whole block
                const int64_t kvh = hd / group;
                std::vector<double> s(keys.size());
                double mx = -1e300;
                for (size_t j = 0; j < keys.size(); ++j) {
                    double d = 0.0;
                    for (int64_t e = 0; e < D; ++e) d += q[size_t(hd * D + e)] * keys[j][size_t(kvh * D + e)];
                    s[j] = d / std::sqrt(double(D));
                    mx = std::max(mx, s[j]);
                }
                double sum = 0.0;
                for (double& v : s) sum += (v = std::exp(v - mx));
                for (size_t j = 0; j < keys.size(); ++j)
                    for (int64_t e = 0; e < D; ++e) att[size_t(hd * D + e)] += s[j] / sum * values[j][size_t(kvh * D + e)];
            }
            const Vec o = matvec(L.wo, H, Q, att);
            for (int64_t e = 0; e < H; ++e) h[size_t(i)][size_t(e)] += o[size_t(e)];
        }
        for (int64_t i = 0; i < b; ++i) {
            const Vec fn = rms_norm(h[size_t(i)], L.ffn_norm, hp.rms_eps);
            const Vec g = matvec(L.gate, F, H, fn), u = matvec(L.up, F, H, fn);
            Vec act(static_cast<size_t>(F));
            for (int64_t e = 0; e < F; ++e) act[size_t(e)] = g[size_t(e)] / (1.0 + std::exp(-g[size_t(e)])) * u[size_t(e)];
            const Vec dn = matvec(L.down, H, F, act);
            for (int64_t e = 0; e < H; ++e) h[size_t(i)][size_t(e)] += dn[size_t(e)];
        }
    }
    DflashBlock out;
    for (int64_t i = 1; i < b; ++i) {
        const Vec logits = matvec(output_, hp.n_vocab, H, rms_norm(h[size_t(i)], out_norm_, hp.rms_eps));
        size_t best = 0;
        for (size_t j = 1; j < logits.size(); ++j)
            if (logits[j] > logits[best]) best = j;
        double second = -1e300;
        for (size_t j = 0; j < logits.size(); ++j)
            if (j != best) second = std::max(second, logits[j]);
        out.tokens.push_back(int32_t(best));
        out.margins.push_back(float(logits[best] - second));
    }
    return out;
}

}  // namespace tdm::test
