// SPDX-License-Identifier: Apache-2.0
// tests/models/eagle3/eagle3_reference.cpp: the EAGLE-3 reference step (eagle3_reference.h).
#include "eagle3_reference.h"

#include "common/fp16.h"
#include "common/quant.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

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

Result<std::vector<int64_t>> ref_ids(const ModelSource& src, const std::string& name, int64_t elements) {
    const SourceTensor* t = src.find(name);
    if (!t) return Error::format("{}: no tensor {}", src.path(), name);
    if (t->nbytes != uint64_t(elements) * 8) return Error::format("{}: {} is not {} int64 values", src.path(), name, elements);
    std::vector<int64_t> out(static_cast<size_t>(elements));
    std::memcpy(out.data(), t->data, t->nbytes);
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

Vec rms_norm(const Vec& x, const std::vector<float>& w, double eps) {
    double ss = 0.0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * double(w[i]);
    return y;
}

// Rotates each head of x [n_head][D] at position pos: NeoX pairs (i, i + D/2) or adjacent
// pairs (2i, 2i + 1), frequency theta^(-2i/D) / divisor[i] for pair i.
void rope(Vec& x, int64_t n_head, int64_t D, int32_t pos, double theta, bool neox, const Vec& divisor) {
    for (int64_t h = 0; h < n_head; ++h) {
        double* v = x.data() + h * D;
        for (int64_t i = 0; i < D / 2; ++i) {
            const double angle = double(pos) * std::pow(theta, -double(2 * i) / double(D)) / divisor[size_t(i)];
            const int64_t a = neox ? i : 2 * i, b = neox ? i + D / 2 : 2 * i + 1;
            const double xa = v[a], xb = v[b];
            v[a] = xa * std::cos(angle) - xb * std::sin(angle);
            v[b] = xb * std::cos(angle) + xa * std::sin(angle);
        }
    }
}

// HF's _compute_llama3_parameters: wavelengths under original / high keep their frequency,
// those over original / low are divided by `factor`, a smooth mix between.
Vec llama3_divisors(double theta, int64_t dim, double factor, double low, double high, double original) {
    Vec d(size_t(dim / 2), 1.0);
    for (int64_t i = 0; i < dim / 2; ++i) {
        const double wavelen = 2.0 * M_PI * std::pow(theta, double(2 * i) / double(dim));
        if (wavelen > original / low) {
            d[size_t(i)] = factor;
        } else if (wavelen >= original / high) {
            const double smooth = (original / wavelen - low) / (high - low);
            d[size_t(i)] = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
    }
    return d;
}

}  // namespace

Result<Eagle3Reference> Eagle3Reference::open(const std::string& head_path, const std::string& target_path,
                                              bool f16_kv) {
    Eagle3Reference r;
    r.f16_kv_ = f16_kv;
    r.head_ = TDM_TRY(ModelSource::open(head_path));
    r.target_ = TDM_TRY(ModelSource::open(target_path));
    const ModelSource& h = *r.head_;
    Eagle3RefHparams& hp = r.hp_;
    hp.hf = h.format() == SourceFormat::safetensors;
    std::string q, k, v, o, in_norm, hid_norm, post_norm, gate, up, down, out_norm, output;
    if (const GgufFile* g = h.gguf()) {
        if (h.architecture() != "eagle3") return Error::format("{}: not an eagle3 GGUF", h.path());
        hp.n_embd = int64_t(TDM_TRY(g->get_uint("eagle3.embedding_length")));
        hp.n_embd_target = int64_t(TDM_TRY(g->get_uint_or("eagle3.target_hidden_size", uint64_t(hp.n_embd))));
        hp.n_head = int64_t(TDM_TRY(g->get_uint("eagle3.attention.head_count")));
        hp.n_head_kv = int64_t(TDM_TRY(g->get_uint("eagle3.attention.head_count_kv")));
        hp.head_dim = int64_t(TDM_TRY(g->get_uint("eagle3.attention.key_length")));
        hp.n_ff = int64_t(TDM_TRY(g->get_uint("eagle3.feed_forward_length")));
        hp.rope_theta = TDM_TRY(g->get_float("eagle3.rope.freq_base"));
        hp.rms_eps = TDM_TRY(g->get_float("eagle3.attention.layer_norm_rms_epsilon"));
        hp.norm_before_residual = TDM_TRY(g->get_bool_or("eagle3.norm_before_residual", false));
        hp.target_layers = TDM_TRY(g->get_int_array("eagle3.target_layers"));
        const SourceTensor* d2t = h.find("d2t");
        if (!d2t) return Error::format("{}: no d2t", h.path());
        hp.n_vocab_draft = d2t->ne[0];
        if (h.find("rope_freqs.weight")) {
            const std::vector<float> f = TDM_TRY(ref_tensor(h, "rope_freqs.weight", hp.head_dim / 2));
            r.divisor_.assign(f.begin(), f.end());
        }
        q = "blk.0.attn_q.weight", k = "blk.0.attn_k.weight", v = "blk.0.attn_v.weight";
        o = "blk.0.attn_output.weight", in_norm = "blk.0.attn_norm.weight", hid_norm = "blk.0.attn_norm_2.weight";
        post_norm = "blk.0.ffn_norm.weight", gate = "blk.0.ffn_gate.weight", up = "blk.0.ffn_up.weight";
        down = "blk.0.ffn_down.weight", out_norm = "output_norm.weight", output = "output.weight";
    } else {
        const nlohmann::json* c = h.hf_config();
        if (!c) return Error::format("{}: no config.json", h.path());
        hp.n_embd = (*c)["hidden_size"].get<int64_t>();
        hp.n_embd_target = c->value("target_hidden_size", hp.n_embd);
        hp.n_head = (*c)["num_attention_heads"].get<int64_t>();
        hp.n_head_kv = (*c)["num_key_value_heads"].get<int64_t>();
        hp.head_dim = c->value("head_dim", hp.n_embd / hp.n_head);
        hp.n_ff = (*c)["intermediate_size"].get<int64_t>();
        hp.rope_theta = (*c)["rope_theta"].get<double>();
        hp.rms_eps = (*c)["rms_norm_eps"].get<double>();
        hp.norm_before_residual = c->value("norm_before_residual", false);
        hp.n_vocab_draft = (*c)["draft_vocab_size"].get<int64_t>();
        hp.target_layers = (*c)["eagle_config"]["eagle_aux_hidden_state_layer_ids"].get<std::vector<int64_t>>();
        const auto rs = c->find("rope_scaling");
        if (rs != c->end() && rs->is_object() && rs->value("rope_type", "") == "llama3")
            r.divisor_ = llama3_divisors(hp.rope_theta, hp.head_dim, (*rs)["factor"].get<double>(),
                                         (*rs)["low_freq_factor"].get<double>(), (*rs)["high_freq_factor"].get<double>(),
                                         (*rs)["original_max_position_embeddings"].get<double>());
        const std::string m = "midlayer.";
        q = m + "self_attn.q_proj.weight", k = m + "self_attn.k_proj.weight", v = m + "self_attn.v_proj.weight";
        o = m + "self_attn.o_proj.weight", in_norm = m + "input_layernorm.weight", hid_norm = m + "hidden_norm.weight";
        post_norm = m + "post_attention_layernorm.weight", gate = m + "mlp.gate_proj.weight";
        up = m + "mlp.up_proj.weight", down = m + "mlp.down_proj.weight", out_norm = "norm.weight";
        output = "lm_head.weight";
    }
    hp.n_taps = int64_t(hp.target_layers.size());
    if (r.divisor_.empty()) r.divisor_.assign(size_t(hp.head_dim / 2), 1.0);
    const ModelSource& t = *r.target_;
    const std::string embd_name = t.gguf() ? "token_embd.weight" : "model.embed_tokens.weight";
    const SourceTensor* te = t.find(embd_name);
    if (!te) return Error::format("{}: no {}", t.path(), embd_name);
    hp.n_vocab = te->ne[1];
    const int64_t H = hp.n_embd, D = hp.head_dim, F = hp.n_ff, Q = hp.n_head * D, KV = hp.n_head_kv * D;
    r.embd_ = TDM_TRY(ref_tensor(t, embd_name, hp.n_vocab * H));
    r.fc_ = TDM_TRY(ref_tensor(h, "fc.weight", H * hp.n_taps * hp.n_embd_target));
    r.attn_norm_ = TDM_TRY(ref_tensor(h, in_norm, H));
    r.hidden_norm_ = TDM_TRY(ref_tensor(h, hid_norm, H));
    r.wq_ = TDM_TRY(ref_tensor(h, q, Q * 2 * H));
    r.wk_ = TDM_TRY(ref_tensor(h, k, KV * 2 * H));
    r.wv_ = TDM_TRY(ref_tensor(h, v, KV * 2 * H));
    r.wo_ = TDM_TRY(ref_tensor(h, o, H * Q));
    r.ffn_norm_ = TDM_TRY(ref_tensor(h, post_norm, H));
    r.gate_ = TDM_TRY(ref_tensor(h, gate, F * H));
    r.up_ = TDM_TRY(ref_tensor(h, up, F * H));
    r.down_ = TDM_TRY(ref_tensor(h, down, H * F));
    r.out_norm_ = TDM_TRY(ref_tensor(h, out_norm, H));
    r.output_ = TDM_TRY(ref_tensor(h, output, hp.n_vocab_draft * H));
    r.d2t_ = TDM_TRY(ref_ids(h, "d2t", hp.n_vocab_draft));
    if (hp.hf)
        for (size_t j = 0; j < r.d2t_.size(); ++j) r.d2t_[j] += int64_t(j);  // offsets -> ids
    for (int64_t id : r.d2t_)
        if (id < 0 || id >= hp.n_vocab) return Error::format("{}: d2t maps to {} outside the target's vocabulary", h.path(), id);
    return r;
}

Eagle3Step Eagle3Reference::step(int32_t token, int32_t pos, std::span<const float> g_or_taps, bool from_taps) {
    const Eagle3RefHparams& hp = hp_;
    const int64_t H = hp.n_embd, D = hp.head_dim, F = hp.n_ff, Q = hp.n_head * D, KV = hp.n_head_kv * D;
    Vec in(g_or_taps.begin(), g_or_taps.end());
    const Vec g = from_taps ? matvec(fc_, H, hp.n_taps * hp.n_embd_target, in) : in;
    const Vec e(embd_.begin() + int64_t(token) * H, embd_.begin() + int64_t(token + 1) * H);
    const Vec en = rms_norm(e, attn_norm_, hp.rms_eps), gn = rms_norm(g, hidden_norm_, hp.rms_eps);
    Vec cat = en;  // [input_layernorm(embedding); hidden_norm(g)]
    cat.insert(cat.end(), gn.begin(), gn.end());
    Vec qv = matvec(wq_, Q, 2 * H, cat), kv = matvec(wk_, KV, 2 * H, cat), vv = matvec(wv_, KV, 2 * H, cat);
    rope(qv, hp.n_head, D, pos, hp.rope_theta, hp.hf, divisor_);
    rope(kv, hp.n_head_kv, D, pos, hp.rope_theta, hp.hf, divisor_);
    if (f16_kv_)
        for (auto* c : {&kv, &vv})
            for (double& x : *c) x = double(round_f16(float(x)));
    k_cache_.push_back(kv);
    v_cache_.push_back(vv);
    pos_cache_.push_back(pos);
    // causal attention over the cache, GQA, scale 1/sqrt(D)
    Vec att(size_t(Q), 0.0);
    const int64_t group = hp.n_head / hp.n_head_kv;
    for (int64_t hd = 0; hd < hp.n_head; ++hd) {
        const int64_t kvh = hd / group;
        std::vector<double> s;
        double mx = -1e300;
        for (size_t j = 0; j < k_cache_.size(); ++j) {
            if (pos_cache_[j] > pos) continue;
            double d = 0.0;
            for (int64_t i = 0; i < D; ++i) d += qv[size_t(hd * D + i)] * k_cache_[j][size_t(kvh * D + i)];
            s.push_back(d / std::sqrt(double(D)));
            mx = std::max(mx, s.back());
        }
        double sum = 0.0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        size_t n = 0;
        for (size_t j = 0; j < k_cache_.size(); ++j) {
            if (pos_cache_[j] > pos) continue;
            const double w = s[n++] / sum;
            for (int64_t i = 0; i < D; ++i) att[size_t(hd * D + i)] += w * v_cache_[j][size_t(kvh * D + i)];
        }
    }
    Vec x = matvec(wo_, H, Q, att);
    const Vec& resid = hp.norm_before_residual ? gn : g;
    for (int64_t i = 0; i < H; ++i) x[size_t(i)] += resid[size_t(i)];
    const Vec fn = rms_norm(x, ffn_norm_, hp.rms_eps);
    const Vec ga = matvec(gate_, F, H, fn), u = matvec(up_, F, H, fn);
    Vec act(static_cast<size_t>(F));
    for (int64_t i = 0; i < F; ++i) act[size_t(i)] = ga[size_t(i)] / (1.0 + std::exp(-ga[size_t(i)])) * u[size_t(i)];
    const Vec dn = matvec(down_, H, F, act);
    for (int64_t i = 0; i < H; ++i) x[size_t(i)] += dn[size_t(i)];
    const Vec logits = matvec(output_, hp.n_vocab_draft, H, rms_norm(x, out_norm_, hp.rms_eps));
    size_t best = 0;
    for (size_t j = 1; j < logits.size(); ++j)
        if (logits[j] > logits[best]) best = j;
    double second = -1e300;
    for (size_t j = 0; j < logits.size(); ++j)
        if (j != best) second = std::max(second, logits[j]);
    Eagle3Step out;
    out.hidden.assign(x.begin(), x.end());
    out.token = int32_t(d2t_[best]);
    out.margin = float(logits[best] - second);
    return out;
}

void Eagle3Reference::truncate(size_t n_rows) {
    k_cache_.resize(std::min(n_rows, k_cache_.size()));
    v_cache_.resize(k_cache_.size());
    pos_cache_.resize(k_cache_.size());
}

}  // namespace tdm::test
