// SPDX-License-Identifier: Apache-2.0
// tests/models/qwen-nextn/qwen35_mtp_reference_test.cpp: the reference MTP head (docs/models/qwen35.md §4): a batch of pairs
// equals step-by-step, the prefill uses llama.cpp's positions and its KV matters, drafts are valid
// ids that depend on the hidden input; on the repeating model the head drafts exactly the trunk's
// greedy continuation; and a greedy speculative loop (MTP drafts, one verify pass, snapshot +
// replay of the recurrent state on rejection) emits exactly the plain greedy tokens.
// To add an MTP property: make a model with test35::make() and drive mtp_* as below.
#include "support/qwen35_synth_helpers.h"

#include <algorithm>

using namespace tdm;
using namespace tdm::synth;
using tdm::ref::Floats;
using tdm::ref::Qwen35Reference;
using tdm::test35::make;
using tdm::test35::preset;
using tdm::test35::row;

namespace {

const std::vector<int32_t> kPrompt = {12, 300, 5, 5, 508, 42, 220, 77};

struct SpecResult {
    std::vector<int32_t> tokens;  // the first n_new emitted tokens
    std::vector<int32_t> committed;  // prompt + every token the trunk has processed
    ref::Qwen35MtpCache mtp;         // the MTP cache at the end
    int drafted = 0, accepted = 0;
};

// Greedy speculative decoding with the MTP head as drafter, written from docs/models/qwen35.md §4 and
// docs/models/common.md §6.1/§7: prefill the trunk and the MTP KV, then per round draft k tokens, verify
// [next, d1..dk] in one trunk pass, accept the matching prefix, roll the trunk back by snapshot +
// replay when a draft is rejected, and commit the MTP pairs (h_p, x_{p+1}) of accepted tokens.
// With spoil, the second draft of every third round is replaced by a wrong id, so that rounds
// with partial acceptance happen even where the head always agrees or never does.
SpecResult speculative_greedy(const Qwen35Reference& m, const std::vector<int32_t>& prompt, int n_new, int k,
                              bool spoil = false) {
    const int64_t E = m.hparams().n_embd, V = m.hparams().n_vocab;
    SpecResult r;
    ref::Qwen35Cache trunk;
    const ref::Qwen35Output pre = m.forward(prompt, trunk);
    ref::Qwen35MtpCache mtp;
    m.mtp_prefill(prompt, pre.hidden, mtp);
    int32_t next = ref::argmax(row(pre.logits, V, int64_t(prompt.size()) - 1), V)[0];
    Floats h_prev(pre.hidden.end() - E, pre.hidden.end());  // trunk hidden that produced `next`
    int32_t pos = int32_t(prompt.size());                   // position of `next`
    r.tokens.push_back(next);
    r.committed = prompt;
    int round = 0;
    while (int(r.tokens.size()) < n_new) {
        // Draft; keep only the entry of the real pair (h_prev, next) in the MTP cache.
        const int64_t keep = mtp.size() + 1;
        std::vector<int32_t> drafts = m.mtp_draft(next, h_prev, pos, k, mtp);
        mtp.truncate(keep);
        if (spoil && ++round % 3 == 1) drafts[1] = (drafts[1] + 1) % int32_t(V);
        for (int32_t d : drafts) EXPECT_TRUE(d >= 0 && d < V);
        // Verify [next, d1..dk] in one pass.
        const ref::Qwen35Cache snapshot = trunk;
        std::vector<int32_t> batch = {next};
        batch.insert(batch.end(), drafts.begin(), drafts.end());
        ref::Qwen35Output v = m.forward(batch, trunk);
        const std::vector<int32_t> best = ref::argmax(v.logits, V);
        int acc = 0;
        while (acc < k && best[size_t(acc)] == drafts[size_t(acc)]) ++acc;
        r.drafted += k;
        r.accepted += acc;
        if (acc < k) {  // the GDN state saw rejected tokens: restore and replay the accepted ones
            trunk = snapshot;
            v = m.forward(std::span(batch).first(size_t(acc + 1)), trunk);
        }
        // Commit the MTP pairs (h at pos + j, d_{j+1}) at position pos + j + 1 for accepted drafts.
        if (acc > 0) {
            std::vector<int32_t> toks(drafts.begin(), drafts.begin() + acc), ps;
            for (int j = 0; j < acc; ++j) ps.push_back(pos + j + 1);
            m.mtp_forward(toks, std::span(v.hidden).first(size_t(acc * E)), ps, mtp);
        }
        r.committed.insert(r.committed.end(), batch.begin(), batch.begin() + acc + 1);
        for (int j = 0; j < acc; ++j) r.tokens.push_back(drafts[size_t(j)]);
        next = best[size_t(acc)];
        r.tokens.push_back(next);
        h_prev.assign(v.hidden.begin() + acc * E, v.hidden.begin() + (acc + 1) * E);
        pos += acc + 1;
        EXPECT_EQ(trunk.n_past, pos);
        EXPECT_EQ(mtp.size(), pos - 1);  // pairs at positions 1 .. pos - 1
    }
    r.tokens.resize(size_t(n_new));
    r.mtp = std::move(mtp);
    return r;
}

}  // namespace

TEST(Qwen35MtpReference, a_batch_of_pairs_equals_the_same_pairs_one_step_at_a_time) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const Qwen35Reference m = make(preset(name), {});
        ASSERT_TRUE(m.hparams().has_mtp);
        const ref::Qwen35Output t = m.forward(kPrompt);
        ref::Qwen35MtpCache batch_cache, step_cache;
        const ref::Qwen35MtpOutput batch = m.mtp_prefill(kPrompt, t.hidden, batch_cache);
        const int64_t E = m.hparams().n_embd, V = m.hparams().n_vocab;
        for (size_t i = 0; i + 1 < kPrompt.size(); ++i) {
            const ref::Qwen35MtpOutput one = m.mtp_step(kPrompt[i + 1], row(t.hidden, E, int64_t(i)), int32_t(i + 1), step_cache);
            EXPECT_TRUE(std::ranges::equal(one.logits, row(batch.logits, V, int64_t(i)))) << i;
            EXPECT_TRUE(std::ranges::equal(one.hidden, row(batch.hidden, E, int64_t(i)))) << i;
        }
        EXPECT_EQ(batch_cache.pos, step_cache.pos);
        EXPECT_EQ(batch_cache.k, step_cache.k);
    }
}

TEST(Qwen35MtpReference, prefill_stores_pairs_at_llama_cpp_positions_and_its_kv_changes_the_drafts) {
    const Qwen35Reference m = make(preset("tiny"), {});
    const int64_t E = m.hparams().n_embd, V = m.hparams().n_vocab;
    const ref::Qwen35Output t = m.forward(kPrompt);
    ref::Qwen35MtpCache cache;
    m.mtp_prefill(kPrompt, t.hidden, cache);
    std::vector<int32_t> want(kPrompt.size() - 1);
    for (size_t i = 0; i < want.size(); ++i) want[i] = int32_t(i + 1);
    EXPECT_EQ(cache.pos, want);  // pair (h_i, x_{i+1}) at position i + 1
    EXPECT_EQ(int64_t(cache.k.size()), cache.size() * m.hparams().n_head_kv * m.hparams().head_dim);

    const int32_t next = ref::argmax(row(t.logits, V, int64_t(kPrompt.size()) - 1), V)[0];
    const std::span<const float> h_last = row(t.hidden, E, int64_t(kPrompt.size()) - 1);
    ref::Qwen35MtpCache empty;
    const Floats with_kv = m.mtp_step(next, h_last, int32_t(kPrompt.size()), cache).logits;
    const Floats without_kv = m.mtp_step(next, h_last, int32_t(kPrompt.size()), empty).logits;
    EXPECT_GT(ref::nmse(without_kv, with_kv), 1e-4);  // an unfilled MTP cache attends to nothing else

    // truncate() drops entries of rejected drafts.
    cache.truncate(3);
    EXPECT_EQ(cache.size(), 3);
    EXPECT_EQ(cache.pos, (std::vector<int32_t>{1, 2, 3}));
}

TEST(Qwen35MtpReference, drafts_are_valid_ids_and_depend_on_the_hidden_input) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const Qwen35Reference m = make(preset(name), {});
        const int64_t E = m.hparams().n_embd, V = m.hparams().n_vocab;
        const ref::Qwen35Output t = m.forward(kPrompt);
        const std::span<const float> h = row(t.hidden, E, int64_t(kPrompt.size()) - 1);
        ref::Qwen35MtpCache c1;
        m.mtp_prefill(kPrompt, t.hidden, c1);
        ref::Qwen35MtpCache c2 = c1, c3 = c1;
        const std::vector<int32_t> d = m.mtp_draft(7, h, int32_t(kPrompt.size()), 4, c1);
        ASSERT_EQ(d.size(), 4u);
        for (int32_t x : d) EXPECT_TRUE(x >= 0 && x < V);
        EXPECT_EQ(c1.size(), int64_t(kPrompt.size()) - 1 + 4);
        EXPECT_EQ(m.mtp_draft(7, h, int32_t(kPrompt.size()), 4, c2), d);  // deterministic
        // The hidden half of eh_proj is used: another hidden gives other logits.
        const Floats other(h.size(), 0.5f);
        ref::Qwen35MtpCache c4 = c3;
        const Floats from_other = m.mtp_step(7, other, int32_t(kPrompt.size()), c3).logits;
        const Floats from_h = m.mtp_step(7, h, int32_t(kPrompt.size()), c4).logits;
        EXPECT_GT(ref::nmse(from_other, from_h), 1e-4);
    }
}

TEST(Qwen35MtpReference, on_the_repeating_model_mtp_drafts_are_the_trunks_greedy_continuation) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        SCOPED_TRACE(name);
        const Qwen35Shape s = preset(name);
        Qwen35SynthOptions o;
        o.repeating = true;
        for (bool hf : {false, true}) {
            const Qwen35Reference m = make(s, o, hf);
            const int64_t E = m.hparams().n_embd, V = m.hparams().n_vocab;
            const ref::Qwen35Output t = m.forward(kPrompt);
            ref::Qwen35MtpCache cache;
            m.mtp_prefill(kPrompt, t.hidden, cache);
            const int32_t next = ref::argmax(row(t.logits, V, int64_t(kPrompt.size()) - 1), V)[0];
            const std::vector<int32_t> drafts =
                m.mtp_draft(next, row(t.hidden, E, int64_t(kPrompt.size()) - 1), int32_t(kPrompt.size()), 6, cache);
            std::vector<int32_t> greedy = m.generate(kPrompt, 7);
            greedy.erase(greedy.begin());  // generate()'s first token is `next`
            EXPECT_EQ(drafts, greedy);
            int32_t prev = next;
            for (int32_t d : drafts) {
                EXPECT_EQ(d, qwen35_repeat_successor(s, o, prev));
                prev = d;
            }
        }
    }
}

TEST(Qwen35MtpReference, greedy_speculative_decoding_with_mtp_drafts_equals_plain_greedy) {
    for (const char* name : {"tiny", "tiny-moe"}) {
        for (bool repeating : {false, true}) {
            SCOPED_TRACE(std::string(name) + (repeating ? " repeating" : " random"));
            Qwen35SynthOptions o;
            o.repeating = repeating;
            const Qwen35Reference m = make(preset(name), o);
            const std::vector<int32_t> plain = m.generate(kPrompt, 16);
            const SpecResult spec = speculative_greedy(m, kPrompt, 16, 3);
            EXPECT_EQ(spec.tokens, plain);
            const double rate = double(spec.accepted) / double(spec.drafted);
            RecordProperty(std::string("acceptance_") + name + (repeating ? "_repeating" : "_random"),
                           fmt::format("{:.2f}", rate));
            if (repeating) {
                EXPECT_EQ(spec.accepted, spec.drafted);  // the head drafts succ(t) like the trunk
            }
            // Partially accepted rounds: same tokens, and the MTP cache built pair by pair during
            // decoding equals a prefill over everything committed (bit for bit).
            const SpecResult spoiled = speculative_greedy(m, kPrompt, 16, 3, /*spoil=*/true);
            EXPECT_EQ(spoiled.tokens, plain);
            if (repeating) {
                EXPECT_GT(spoiled.accepted, 0);
                EXPECT_LT(spoiled.accepted, spoiled.drafted);
            }
            ref::Qwen35MtpCache fresh;
            m.mtp_prefill(spoiled.committed, m.forward(spoiled.committed).hidden, fresh);
            EXPECT_EQ(fresh.pos, spoiled.mtp.pos);
            EXPECT_EQ(fresh.k, spoiled.mtp.k);
            EXPECT_EQ(fresh.v, spoiled.mtp.v);
        }
    }
}

TEST(Qwen35MtpReference, the_trunk_does_not_depend_on_whether_the_file_carries_the_head) {
    Qwen35SynthOptions with, without;
    without.mtp = false;
    const Qwen35Reference a = make(preset("tiny-moe"), with), b = make(preset("tiny-moe"), without);
    EXPECT_TRUE(a.hparams().has_mtp);
    EXPECT_FALSE(b.hparams().has_mtp);
    EXPECT_EQ(a.forward(kPrompt).logits, b.forward(kPrompt).logits);
}
