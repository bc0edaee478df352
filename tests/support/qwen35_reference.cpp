// SPDX-License-Identifier: Apache-2.0
// tests/support/qwen35_reference.cpp: the forward passes of Qwen35Reference: the trunk (GDN and
// gated-attention layers, dense or MoE FFN) and the MTP head (docs/models/qwen35.md §2 and §4). Loading is in
// qwen35_reference_load.cpp, the GDN recurrence in gdn_reference.cpp.
#include "support/qwen35_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tdm::ref {
namespace {

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::span<const float> row_of(std::span<const float> x, int64_t n_cols, int64_t i) {
    return x.subspan(size_t(i * n_cols), size_t(n_cols));
}

}  // namespace

Floats Qwen35Reference::norm(std::span<const float> x, int64_t n_cols, const Norm& w) const {
    // HF stores w and computes rms(x) * (1 + w); GGUF stores 1 + w (docs/models/qwen35.md pitfall 1).
    return rms_norm(x, n_cols, hp_.rms_eps, w.one_plus ? NormWeight::OnePlus : NormWeight::Plain, w.w);
}

GdnDims Qwen35Reference::gdn_dims() const {
    GdnDims d;
    d.n_k_heads = hp_.gdn_n_k_heads;
    d.n_v_heads = hp_.gdn_n_v_heads;
    d.d_k = hp_.gdn_d_k;
    d.d_v = hp_.gdn_d_v;
    d.conv_kernel = hp_.gdn_conv_kernel;
    d.order = hp_.head_order;
    d.norm_eps = hp_.rms_eps;
    d.f32_state = opts_.f32_state;
    return d;
}

// Gated full attention (docs/models/qwen35.md §2.1). h [n][E] at positions pos; K/V of these tokens are
// appended to kc/vc, whose entries sit at k_pos.
Floats Qwen35Reference::attention_block(const Layer& L, std::span<const float> h, std::span<const int32_t> pos,
                                        Floats& kc, Floats& vc, std::span<const int32_t> k_pos) const {
    const int64_t n = int64_t(pos.size()), D = hp_.head_dim, Hq = hp_.n_head, Hk = hp_.n_head_kv;
    auto mm = [](std::span<const float> x, const Matrix& w) { return matmul(x, w.type, w.bytes, w.rows, w.cols); };

    // attn_q rows are [q_h0 | gate_h0 | q_h1 | gate_h1 | ...]: split per head, not in halves.
    const Floats qg = mm(h, L.wq);  // [n][Hq * 2D]
    Floats q(size_t(n * Hq * D)), gate(size_t(n * Hq * D));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t hh = 0; hh < Hq; ++hh) {
            const float* src = qg.data() + (i * Hq + hh) * 2 * D;
            std::copy(src, src + D, q.begin() + (i * Hq + hh) * D);
            std::copy(src + D, src + 2 * D, gate.begin() + (i * Hq + hh) * D);
        }
    Floats k = mm(h, L.wk), v = mm(h, L.wv);
    q = norm(q, D, L.q_norm);  // per head: every D-wide slice is a row
    k = norm(k, D, L.k_norm);

    // Partial NeoX RoPE, interleaved M-RoPE; a text token's three streams are all p.
    RopeParams rp;
    rp.n_rot = hp_.n_rot;
    rp.theta = hp_.rope_theta;
    rp.pairing = RopePairing::NeoX;
    rp.mrope = MRope::Interleaved;
    rp.sections = hp_.mrope_sections;
    std::vector<int32_t> p3;
    for (int32_t p : pos) p3.insert(p3.end(), {p, p, p});
    q = rope(q, n, Hq, D, p3, rp);
    k = rope(k, n, Hk, D, p3, rp);
    if (opts_.f16_kv) {
        k = cast_round(k, DType::F16);
        v = cast_round(v, DType::F16);
    }
    kc.insert(kc.end(), k.begin(), k.end());
    vc.insert(vc.end(), v.begin(), v.end());

    AttnParams ap;
    ap.n_head = Hq;
    ap.n_head_kv = Hk;
    ap.head_dim = D;
    ap.head_dim_v = D;
    ap.scale = float(1.0 / std::sqrt(double(D)));
    Floats a = attention(q, pos, kc, vc, k_pos, ap);  // [n][Hq * D]
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(double(a[i]) * sigmoid_d(gate[i]));  // output gate
    return mm(a, L.wo);
}

// Dense SwiGLU, or the MoE block (docs/models/qwen35.md §2.3): softmax router over all experts, top-k,
// renormalised weights, plus the shared expert scaled by sigmoid(shared_expert_gate . x).
Floats Qwen35Reference::ffn_block(const Layer& L, std::span<const float> h) const {
    const int64_t E = hp_.n_embd;
    auto mm = [](std::span<const float> x, const Matrix& w) { return matmul(x, w.type, w.bytes, w.rows, w.cols); };
    auto swiglu_mlp = [&](std::span<const float> x, const Matrix& g, const Matrix& u, const Matrix& d) {
        return mm(swiglu(mm(x, g), mm(x, u)), d);
    };
    if (hp_.n_expert == 0) return swiglu_mlp(h, L.ffn_gate, L.ffn_up, L.ffn_down);

    const int64_t n = int64_t(h.size()) / E, X = hp_.n_expert;
    Floats out(h.size());
    std::vector<double> prob(static_cast<size_t>(X)), acc(static_cast<size_t>(E));
    std::vector<int32_t> order(static_cast<size_t>(X));
    for (int64_t i = 0; i < n; ++i) {
        const std::span<const float> x = row_of(h, E, i);
        const Floats logits = mm(x, L.router);
        const double mx = *std::max_element(logits.begin(), logits.end());
        double sum = 0.0;
        for (int64_t e = 0; e < X; ++e) sum += (prob[size_t(e)] = std::exp(double(logits[size_t(e)]) - mx));
        for (double& p : prob) p /= sum;
        // Top-k by probability, the lower id first on ties.
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return prob[size_t(a)] > prob[size_t(b)]; });
        double chosen = 0.0;
        for (int64_t j = 0; j < hp_.n_expert_used; ++j) chosen += prob[size_t(order[size_t(j)])];
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < hp_.n_expert_used; ++j) {
            const Expert& ex = L.experts[size_t(order[size_t(j)])];
            const double wgt = prob[size_t(order[size_t(j)])] / chosen;  // renormalised (norm_topk_prob)
            const Floats y = swiglu_mlp(x, ex.gate, ex.up, ex.down);
            for (int64_t c = 0; c < E; ++c) acc[size_t(c)] += wgt * y[size_t(c)];
        }
        const Floats s = swiglu_mlp(x, L.sh_gate, L.sh_up, L.sh_down);
        const double sg = sigmoid_d(mm(x, L.sh_router)[0]);
        for (int64_t c = 0; c < E; ++c) out[size_t(i * E + c)] = float(acc[size_t(c)] + sg * s[size_t(c)]);
    }
    return out;
}

Qwen35Output Qwen35Reference::forward(std::span<const int32_t> tokens, Qwen35Trace* trace) const {
    return run(tokens, nullptr, trace);
}

Qwen35Output Qwen35Reference::forward(std::span<const int32_t> tokens, Qwen35Cache& cache, Qwen35Trace* trace) const {
    return run(tokens, &cache, trace);
}

Qwen35Output Qwen35Reference::run(std::span<const int32_t> tokens, Qwen35Cache* cache, Qwen35Trace* trace) const {
    const int64_t n = int64_t(tokens.size()), E = hp_.n_embd;
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp_.n_vocab, "token id out of range");
    if (cache && cache->gdn.empty()) {
        cache->k.resize(size_t(hp_.n_layer));
        cache->v.resize(size_t(hp_.n_layer));
        cache->gdn.resize(size_t(hp_.n_layer));
    }
    auto name = [&](const char* what, const Floats& value, int64_t il = -1) {
        if (trace) (*trace)[il < 0 ? std::string(what) : std::string(what) + "-" + std::to_string(il)] = value;
    };
    auto mm = [](std::span<const float> x, const Matrix& w) { return matmul(x, w.type, w.bytes, w.rows, w.cols); };
    const int64_t pos0 = cache ? cache->n_past : 0;
    std::vector<int32_t> pos(static_cast<size_t>(n)), k_pos(static_cast<size_t>(pos0 + n));
    std::iota(pos.begin(), pos.end(), int32_t(pos0));
    std::iota(k_pos.begin(), k_pos.end(), 0);
    const GdnDims dims = gdn_dims();

    Floats x = get_rows(tok_embd_.type, tok_embd_.bytes, E, tokens);  // [n][E], no embedding scale
    name("inp_embd", x);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        const Layer& L = layers_[size_t(il)];
        const Floats h = norm(x, E, L.attn_norm);
        name("attn_norm", h, il);
        Floats o;
        if (L.recurrent) {
            GdnState fresh;
            GdnState& st = cache ? cache->gdn[size_t(il)] : fresh;
            const Floats y = gated_delta_net(mm(h, L.qkv), mm(h, L.gate_z), mm(h, L.beta), mm(h, L.alpha), L.gdn, dims, st);
            o = mm(y, L.out);
            name("linear_attn_out", o, il);
        } else {
            Floats fk, fv;
            Floats& kc = cache ? cache->k[size_t(il)] : fk;
            Floats& vc = cache ? cache->v[size_t(il)] : fv;
            o = attention_block(L, h, pos, kc, vc, k_pos);
            name("attn_output", o, il);
        }
        x = add(x, o, E);
        name("attn_residual", x, il);
        const Floats h2 = norm(x, E, L.post_norm);  // post_attention_layernorm = the pre-FFN norm
        name("attn_post_norm", h2, il);
        const Floats f = ffn_block(L, h2);
        name("ffn_out", f, il);
        x = add(x, f, E);
        name("l_out", x, il);
    }
    if (cache) cache->n_past += n;

    Qwen35Output out;
    out.hidden = norm(x, E, output_norm_);
    out.hidden_pre_norm = std::move(x);
    out.logits = mm(out.hidden, output_);
    name("result_norm", out.hidden);
    name("result_output", out.logits);
    return out;
}

std::vector<int32_t> Qwen35Reference::generate(std::span<const int32_t> prompt, int n) const {
    TDM_ASSERT_MSG(!prompt.empty(), "generate needs a prompt");
    std::vector<int32_t> out;
    Qwen35Cache cache;
    Floats logits = forward(prompt, cache).logits;
    while (int(out.size()) < n) {
        const std::span<const float> last(logits.data() + logits.size() - size_t(hp_.n_vocab), size_t(hp_.n_vocab));
        out.push_back(argmax(last, hp_.n_vocab)[0]);
        if (int(out.size()) == n) break;
        const int32_t one[1] = {out.back()};
        logits = forward(one, cache).logits;
    }
    return out;
}

// ===== MTP head ====================================================================================

Qwen35MtpOutput Qwen35Reference::mtp_forward(std::span<const int32_t> tokens, std::span<const float> hidden,
                                             std::span<const int32_t> positions, Qwen35MtpCache& cache) const {
    TDM_ASSERT_MSG(hp_.has_mtp, "the model has no MTP head");
    const int64_t n = int64_t(tokens.size()), E = hp_.n_embd;
    TDM_ASSERT(int64_t(hidden.size()) == n * E && int64_t(positions.size()) == n);
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp_.n_vocab, "token id out of range");
    auto mm = [](std::span<const float> x, const Matrix& w) { return matmul(x, w.type, w.bytes, w.rows, w.cols); };
    const Layer& L = layers_.back();

    // z = fc(concat[enorm(embed(t)), hnorm(h)]): embedding part first (docs/models/qwen35.md pitfall 8).
    const Floats e = get_rows(tok_embd_.type, tok_embd_.bytes, E, tokens);
    Floats z = mm(concat(norm(e, E, L.enorm), E, norm(hidden, E, L.hnorm), E), L.eh_proj);
    // One full-attention decoder layer over the MTP layer's own cache.
    cache.pos.insert(cache.pos.end(), positions.begin(), positions.end());
    z = add(z, attention_block(L, norm(z, E, L.attn_norm), positions, cache.k, cache.v, cache.pos), E);
    z = add(z, ffn_block(L, norm(z, E, L.post_norm)), E);
    Qwen35MtpOutput out;
    out.hidden = norm(z, E, L.head_norm);  // mtp.norm: the hidden that chains to the next step
    out.logits = mm(out.hidden, output_);  // shared LM head
    return out;
}

Qwen35MtpOutput Qwen35Reference::mtp_step(int32_t token, std::span<const float> hidden, int32_t position,
                                          Qwen35MtpCache& cache) const {
    const int32_t t[1] = {token}, p[1] = {position};
    return mtp_forward(t, hidden, p, cache);
}

Qwen35MtpOutput Qwen35Reference::mtp_prefill(std::span<const int32_t> prompt, std::span<const float> trunk_hidden,
                                             Qwen35MtpCache& cache) const {
    const int64_t n = int64_t(prompt.size()), E = hp_.n_embd;
    TDM_ASSERT(int64_t(trunk_hidden.size()) == n * E);
    if (n < 2) return {};
    std::vector<int32_t> positions(static_cast<size_t>(n - 1));
    std::iota(positions.begin(), positions.end(), 1);  // pair (h_i, x_{i+1}) at i + 1
    return mtp_forward(prompt.subspan(1), trunk_hidden.first(size_t((n - 1) * E)), positions, cache);
}

std::vector<int32_t> Qwen35Reference::mtp_draft(int32_t token, std::span<const float> hidden, int32_t position, int k,
                                                Qwen35MtpCache& cache) const {
    std::vector<int32_t> drafts;
    Floats h(hidden.begin(), hidden.end());
    for (int j = 0; j < k; ++j) {
        Qwen35MtpOutput o = mtp_step(token, h, position + j, cache);
        token = argmax(o.logits, hp_.n_vocab)[0];
        drafts.push_back(token);
        h = std::move(o.hidden);  // chaining feeds the post-mtp.norm output (docs/models/qwen35.md §4)
    }
    return drafts;
}

}  // namespace tdm::ref
