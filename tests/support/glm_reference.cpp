// SPDX-License-Identifier: Apache-2.0
// tests/support/glm_reference.cpp: the forward passes of GlmReference: the GLM-OCR trunk
// (docs/models/glm-ocr.md §2) and its NextN/MTP layer (§3.2), composed from the ops of reference.h. Loading
// is in glm_reference_load.cpp.
#include "support/glm_reference.h"

#include <cmath>
#include <numeric>

namespace tdm::ref {
namespace {

// x . W^T for any of GlmReference's (private) Matrix views.
template <class M>
Floats proj(std::span<const float> x, const M& w) {
    return matmul(x, w.type, w.bytes, w.rows, w.cols);
}

}  // namespace

Floats GlmReference::norm(std::span<const float> x, const Floats& w) const {
    return rms_norm(x, hp_.n_embd, hp_.rms_eps, NormWeight::Plain, w);
}

// One sandwich block (§2) over x [n][E] at positions pos; K/V of these rows are appended to
// kc/vc, whose entries sit at k_pos (empty: entry j at position j).
Floats GlmReference::block(const Layer& L, std::span<const float> x, std::span<const int32_t> pos, Floats& kc,
                           Floats& vc, std::span<const int32_t> k_pos, std::span<const int32_t> thw) const {
    const int64_t n = int64_t(pos.size()), E = hp_.n_embd, D = hp_.head_dim, Hq = hp_.n_head, Hk = hp_.n_head_kv;
    const Floats a = norm(x, L.attn_norm);
    Floats q = proj(a, L.wq), k = proj(a, L.wk), v = proj(a, L.wv);
    if (!L.bq.empty()) q = add(q, L.bq, Hq * D);
    if (!L.bk.empty()) k = add(k, L.bk, Hk * D);
    if (!L.bv.empty()) v = add(v, L.bv, Hk * D);
    RopeParams rp;
    rp.n_rot = hp_.n_rot;
    rp.theta = hp_.rope_theta;
    rp.pairing = hp_.pairing;
    std::vector<int32_t> rpos(pos.begin(), pos.end());
    if (hp_.mrope) {
        // A text token's three streams are all p (§2.2); the sections only matter for images.
        rp.mrope = MRope::Contiguous;
        rp.sections = hp_.sections;
        rpos.clear();
        for (int32_t p : pos) rpos.insert(rpos.end(), {p, p, p});
        if (!thw.empty()) rpos.assign(thw.begin(), thw.end());  // image prompts (§2.2)
    }
    q = rope(q, n, Hq, D, rpos, rp);
    k = rope(k, n, Hk, D, rpos, rp);
    if (opts_.f16_kv) {
        k = cast_round(k, DType::F16);
        v = cast_round(v, DType::F16);
    }
    kc.insert(kc.end(), k.begin(), k.end());
    vc.insert(vc.end(), v.begin(), v.end());

    AttnParams ap;
    ap.n_head = Hq;
    ap.n_head_kv = Hk;  // GQA: q head h reads kv head h / (Hq / Hk)
    ap.head_dim = D;
    ap.head_dim_v = D;
    ap.scale = float(1.0 / std::sqrt(double(D)));
    const Floats o = proj(attention(q, pos, kc, vc, k_pos, ap), L.wo);
    // The norms sit on the sublayer OUTPUTS, before the residual add (§2).
    const Floats h = add(x, norm(o, L.attn_out_norm), E);
    const Floats m = norm(h, L.ffn_norm);
    const Floats f = proj(swiglu(proj(m, L.gate), proj(m, L.up)), L.down);
    return add(h, norm(f, L.ffn_out_norm), E);
}

GlmOutput GlmReference::forward(std::span<const int32_t> tokens) const { return run(tokens, nullptr); }

GlmOutput GlmReference::forward(std::span<const int32_t> tokens, GlmCache& cache) const { return run(tokens, &cache); }

GlmOutput GlmReference::run(std::span<const int32_t> tokens, GlmCache* cache) const {
    const int64_t n = int64_t(tokens.size()), E = hp_.n_embd;
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp_.n_vocab, "token id out of range");
    if (cache && cache->k.empty()) {
        cache->k.resize(size_t(hp_.n_layer));
        cache->v.resize(size_t(hp_.n_layer));
    }
    const int64_t pos0 = cache ? cache->n_past : 0;
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), int32_t(pos0));

    Floats x = get_rows(tok_embd_.type, tok_embd_.bytes, E, tokens);  // no embedding scale
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        Floats fk, fv;
        Floats& kc = cache ? cache->k[size_t(il)] : fk;
        Floats& vc = cache ? cache->v[size_t(il)] : fv;
        x = block(layers_[size_t(il)], x, pos, kc, vc, {});
    }
    if (cache) cache->n_past += n;

    GlmOutput out;
    out.hidden = norm(x, output_norm_);
    out.logits = proj(out.hidden, output_);
    return out;
}

GlmOutput GlmReference::forward_embedded(std::span<const int32_t> tokens, std::span<const float* const> rows,
                                         std::span<const int32_t> thw) const {
    const int64_t n = int64_t(tokens.size()), E = hp_.n_embd;
    TDM_ASSERT_MSG(int64_t(rows.size()) == n && int64_t(thw.size()) == 3 * n, "one row slot and (t, h, w) per token");
    TDM_ASSERT_MSG(hp_.mrope, "image positions need the M-RoPE sections");
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp_.n_vocab, "token id out of range");
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), 0);
    Floats x = get_rows(tok_embd_.type, tok_embd_.bytes, E, tokens);
    for (int64_t i = 0; i < n; ++i)  // image rows are used as they are: no scale (§5.7)
        if (rows[size_t(i)]) std::copy(rows[size_t(i)], rows[size_t(i)] + E, x.begin() + i * E);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
        Floats kc, vc;
        x = block(layers_[size_t(il)], x, pos, kc, vc, {}, thw);
    }
    GlmOutput out;
    out.hidden = norm(x, output_norm_);
    out.logits = proj(out.hidden, output_);
    return out;
}

std::vector<int32_t> GlmReference::generate(std::span<const int32_t> prompt, int n) const {
    TDM_ASSERT_MSG(!prompt.empty(), "generate needs a prompt");
    std::vector<int32_t> out;
    GlmCache cache;
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

// ===== MTP layer ===================================================================================

GlmMtpOutput GlmReference::mtp_forward(std::span<const int32_t> tokens, std::span<const float> hidden,
                                       std::span<const int32_t> positions, GlmMtpCache& cache) const {
    TDM_ASSERT_MSG(has_mtp(), "the model has no MTP layer");
    const int64_t n = int64_t(tokens.size()), E = hp_.n_embd;
    TDM_ASSERT(int64_t(hidden.size()) == n * E && int64_t(positions.size()) == n);
    for (int32_t t : tokens) TDM_ASSERT_MSG(t >= 0 && t < hp_.n_vocab, "token id out of range");
    const Layer& L = layers_.back();

    // Embedding first in the concat (§6.5); VL's position-0 masking is left out on purpose (header).
    const Floats e = get_rows(L.embed.type, L.embed.bytes, E, tokens);
    Floats z = proj(concat(norm(e, L.enorm), E, norm(hidden, L.hnorm), E), L.eh_proj);
    cache.pos.insert(cache.pos.end(), positions.begin(), positions.end());
    z = block(L, z, positions, cache.k, cache.v, cache.pos);
    GlmMtpOutput out;
    out.logits = proj(norm(z, L.head_norm), L.head);
    out.hidden = std::move(z);  // un-normalised: what VL chains into the next step (§3.2)
    return out;
}

GlmMtpOutput GlmReference::mtp_prefill(std::span<const int32_t> prompt, std::span<const float> trunk_hidden,
                                       GlmMtpCache& cache) const {
    const int64_t n = int64_t(prompt.size()), E = hp_.n_embd;
    TDM_ASSERT(int64_t(trunk_hidden.size()) == n * E);
    if (n < 2) return {};
    std::vector<int32_t> positions(static_cast<size_t>(n - 1));
    std::iota(positions.begin(), positions.end(), 1);  // pair (h_i, x_{i+1}) at i + 1
    return mtp_forward(prompt.subspan(1), trunk_hidden.first(size_t((n - 1) * E)), positions, cache);
}

std::vector<int32_t> GlmReference::mtp_draft(int32_t token, std::span<const float> hidden, int32_t position, int k,
                                             GlmMtpCache& cache) const {
    TDM_ASSERT(int64_t(hidden.size()) == hp_.n_embd);
    std::vector<int32_t> drafts;
    Floats h(hidden.begin(), hidden.end());
    for (int j = 0; j < k; ++j) {
        const int32_t t[1] = {token}, p[1] = {position + j};
        GlmMtpOutput o = mtp_forward(t, h, p, cache);
        token = argmax(o.logits, hp_.n_vocab)[0];
        drafts.push_back(token);
        h = std::move(o.hidden);
    }
    return drafts;
}

}  // namespace tdm::ref
