// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_reference_test.cpp: the GLM-OCR reference (tests/support/glm_reference.h) on
// synthetic models: it reads the shape back, continuing with a cache equals one full pass, the GGUF
// copy (q/k rows in NeoX order) and the HF copy (adjacent pairs) give the same logits while the
// wrong pairing does not, the MTP layer's batch equals its steps, and on a repeating model the
// trunk follows the successor rule and the MTP layer drafts that same continuation.
// To add a property: synthesize with make() and call the reference.
#include <gtest/gtest.h>

#include "glm-ocr/synth/glm_synth.h"
#include "support/fixtures.h"
#include "support/glm_reference.h"

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

using namespace tdm;
using tdm::ref::Floats;
using tdm::ref::GlmReference;

namespace {

const std::vector<int32_t> kTokens = {12, 300, 5, 5, 508, 42, 220, 77, 1, 400, 63};

synth::GlmShape tiny() {
    auto s = synth::glm_preset("tiny");
    if (!s.ok()) throw std::runtime_error(s.error().message());
    return *s;
}

std::string synth_model(const synth::GlmShape& s, const synth::GlmSynthOptions& o, bool hf) {
    const std::string path = test::make_temp_dir("glm-ref") + (hf ? "/hf" : "/m.gguf");
    const Status st = hf ? synth::synth_glm_hf(path, s, o) : synth::synth_glm_gguf(path, s, o);
    // No ASSERT in a value-returning helper: throwing fails the calling test with the message.
    if (!st.ok()) throw std::runtime_error(st.error().message());
    return path;
}

GlmReference open_reference(const std::string& path, ref::GlmRefOptions ro = {}) {
    auto r = GlmReference::open(path, ro);
    if (!r.ok()) throw std::runtime_error(r.error().message());
    return std::move(*r);
}

GlmReference make(const synth::GlmShape& s, const synth::GlmSynthOptions& o = {}, bool hf = false,
                  ref::GlmRefOptions ro = {}) {
    return open_reference(synth_model(s, o, hf), ro);
}

std::span<const float> row(const Floats& x, int64_t n_cols, int64_t i) {
    return std::span<const float>(x.data() + i * n_cols, size_t(n_cols));
}

Floats rows(const Floats& x, int64_t n_cols, int64_t first, int64_t count) {
    return Floats(x.begin() + first * n_cols, x.begin() + (first + count) * n_cols);
}

}  // namespace

TEST(GlmReference, it_reads_the_shape_of_both_layouts) {
    const synth::GlmShape s = tiny();
    for (bool hf : {false, true}) {
        SCOPED_TRACE(hf ? "hf" : "gguf");
        const GlmReference r = make(s, {}, hf);
        const ref::GlmHparams& hp = r.hparams();
        EXPECT_EQ(hp.n_vocab, s.n_vocab);
        EXPECT_EQ(hp.n_embd, s.n_embd);
        EXPECT_EQ(hp.n_layer, s.n_layer);
        EXPECT_EQ(hp.n_nextn, 1);
        EXPECT_TRUE(r.has_mtp());
        EXPECT_EQ(hp.n_head, s.n_head);
        EXPECT_EQ(hp.n_head_kv, s.n_head_kv);
        EXPECT_EQ(hp.head_dim, s.head_dim);
        EXPECT_EQ(hp.n_ff, s.n_ff);
        EXPECT_EQ(hp.n_rot, s.head_dim);  // partial_rotary_factor 1
        EXPECT_TRUE(hp.mrope);
        EXPECT_EQ(hp.sections, (std::array<int, 4>{s.sections[0], s.sections[1], s.sections[2], 0}));
        EXPECT_DOUBLE_EQ(hp.rope_theta, double(s.rope_theta));
        EXPECT_FLOAT_EQ(hp.rms_eps, s.rms_eps);
        EXPECT_FALSE(hp.tied);
        EXPECT_EQ(hp.pairing, hf ? ref::RopePairing::Adjacent : ref::RopePairing::NeoX);
    }
}

TEST(GlmReference, a_chunked_forward_equals_a_full_one) {
    const GlmReference r = make(tiny());
    const int64_t V = r.hparams().n_vocab, E = r.hparams().n_embd, n = int64_t(kTokens.size());
    const ref::GlmOutput full = r.forward(kTokens);
    ASSERT_EQ(int64_t(full.logits.size()), n * V);
    ASSERT_EQ(int64_t(full.hidden.size()), n * E);

    ref::GlmCache cache;
    const std::span<const int32_t> all(kTokens);
    const ref::GlmOutput a = r.forward(all.first(4), cache);
    EXPECT_EQ(cache.n_past, 4);
    const ref::GlmOutput b = r.forward(all.subspan(4, 6), cache);
    const ref::GlmOutput c = r.forward(all.subspan(10), cache);
    EXPECT_EQ(cache.n_past, n);
    Floats logits = a.logits, hidden = a.hidden;
    for (const ref::GlmOutput* o : {&b, &c}) {
        logits.insert(logits.end(), o->logits.begin(), o->logits.end());
        hidden.insert(hidden.end(), o->hidden.begin(), o->hidden.end());
    }
    // Every op works row by row over the same keys, so the sums are the same ones.
    EXPECT_LT(ref::nmse(logits, full.logits), 1e-12);
    EXPECT_LT(ref::nmse(hidden, full.hidden), 1e-12);
    EXPECT_EQ(logits, full.logits);
}

TEST(GlmReference, gguf_and_hf_copies_of_a_model_give_the_same_logits) {
    // The GGUF holds q/k rows permuted into NeoX order and ropes (i, i + R/2); the HF copy keeps
    // HF's order and ropes (2i, 2i + 1): the same rotation of the same values (docs/models/glm-ocr.md §2.1).
    const synth::GlmShape s = tiny();
    const GlmReference g = make(s), h = make(s, {}, /*hf=*/true);
    const ref::GlmOutput a = g.forward(kTokens), b = h.forward(kTokens);
    const double d = ref::nmse(a.logits, b.logits);
    RecordProperty("nmse_logits", fmt::format("{:.3g}", d));
    EXPECT_LT(d, 1e-10);
    EXPECT_LT(ref::nmse(a.hidden, b.hidden), 1e-10);

    // And the MTP layers agree, prefill and drafts.
    ref::GlmMtpCache ca, cb;
    const ref::GlmMtpOutput ma = g.mtp_prefill(kTokens, a.hidden, ca), mb = h.mtp_prefill(kTokens, b.hidden, cb);
    EXPECT_LT(ref::nmse(ma.logits, mb.logits), 1e-10);
    EXPECT_LT(ref::nmse(ma.hidden, mb.hidden), 1e-10);
    const int64_t E = s.n_embd, n = int64_t(kTokens.size());
    EXPECT_EQ(g.mtp_draft(7, row(a.hidden, E, n - 1), int32_t(n), 3, ca),
              h.mtp_draft(7, row(b.hidden, E, n - 1), int32_t(n), 3, cb));
}

TEST(GlmReference, gguf_and_hf_copies_with_qkv_biases_agree_and_the_biases_matter) {
    // GLM-4-0414's biases: in the GGUF the q/k bias elements move with their rows (NeoX order),
    // so both copies are the same function; without the biases it is another one.
    const synth::GlmShape s = tiny();
    synth::GlmSynthOptions o;
    o.attn_bias = true;
    const GlmReference g = make(s, o), h = make(s, o, /*hf=*/true), plain = make(s);
    const Floats a = g.forward(kTokens).logits;
    EXPECT_LT(ref::nmse(a, h.forward(kTokens).logits), 1e-10);
    EXPECT_GT(ref::nmse(a, plain.forward(kTokens).logits), 1e-4);
}

TEST(GlmReference, the_wrong_rope_pairing_changes_the_logits) {
    // Guards the previous test: were the pairing not to matter on these weights, GGUF and HF
    // agreeing would prove nothing about the permutation.
    const synth::GlmShape s = tiny();
    const std::string gguf = synth_model(s, {}, false), hf = synth_model(s, {}, true);
    const Floats right = open_reference(gguf).forward(kTokens).logits;
    ref::GlmRefOptions adjacent, neox;
    adjacent.pairing_override = ref::RopePairing::Adjacent;
    neox.pairing_override = ref::RopePairing::NeoX;
    const double d_gguf = ref::nmse(open_reference(gguf, adjacent).forward(kTokens).logits, right);
    const double d_hf = ref::nmse(open_reference(hf, neox).forward(kTokens).logits, right);
    RecordProperty("nmse_gguf_adjacent", fmt::format("{:.3g}", d_gguf));
    RecordProperty("nmse_hf_neox", fmt::format("{:.3g}", d_hf));
    EXPECT_GT(d_gguf, 1e-4);
    EXPECT_GT(d_hf, 1e-4);
}

TEST(GlmReference, an_f16_kv_cache_stays_close_to_f32) {
    const synth::GlmShape s = tiny();
    const std::string path = synth_model(s, {}, false);
    ref::GlmRefOptions f16;
    f16.f16_kv = true;
    const Floats a = open_reference(path).forward(kTokens).logits;
    const Floats b = open_reference(path, f16).forward(kTokens).logits;
    const double d = ref::nmse(b, a);
    RecordProperty("nmse", fmt::format("{:.3g}", d));
    EXPECT_GT(d, 0.0);  // the option does round
    EXPECT_LT(d, 1e-5);
}

TEST(GlmReference, a_batch_of_mtp_pairs_equals_the_same_pairs_step_by_step) {
    const GlmReference r = make(tiny());
    const int64_t V = r.hparams().n_vocab, E = r.hparams().n_embd, n = int64_t(kTokens.size());
    const ref::GlmOutput trunk = r.forward(kTokens);

    ref::GlmMtpCache batch;
    const ref::GlmMtpOutput all = r.mtp_prefill(kTokens, trunk.hidden, batch);
    ASSERT_EQ(batch.size(), n - 1);
    ASSERT_EQ(int64_t(all.logits.size()), (n - 1) * V);
    ASSERT_EQ(int64_t(all.hidden.size()), (n - 1) * E);
    EXPECT_EQ(batch.pos.front(), 1);
    EXPECT_EQ(batch.pos.back(), int32_t(n - 1));

    ref::GlmMtpCache steps;
    for (int64_t i = 0; i + 1 < n; ++i) {
        SCOPED_TRACE(i);
        const int32_t t[1] = {kTokens[size_t(i + 1)]}, p[1] = {int32_t(i + 1)};
        const ref::GlmMtpOutput o = r.mtp_forward(t, row(trunk.hidden, E, i), p, steps);
        EXPECT_LT(ref::nmse(o.logits, rows(all.logits, V, i, 1)), 1e-12);
        EXPECT_LT(ref::nmse(o.hidden, rows(all.hidden, E, i, 1)), 1e-12);
    }
    EXPECT_EQ(steps.k, batch.k);
    EXPECT_EQ(steps.v, batch.v);
    EXPECT_EQ(steps.pos, batch.pos);

    // A draft chain appends its entries; truncating them away restores the prefilled cache.
    ref::GlmMtpCache drafted = batch;
    EXPECT_EQ(r.mtp_draft(kTokens.back(), row(trunk.hidden, E, n - 1), int32_t(n), 3, drafted).size(), 3u);
    EXPECT_EQ(drafted.size(), n + 2);
    EXPECT_EQ(drafted.pos.back(), int32_t(n + 2));
    drafted.truncate(batch.size());
    EXPECT_EQ(drafted.k, batch.k);
    EXPECT_EQ(drafted.v, batch.v);
    EXPECT_EQ(drafted.pos, batch.pos);
}

TEST(GlmReference, the_mtp_chain_feeds_the_pre_norm_block_output) {
    // Step j + 1 of mtp_draft takes step j's un-normalised block output (docs/models/glm-ocr.md §3.2).
    const GlmReference r = make(tiny());
    const int64_t E = r.hparams().n_embd, V = r.hparams().n_vocab, n = int64_t(kTokens.size());
    const ref::GlmOutput trunk = r.forward(kTokens);
    ref::GlmMtpCache prefilled;
    r.mtp_prefill(kTokens, trunk.hidden, prefilled);

    ref::GlmMtpCache chain = prefilled, manual = prefilled;
    const std::vector<int32_t> drafts = r.mtp_draft(9, row(trunk.hidden, E, n - 1), int32_t(n), 2, chain);
    const int32_t t0[1] = {9}, p0[1] = {int32_t(n)};
    const ref::GlmMtpOutput s0 = r.mtp_forward(t0, row(trunk.hidden, E, n - 1), p0, manual);
    const int32_t d0 = ref::argmax(s0.logits, V)[0];
    const int32_t t1[1] = {d0}, p1[1] = {int32_t(n + 1)};
    const ref::GlmMtpOutput s1 = r.mtp_forward(t1, s0.hidden, p1, manual);
    EXPECT_EQ(drafts, (std::vector<int32_t>{d0, ref::argmax(s1.logits, V)[0]}));
    EXPECT_EQ(chain.k, manual.k);
    // The hidden it returns is not the normalised one: its rows are not of unit RMS.
    double ss = 0.0;
    for (float x : s0.hidden) ss += double(x) * double(x);
    EXPECT_GT(std::abs(ss / double(E) - 1.0), 1e-3);
}

TEST(GlmReference, a_repeating_model_generates_successors_and_the_mtp_layer_drafts_them) {
    const synth::GlmShape s = tiny();
    synth::GlmSynthOptions o;
    o.repeating = true;
    for (bool hf : {false, true}) {
        SCOPED_TRACE(hf ? "hf" : "gguf");
        const GlmReference r = make(s, o, hf);
        const int64_t E = s.n_embd, n = int64_t(kTokens.size());
        const std::vector<int32_t> gen = r.generate(kTokens, 6);
        ASSERT_EQ(gen.size(), 6u);
        int32_t prev = kTokens.back();
        for (int32_t t : gen) {
            EXPECT_EQ(t, synth::glm_repeat_successor(s, o, prev));
            prev = t;
        }

        // Draft from (x_n = gen[0], h_{n-1}) at position n: the trunk's next three tokens.
        const ref::GlmOutput trunk = r.forward(kTokens);
        ref::GlmMtpCache mtp;
        r.mtp_prefill(kTokens, trunk.hidden, mtp);
        const std::vector<int32_t> drafts = r.mtp_draft(gen[0], row(trunk.hidden, E, n - 1), int32_t(n), 3, mtp);
        EXPECT_EQ(drafts, std::vector<int32_t>(gen.begin() + 1, gen.begin() + 4));
    }
}
