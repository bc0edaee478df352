// SPDX-License-Identifier: Apache-2.0
// tests/support/gemma4_reference.cpp: the forward pass of Gemma4Reference (docs/models/gemma4.md §2):
// scaled embedding and per-layer inputs, then per layer attention (own or shared K/V), the dense
// or MoE feed-forward, the PLE branch and the layer scale, then the final norm, tied head and
// softcap. Every step composes the ops of reference.h; the loader is gemma4_reference_load.cpp.
#include "support/gemma4_reference.h"

#include "common/quant.h"

#include <cmath>

namespace tdm::ref {
namespace {

Floats mm(std::span<const float> x, DType t, std::span<const uint8_t> w, int64_t rows, int64_t cols) {
    return matmul(x, t, w, rows, cols);
}

}  // namespace

Floats Gemma4Reference::forward(std::span<const int32_t> tokens, Gemma4Trace* trace) const {
    return run(tokens, nullptr, trace).logits;
}

Floats Gemma4Reference::forward(std::span<const int32_t> tokens, Gemma4Cache& cache, Gemma4Trace* trace) const {
    return run(tokens, &cache, trace).logits;
}

// ple = (norm(proj(x) * n_embd^-0.5, per_layer_proj_norm) + table[ids] * sqrt(P)) * 2^-0.5,
// [n][n_layer * P] with layer l's inputs in columns [l * P, (l + 1) * P).
Floats Gemma4Reference::per_layer_inputs(std::span<const int32_t> tokens, std::span<const float> x) const {
    const Gemma4Hparams& hp = hp_;
    const int64_t P = hp.n_embd_per_layer, LP = hp.n_layer * P;
    Floats tok = scale(get_rows(ple_tok_.type, ple_tok_.bytes, LP, tokens), hp.ple_scale);
    Floats ctx = scale(mm(x, ple_proj_.type, ple_proj_.bytes, LP, hp.n_embd), float(1.0 / std::sqrt(double(hp.n_embd))));
    ctx = rms_norm(ctx, P, hp.rms_eps, NormWeight::Plain, ple_proj_norm_);  // per P-wide slice
    return scale(add(ctx, tok, LP), float(1.0 / std::sqrt(2.0)));
}

// Returns the attention output after Wo and post_attention_norm; stores this layer's K/V in the
// cache unless it is KV-shared.
Floats Gemma4Reference::attention_block(int64_t il, std::span<const float> a, std::span<const int32_t> pos,
                                        Gemma4Cache& cache, Gemma4Trace* trace) const {
    const Gemma4Hparams& hp = hp_;
    const Layer& Ly = layers_[size_t(il)];
    const bool swa = hp.sliding[size_t(il)];
    const int64_t n = int64_t(pos.size()), D = swa ? hp.head_dim_swa : hp.head_dim_full;
    const int64_t src_l = hp.kv_source[size_t(il)], n_kv = hp.n_head_kv[size_t(il)];
    auto name = [&](const char* what, const Floats& v) {
        if (trace) (*trace)[std::string(what) + "-" + std::to_string(il)] = v;
    };

    // RoPE of the layer type: sliding NeoX over D with theta_swa; full NeoX over D with the
    // proportional divisors (slots >= n_rot_full keep angle 0) and theta_full.
    RopeParams rp;
    rp.n_rot = D;
    rp.pairing = RopePairing::NeoX;
    rp.theta = swa ? hp.rope_theta_swa : hp.rope_theta_full;
    if (!swa) rp.freq_factors = rope_factors_;

    // q = rope(q_norm(q_proj(a))), per head.
    Floats q = mm(a, Ly.wq.type, Ly.wq.bytes, Ly.wq.rows, Ly.wq.cols);
    q = rope(rms_norm(q, D, hp.rms_eps, NormWeight::Plain, Ly.q_norm), n, hp.n_head, D, pos, rp);
    name("Qcur", q);

    if (src_l == il) {
        // K = rope(k_norm(k_raw)); V = rms(v_raw), v_raw = k_raw on K=V layers.
        const Floats k_raw = mm(a, Ly.wk.type, Ly.wk.bytes, Ly.wk.rows, Ly.wk.cols);
        const Floats v_raw = hp.k_eq_v[size_t(il)] ? k_raw : mm(a, Ly.wv.type, Ly.wv.bytes, Ly.wv.rows, Ly.wv.cols);
        Floats k = rope(rms_norm(k_raw, D, hp.rms_eps, NormWeight::Plain, Ly.k_norm), n, n_kv, D, pos, rp);
        Floats v = rms_norm(v_raw, D, hp.rms_eps, NormWeight::None);
        if (opts_.f16_kv) {
            k = cast_round(k, DType::F16);
            v = cast_round(v, DType::F16);
        }
        name("Kcur", k);
        name("Vcur", v);
        Floats& ck = cache.k[size_t(il)];
        Floats& cv = cache.v[size_t(il)];
        ck.insert(ck.end(), k.begin(), k.end());
        cv.insert(cv.end(), v.begin(), v.end());
    }
    // Keys: every position stored so far by the source layer (its rows for this call included,
    // since the source comes earlier); the window is a mask.
    const Floats& ck = cache.k[size_t(src_l)];
    const Floats& cv = cache.v[size_t(src_l)];
    std::vector<int32_t> k_pos(ck.size() / size_t(n_kv * D));
    for (size_t j = 0; j < k_pos.size(); ++j) k_pos[j] = int32_t(j);

    AttnParams ap;
    ap.n_head = hp.n_head;
    ap.n_head_kv = n_kv;
    ap.head_dim = D;
    ap.head_dim_v = D;
    ap.scale = 1.0f;  // Gemma 4: q_norm / k_norm carry the scale
    ap.window = swa ? hp.window : 0;
    const Floats o = attention(q, pos, ck, cv, k_pos, ap);
    name("kqv_out", o);
    Floats out = mm(o, Ly.wo.type, Ly.wo.bytes, Ly.wo.rows, Ly.wo.cols);
    out = rms_norm(out, hp.n_embd, hp.rms_eps, NormWeight::Plain, Ly.post_attention_norm);
    name("attn_out", out);
    return out;
}

// MoE branch f2 before post_ffw_norm_2: router on the raw residual, experts on
// pre_ffw_norm_2(res).
Floats Gemma4Reference::moe(const Layer& Ly, std::span<const float> res) const {
    const Gemma4Hparams& hp = hp_;
    const int64_t E = hp.n_embd, n = int64_t(res.size()) / E, ne = hp.n_expert, fe = hp.n_ff_exp;
    // r = rms(res) * router_scale * E^-0.5; p = softmax(r Wr^T).
    Floats r = mul(rms_norm(res, E, hp.rms_eps, NormWeight::None), Ly.router_scale, E);
    r = scale(r, float(1.0 / std::sqrt(double(E))));
    const Floats p = softmax(mm(r, Ly.router.type, Ly.router.bytes, ne, E), ne);
    const std::vector<int32_t> top = top_k(p, ne, hp.n_expert_used);
    const Floats xe = rms_norm(res, E, hp.rms_eps, NormWeight::Plain, Ly.pre_ffw_norm_2);

    Floats out(res.size(), 0.0f);
    std::vector<double> acc(static_cast<size_t>(E));
    for (int64_t i = 0; i < n; ++i) {
        const std::span<const float> xi(xe.data() + i * E, size_t(E));
        const int32_t* sel = top.data() + i * hp.n_expert_used;
        double sum = 0.0;
        for (int64_t j = 0; j < hp.n_expert_used; ++j) sum += p[size_t(i * ne + sel[j])];
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < hp.n_expert_used; ++j) {
            const int32_t e = sel[j];
            // w = p / sum(top-k p) * per_expert_scale[e]
            const double w = double(p[size_t(i * ne + e)]) / sum * double(Ly.per_expert_scale[size_t(e)]);
            const Matrix& gu = Ly.exp_gate_up[size_t(e)];
            const Matrix& dn = Ly.exp_down[size_t(e)];
            const Floats h = mm(xi, gu.type, gu.bytes, 2 * fe, E);  // [gate | up]
            const Floats g = geglu(std::span<const float>(h.data(), size_t(fe)),
                                   std::span<const float>(h.data() + fe, size_t(fe)));
            const Floats y = mm(g, dn.type, dn.bytes, E, fe);
            for (int64_t c = 0; c < E; ++c) acc[size_t(c)] += w * double(y[size_t(c)]);
        }
        for (int64_t c = 0; c < E; ++c) out[size_t(i * E + c)] = float(acc[size_t(c)]);
    }
    return out;
}

// The feed-forward branch f (before the residual add), after post_ffw_norm.
Floats Gemma4Reference::ffn_block(int64_t il, std::span<const float> x, Gemma4Trace* trace) const {
    const Gemma4Hparams& hp = hp_;
    const Layer& Ly = layers_[size_t(il)];
    const int64_t E = hp.n_embd;
    // Dense GeGLU: down(gelu_tanh(gate(h)) * up(h)), h = ffn_norm(x).
    const Floats h = rms_norm(x, E, hp.rms_eps, NormWeight::Plain, Ly.ffn_norm);
    Floats f = mm(geglu(mm(h, Ly.gate.type, Ly.gate.bytes, Ly.gate.rows, E), mm(h, Ly.up.type, Ly.up.bytes, Ly.up.rows, E)),
                  Ly.down.type, Ly.down.bytes, E, Ly.down.cols);
    if (hp.n_expert > 0) {
        // f = post_ffw_norm_1(dense) + post_ffw_norm_2(moe)
        f = rms_norm(f, E, hp.rms_eps, NormWeight::Plain, Ly.post_ffw_norm_1);
        const Floats f2 = rms_norm(moe(Ly, x), E, hp.rms_eps, NormWeight::Plain, Ly.post_ffw_norm_2);
        if (trace) (*trace)["moe_out-" + std::to_string(il)] = f2;
        f = add(f, f2, E);
    }
    return rms_norm(f, E, hp.rms_eps, NormWeight::Plain, Ly.post_ffw_norm);
}

Gemma4Output Gemma4Reference::run(std::span<const int32_t> tokens, Gemma4Cache* cache_in, Gemma4Trace* trace) const {
    const Gemma4Hparams& hp = hp_;
    const int64_t n = int64_t(tokens.size()), E = hp.n_embd, P = hp.n_embd_per_layer;
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp.n_vocab, "token id out of range");
    Gemma4Cache fresh;
    Gemma4Cache& cache = cache_in ? *cache_in : fresh;
    if (cache.k.empty()) {
        cache.k.resize(size_t(hp.n_layer));
        cache.v.resize(size_t(hp.n_layer));
    }
    auto name = [&](const std::string& what, const Floats& v) {
        if (trace) (*trace)[what] = v;
    };
    std::vector<int32_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(cache.n_past + i);

    // x = E[ids] * sqrt(n_embd)                                  [n][n_embd]
    Floats x = embed(tokens);
    name("inp_embd", x);
    Floats ple;  // [n][n_layer * P]
    if (P > 0) {
        ple = per_layer_inputs(tokens, x);
        name("inp_per_layer", ple);
    }

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const Layer& Ly = layers_[size_t(il)];
        const std::string sfx = "-" + std::to_string(il);
        // x = x + post_attention_norm(attention(attn_norm(x)))
        const Floats a = rms_norm(x, E, hp.rms_eps, NormWeight::Plain, Ly.attn_norm);
        name("attn_norm" + sfx, a);
        x = add(x, attention_block(il, a, pos, cache, trace), E);
        name("ffn_inp" + sfx, x);
        // x = x + post_ffw_norm(ffn(x))
        const Floats f = ffn_block(il, x, trace);
        name("ffn_out" + sfx, f);
        x = add(x, f, E);
        if (P > 0) {
            // x = x + post_norm(proj(gelu_tanh(inp_gate(x)) * ple[:, l, :]))
            const Floats g = gelu_tanh(mm(x, Ly.inp_gate.type, Ly.inp_gate.bytes, P, E));
            const Floats pe = mul(g, view_cols(ple, hp.n_layer * P, il * P, P), P);
            Floats b = rms_norm(mm(pe, Ly.proj.type, Ly.proj.bytes, E, P), E, hp.rms_eps, NormWeight::Plain, Ly.post_norm);
            name("pe_out" + sfx, b);
            x = add(x, b, E);
        }
        x = scale(x, Ly.out_scale);  // layer_output_scale: the whole stream
        name("l_out" + sfx, x);
    }
    cache.n_past += n;

    Gemma4Output out;
    out.hidden = rms_norm(x, E, hp.rms_eps, NormWeight::Plain, output_norm_);
    name("result_norm", out.hidden);
    out.logits = mm(out.hidden, tok_embd_.type, tok_embd_.bytes, hp.n_vocab, E);  // tied head
    if (hp.softcap > 0.0f) out.logits = softcap(out.logits, hp.softcap);
    name("result_output", out.logits);
    return out;
}

Floats Gemma4Reference::embed(std::span<const int32_t> tokens) const {
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp_.n_vocab, "token id out of range");
    return scale(get_rows(tok_embd_.type, tok_embd_.bytes, hp_.n_embd, tokens), hp_.embd_scale);
}

int64_t Gemma4Reference::shared_kv_layer(bool sliding) const {
    for (int64_t il = hp_.n_layer - 1; il >= 0; --il)
        if (hp_.kv_source[size_t(il)] == il && hp_.sliding[size_t(il)] == sliding) return il;
    return -1;
}

std::vector<int32_t> Gemma4Reference::generate(std::span<const int32_t> prompt, int n) const {
    TDM_ASSERT_MSG(!prompt.empty(), "generate needs a prompt");
    std::vector<int32_t> out;
    Gemma4Cache cache;
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
