// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/synth/gemma4_shape_test.cpp: the Gemma 4 presets hold the contract's values
// (notes/gemma4_contract.md for the tiny ones, docs/models/gemma4.md §1 for the released ones; the large
// ones are only checked here, never written), validate_gemma4 refuses bad shapes naming the
// field, and the per-row type fallback and file types are llama-quantize's.
#include "gemma4synth_helpers.h"

#include "formats/expect_error.h"

#include <functional>

using namespace tdm;
using namespace tdm::synth;
using tdm::g4test::preset;
using tdm::test::fails_with;

namespace {

std::vector<int> full_layers(const Gemma4Shape& s) {
    std::vector<int> out;
    for (int il = 0; il < s.n_layer; ++il)
        if (!s.is_swa(il)) out.push_back(il);
    return out;
}

void expect_common(const Gemma4Shape& s) {
    EXPECT_EQ(s.rope_theta_swa, 1e4f);
    EXPECT_EQ(s.rope_theta_full, 1e6f);
    EXPECT_EQ(s.partial_rotary_factor, 0.25f);
    EXPECT_EQ(s.final_logit_softcapping, 30.0f);
    EXPECT_EQ(s.rms_eps, 1e-6f);
}

}  // namespace

TEST(Gemma4Shape, tiny_presets_are_the_contract_test_shapes) {
    const Gemma4Shape e2b = preset("tiny-e2b");
    EXPECT_EQ(e2b.n_vocab, 1024);
    EXPECT_EQ(e2b.n_embd, 64);
    EXPECT_EQ(e2b.n_layer, 5);
    EXPECT_EQ(gemma4_layer_pattern(e2b), "S S F S F");
    EXPECT_EQ(e2b.n_head, 4);
    EXPECT_EQ(e2b.n_head_kv_swa, 1);
    EXPECT_EQ(e2b.n_head_kv_full, 1);
    EXPECT_EQ(e2b.head_dim_swa, 32);
    EXPECT_EQ(e2b.head_dim_full, 64);
    EXPECT_FALSE(e2b.k_eq_v);
    EXPECT_EQ(e2b.n_ff, 128);
    EXPECT_TRUE(e2b.double_wide_mlp);
    EXPECT_EQ(e2b.n_ff_at(2), 128);
    EXPECT_EQ(e2b.n_ff_at(3), 256);
    EXPECT_EQ(e2b.n_ff_at(4), 256);
    EXPECT_FALSE(e2b.is_moe());
    EXPECT_EQ(e2b.n_kv_shared, 2);
    EXPECT_FALSE(e2b.is_kv_shared(2));
    EXPECT_TRUE(e2b.is_kv_shared(3));
    EXPECT_EQ(e2b.n_embd_per_layer, 16);
    EXPECT_EQ(e2b.n_vocab_per_layer, 1024);
    EXPECT_EQ(e2b.sliding_window, 8);
    EXPECT_EQ(e2b.n_ctx_train, 4096);
    EXPECT_EQ(e2b.n_rot_full_pairs(), 8);
    expect_common(e2b);

    const Gemma4Shape d31 = preset("tiny-31b");
    EXPECT_EQ(d31.n_vocab, 1024);
    EXPECT_EQ(d31.n_embd, 64);
    EXPECT_EQ(gemma4_layer_pattern(d31), "S S S S S F");
    EXPECT_EQ(d31.n_head, 4);
    EXPECT_EQ(d31.n_head_kv_swa, 2);
    EXPECT_EQ(d31.n_head_kv_full, 1);
    EXPECT_EQ(d31.head_dim_swa, 32);
    EXPECT_EQ(d31.head_dim_full, 64);
    EXPECT_TRUE(d31.k_eq_v);
    EXPECT_FALSE(d31.has_v(5));
    EXPECT_TRUE(d31.has_v(4));
    EXPECT_EQ(d31.n_ff, 128);
    EXPECT_FALSE(d31.double_wide_mlp);
    EXPECT_EQ(d31.n_kv_shared, 0);
    EXPECT_EQ(d31.n_embd_per_layer, 0);
    EXPECT_EQ(d31.sliding_window, 8);
    EXPECT_EQ(d31.n_ctx_train, 4096);
    expect_common(d31);

    const Gemma4Shape moe = preset("tiny-26b");
    EXPECT_EQ(gemma4_layer_pattern(moe), "S S S S S F");
    EXPECT_EQ(moe.n_head_kv_swa, 2);
    EXPECT_EQ(moe.n_head_kv_full, 1);
    EXPECT_TRUE(moe.k_eq_v);
    EXPECT_EQ(moe.n_ff, 64);
    EXPECT_EQ(moe.n_expert, 4);
    EXPECT_EQ(moe.n_expert_used, 2);
    EXPECT_EQ(moe.n_ff_expert, 32);
    EXPECT_EQ(moe.n_kv_shared, 0);
    EXPECT_EQ(moe.n_embd_per_layer, 0);
    expect_common(moe);
}

TEST(Gemma4Shape, released_presets_follow_the_spec_table) {
    const Gemma4Shape e2b = preset("e2b"), e4b = preset("e4b"), moe = preset("26b-a4b"), d31 = preset("31b");
    for (const Gemma4Shape* s : {&e2b, &e4b, &moe, &d31}) {
        EXPECT_EQ(s->n_vocab, 262144);
        EXPECT_EQ(s->head_dim_swa, 256);
        EXPECT_EQ(s->head_dim_full, 512);
        EXPECT_EQ(s->n_rot_full_pairs(), 64);
        expect_common(*s);
        EXPECT_TRUE(validate_gemma4(*s, {}).ok());
    }
    EXPECT_EQ(e2b.n_embd, 1536);
    EXPECT_EQ(e2b.n_layer, 35);
    EXPECT_EQ(e2b.n_head, 8);
    EXPECT_EQ(e2b.n_head_kv_swa, 1);
    EXPECT_EQ(e2b.n_head_kv_full, 1);
    EXPECT_FALSE(e2b.k_eq_v);
    EXPECT_EQ(e2b.n_ff, 6144);
    EXPECT_EQ(e2b.n_ff_at(15), 12288);
    EXPECT_EQ(e2b.n_ff_at(14), 6144);
    EXPECT_EQ(e2b.n_kv_shared, 20);
    EXPECT_EQ(e2b.n_embd_per_layer, 256);
    EXPECT_EQ(e2b.sliding_window, 512);
    EXPECT_EQ(e2b.n_ctx_train, 131072);
    EXPECT_EQ(full_layers(e2b), (std::vector<int>{4, 9, 14, 19, 24, 29, 34}));

    EXPECT_EQ(e4b.n_embd, 2560);
    EXPECT_EQ(e4b.n_layer, 42);
    EXPECT_EQ(e4b.n_head_kv_swa, 2);
    EXPECT_EQ(e4b.n_head_kv_full, 2);
    EXPECT_EQ(e4b.n_ff, 10240);
    EXPECT_FALSE(e4b.double_wide_mlp);
    EXPECT_EQ(e4b.n_kv_shared, 18);
    EXPECT_EQ(e4b.n_embd_per_layer, 256);
    EXPECT_EQ(full_layers(e4b), (std::vector<int>{5, 11, 17, 23, 29, 35, 41}));

    EXPECT_EQ(moe.n_embd, 2816);
    EXPECT_EQ(moe.n_layer, 30);
    EXPECT_EQ(moe.n_head, 16);
    EXPECT_EQ(moe.n_head_kv_swa, 8);
    EXPECT_EQ(moe.n_head_kv_full, 2);
    EXPECT_TRUE(moe.k_eq_v);
    EXPECT_EQ(moe.n_ff, 2112);
    EXPECT_EQ(moe.n_expert, 128);
    EXPECT_EQ(moe.n_expert_used, 8);
    EXPECT_EQ(moe.n_ff_expert, 704);
    EXPECT_EQ(moe.n_kv_shared, 0);
    EXPECT_EQ(moe.n_embd_per_layer, 0);
    EXPECT_EQ(moe.sliding_window, 1024);
    EXPECT_EQ(moe.n_ctx_train, 262144);
    EXPECT_EQ(full_layers(moe), (std::vector<int>{5, 11, 17, 23, 29}));

    EXPECT_EQ(d31.n_embd, 5376);
    EXPECT_EQ(d31.n_layer, 60);
    EXPECT_EQ(d31.n_head, 32);
    EXPECT_EQ(d31.n_head_kv_swa, 16);
    EXPECT_EQ(d31.n_head_kv_full, 4);
    EXPECT_TRUE(d31.k_eq_v);
    EXPECT_EQ(d31.n_ff, 21504);
    EXPECT_FALSE(d31.is_moe());
    EXPECT_EQ(d31.sliding_window, 1024);
    EXPECT_EQ(full_layers(d31).size(), 10u);
    EXPECT_EQ(full_layers(d31).back(), 59);

    EXPECT_EQ(gemma4_preset_names().size(), 7u);
    EXPECT_TRUE(fails_with(gemma4_preset("e3b"), {"unknown gemma4 preset 'e3b'", "tiny-e2b", "31b"}));
}

TEST(Gemma4Shape, validate_refuses_bad_shapes_naming_the_field) {
    struct Case {
        const char* needle;
        std::function<void(Gemma4Shape&, Gemma4SynthOptions&)> edit;
    };
    const std::vector<Case> cases = {
        {"n_embd must be positive", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_embd = 0; }},
        {"n_head_kv_full must be positive", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_head_kv_full = 0; }},
        {"sliding_window must be positive", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.sliding_window = -1; }},
        {"n_vocab 300 is too small", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_vocab = 300; }},
        {"layer_types has 4 entries for n_layer 5",
         [](Gemma4Shape& s, Gemma4SynthOptions&) { s.layer_types.pop_back(); }},
        {"n_head 4 is not a multiple of n_head_kv_swa 3",
         [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_head_kv_swa = s.n_head_kv_full = 3; }},
        {"head_dim_full 63 must be even", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.head_dim_full = 63; }},
        {"n_head_kv_full 2 differs from n_head_kv_swa 1 without k_eq_v",
         [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_head_kv_full = 2; }},
        {"n_kv_shared 5 must be in [0, n_layer 5)", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_kv_shared = 5; }},
        {"KV-shared layer 2 (full) has no earlier non-shared layer",
         [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_kv_shared = 3; }},
        {"n_expert_used 3 must be in [1, n_expert 2]",
         [](Gemma4Shape& s, Gemma4SynthOptions&) {
             s.n_expert = 2;
             s.n_expert_used = 3;
             s.n_ff_expert = 8;
         }},
        {"n_ff_expert must be positive",
         [](Gemma4Shape& s, Gemma4SynthOptions&) {
             s.n_expert = 2;
             s.n_expert_used = 1;
         }},
        {"without experts", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_expert_used = 1; }},
        {"n_vocab_per_layer must be positive", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.n_vocab_per_layer = 0; }},
        {"partial_rotary_factor 0 must be in (0, 1]",
         [](Gemma4Shape& s, Gemma4SynthOptions&) { s.partial_rotary_factor = 0.0f; }},
        {"rope_theta_swa must be positive", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.rope_theta_swa = -1.0f; }},
        {"rms_eps must be positive", [](Gemma4Shape& s, Gemma4SynthOptions&) { s.rms_eps = 0.0f; }},
        {"final_logit_softcapping must be >= 0",
         [](Gemma4Shape& s, Gemma4SynthOptions&) { s.final_logit_softcapping = -30.0f; }},
        {"weight type iq2_xxs", [](Gemma4Shape&, Gemma4SynthOptions& o) { o.weight_type = DType(16); }},
        {"n_threads must be >= 0", [](Gemma4Shape&, Gemma4SynthOptions& o) { o.n_threads = -1; }},
    };
    const Gemma4Shape base = preset("tiny-e2b");
    ASSERT_TRUE(validate_gemma4(base, {}).ok());
    for (const Case& c : cases) {
        Gemma4Shape s = base;
        Gemma4SynthOptions o;
        c.edit(s, o);
        EXPECT_TRUE(fails_with(validate_gemma4(s, o), c.needle)) << c.needle;
        // The writers check first: nothing is written for a bad shape.
        EXPECT_TRUE(fails_with(synth_gemma4_gguf("/nonexistent-dir/x.gguf", s, o), c.needle)) << c.needle;
    }
}

TEST(Gemma4Shape, rope_freqs_switch_off_the_unrotated_slots) {
    const std::vector<float> tiny = gemma4_rope_freqs(preset("tiny-31b"));
    ASSERT_EQ(tiny.size(), 32u);
    for (size_t i = 0; i < tiny.size(); ++i) EXPECT_EQ(tiny[i], i < 8 ? 1.0f : 1e30f) << i;
    const std::vector<float> big = gemma4_rope_freqs(preset("31b"));
    ASSERT_EQ(big.size(), 256u);
    EXPECT_EQ(big[63], 1.0f);
    EXPECT_EQ(big[64], 1e30f);
}
