// SPDX-License-Identifier: Apache-2.0
// tests/common/reference_test.cpp: small hand-computed checks of the CPU reference ops
// (tests/support/reference.h). Shader tests trust these references, so each op gets at least
// one case whose answer was worked out by hand from docs/models/common.md, not by running the code.
// To add a case: pick inputs whose result you can write down (identity rotations, equal
// logits, one visible key) and compare with EXPECT_NEAR at float precision.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "common/fp16.h"
#include "common/quant.h"
#include "support/reference.h"

using namespace tdm;
using ref::Floats;

namespace {

constexpr float kTol = 1e-6f;

void expect_near(const Floats& got, const Floats& want, float tol = kTol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "index " << i;
}

std::vector<uint8_t> f32_bytes(const Floats& x) {
    return quantize_matrix(DType::F32, x.data(), 1, int64_t(x.size()));
}

}  // namespace

// ===== lookup and matmul ========================================================================

TEST(Reference, get_rows_picks_rows_by_id) {
    const Floats table = {0, 1, 2, 10, 11, 12, 20, 21, 22};  // 3 rows x 3
    const std::vector<int32_t> ids = {2, 0, 2};
    expect_near(ref::get_rows(DType::F32, f32_bytes(table), 3, ids),
                {20, 21, 22, 0, 1, 2, 20, 21, 22});
}

TEST(Reference, get_rows_dequantizes_typed_rows) {
    // Two Q8_0 rows whose amax is 127: d = 1 exactly, so they decode to the integers given.
    Floats row(64);
    for (int i = 0; i < 64; ++i) row[size_t(i)] = float((i * 7) % 200 - 100);
    row[0] = -127.0f;
    row[32] = 127.0f;
    const std::vector<uint8_t> table = quantize_matrix(DType::Q8_0, row.data(), 2, 32);
    const std::vector<int32_t> ids = {1};
    expect_near(ref::get_rows(DType::Q8_0, table, 32, ids), Floats(row.begin() + 32, row.end()));
}

TEST(Reference, select_rows_and_view_cols) {
    const Floats x = {0, 1, 2, 10, 11, 12};  // 2 rows x 3
    const std::vector<int32_t> ids = {1, 1, 0};
    expect_near(ref::select_rows(x, 3, ids), {10, 11, 12, 10, 11, 12, 0, 1, 2});
    expect_near(ref::view_cols(x, 3, 1, 2), {1, 2, 11, 12});
}

TEST(Reference, matmul_is_x_times_w_transposed) {
    const Floats w = {1, 2, 3,    // out 0
                      0, -1, 4};  // out 1
    const Floats x = {1, 1, 1,    // token 0
                      2, 0, -1};  // token 1
    // token 0: (6, 3); token 1: (2 - 3, -4) = (-1, -4)
    expect_near(ref::matmul(x, DType::F32, f32_bytes(w), 2, 3), {6, 3, -1, -4});
}

TEST(Reference, matmul_uses_exact_dequantized_weights) {
    Floats w(2 * 256), x(3 * 256);
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * float(i));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * float(i));
    const std::vector<uint8_t> q = quantize_matrix(DType::Q4_K, w.data(), 2, 256);
    Floats wd(w.size());
    dequantize_row(DType::Q4_K, q.data(), wd.data(), int64_t(wd.size()));
    expect_near(ref::matmul(x, DType::Q4_K, q, 2, 256),
                ref::matmul(x, DType::F32, f32_bytes(wd), 2, 256), 1e-5f);
}

// ===== elementwise ==============================================================================

TEST(Reference, add_and_mul_broadcast_a_single_row) {
    const Floats a = {1, 2, 3, 4, 5, 6};
    expect_near(ref::add(a, Floats{10, 20, 30}, 3), {11, 22, 33, 14, 25, 36});
    expect_near(ref::mul(a, Floats{1, 0, -1}, 3), {1, 0, -3, 4, 0, -6});
    expect_near(ref::add(a, a, 3), {2, 4, 6, 8, 10, 12});
    expect_near(ref::scale(a, 0.5f), {0.5f, 1, 1.5f, 2, 2.5f, 3});
}

TEST(Reference, sub_neg_add_scalar_and_softcap) {
    const Floats a = {1, 2, 3, 4};
    expect_near(ref::sub(a, Floats{1, 1}, 2), {0, 1, 2, 3});
    expect_near(ref::neg(a), {-1, -2, -3, -4});
    expect_near(ref::add_scalar(a, -0.5f), {0.5f, 1.5f, 2.5f, 3.5f});
    // 30 tanh(x / 30): 30 tanh(1) = 22.847825 for x = 30; huge inputs saturate at +-30.
    expect_near(ref::softcap(Floats{30.0f, 1e9f, -1e9f, 0.0f}, 30.0f),
                {22.847825f, 30.0f, -30.0f, 0.0f}, 1e-5f);
}

TEST(Reference, activations_match_hand_values) {
    const Floats x = {0.0f, 1.0f, -1.0f};
    // silu(1) = 1 / (1 + e^-1) = 0.7310586; silu(-1) = -1 / (1 + e) = -0.2689414
    expect_near(ref::silu(x), {0.0f, 0.7310586f, -0.2689414f});
    // gelu_tanh(1) = 0.5 (1 + tanh(0.7978846 * 1.044715)) = 0.8411920
    expect_near(ref::gelu_tanh(x), {0.0f, 0.8411920f, -0.1588080f});
    expect_near(ref::sigmoid(x), {0.5f, 0.7310586f, 0.2689414f});
    expect_near(ref::exp(x), {1.0f, 2.7182818f, 0.3678794f});
    // softplus(0) = ln 2; large inputs must not overflow and large negative ones stay >= 0.
    const Floats sp = ref::softplus(Floats{0.0f, 1000.0f, -1000.0f, 2.0f});
    EXPECT_NEAR(sp[0], 0.6931472f, kTol);
    EXPECT_EQ(sp[1], 1000.0f);
    EXPECT_EQ(sp[2], 0.0f);
    EXPECT_NEAR(sp[3], 2.1269280f, kTol);  // ln(1 + e^2)
}

TEST(Reference, gated_mlp_activations) {
    const Floats gate = {1.0f, 0.0f}, up = {2.0f, 5.0f};
    expect_near(ref::swiglu(gate, up), {1.4621172f, 0.0f});  // 2 silu(1)
    expect_near(ref::geglu(gate, up), {1.6823840f, 0.0f});   // 2 gelu_tanh(1)
}

// ===== norms ====================================================================================

TEST(Reference, rms_norm_modes) {
    const Floats x = {3, 4};  // mean(x^2) = 12.5, 1/rms = 0.2828427
    expect_near(ref::rms_norm(x, 2, 0.0f), {0.8485281f, 1.1313708f});
    expect_near(ref::rms_norm(x, 2, 0.0f, ref::NormWeight::Plain, Floats{2.0f, 0.5f}),
                {1.6970563f, 0.5656854f});
    // (1 + w) with w = (1, -0.5) is the plain weight (2, 0.5).
    expect_near(ref::rms_norm(x, 2, 0.0f, ref::NormWeight::OnePlus, Floats{1.0f, -0.5f}),
                {1.6970563f, 0.5656854f});
    // eps enters under the root: x = (1, 1), eps = 3 -> 1 / sqrt(1 + 3) = 0.5.
    expect_near(ref::rms_norm(Floats{1, 1}, 2, 3.0f), {0.5f, 0.5f});
}

TEST(Reference, l2_norm_divides_by_the_euclidean_length) {
    expect_near(ref::l2_norm(Floats{3, 4}, 2, 0.0f), {0.6f, 0.8f});
    expect_near(ref::l2_norm(Floats{0, 0}, 2, 1e-6f), {0.0f, 0.0f});  // eps keeps zero rows finite
    expect_near(ref::l2_norm(Floats{3, 4}, 2, 11.0f), {0.5f, 2.0f / 3.0f});  // sqrt(25 + 11) = 6
}

TEST(Reference, gated_rms_norm_normalizes_each_group_and_gates_with_silu) {
    // Two groups of 2: o = (3, 4) -> rms-normed (0.8485281, 1.1313708); o = (1, 1) -> (1, 1).
    const Floats o = {3, 4, 1, 1}, z = {0, 1, 1, -1}, w = {2, 3};
    // silu(0) = 0, silu(1) = 0.7310586, silu(-1) = -0.2689414
    expect_near(ref::gated_rms_norm(o, z, 4, 2, w, 0.0f),
                {0.0f, 3 * 1.1313708f * 0.7310586f, 2 * 0.7310586f, 3 * -0.2689414f});
}

// ===== RoPE =====================================================================================

namespace {
ref::RopeParams rope_params(int64_t n_rot, ref::RopePairing pairing, double theta = 10000.0) {
    ref::RopeParams p;
    p.n_rot = n_rot;
    p.pairing = pairing;
    p.theta = theta;
    return p;
}
}  // namespace

TEST(Reference, rope_at_position_zero_is_identity) {
    Floats x(2 * 3 * 8);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 7.5f;
    const std::vector<int32_t> pos = {0, 0};
    for (auto pairing : {ref::RopePairing::NeoX, ref::RopePairing::Adjacent})
        expect_near(ref::rope(x, 2, 3, 8, pos, rope_params(6, pairing)), x);
}

TEST(Reference, rope_neox_and_adjacent_pairing_on_four_dims) {
    // head_dim 4, theta 10000, position 1: inv_freq = (1, 10000^-0.5 = 0.01).
    const Floats x = {1, 2, 3, 4};
    const std::vector<int32_t> pos = {1};
    const float c1 = std::cos(1.0f), s1 = std::sin(1.0f);
    const float c2 = std::cos(0.01f), s2 = std::sin(0.01f);
    // NeoX: pairs (0, 2) at angle 1 and (1, 3) at angle 0.01.
    expect_near(ref::rope(x, 1, 1, 4, pos, rope_params(4, ref::RopePairing::NeoX)),
                {1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2});
    // Adjacent: pairs (0, 1) at angle 1 and (2, 3) at angle 0.01.
    expect_near(ref::rope(x, 1, 1, 4, pos, rope_params(4, ref::RopePairing::Adjacent)),
                {1 * c1 - 2 * s1, 2 * c1 + 1 * s1, 3 * c2 - 4 * s2, 4 * c2 + 3 * s2});
}

TEST(Reference, rope_partial_rotary_passes_the_tail_through_and_rotates_each_head) {
    // head_dim 6, n_rot 2: only (0, 1) rotate, with inv_freq 1; two heads, position 2.
    const Floats x = {1, 0, 7, 8, 9, 10, 0, 1, -7, -8, -9, -10};
    const std::vector<int32_t> pos = {2};
    const float c = std::cos(2.0f), s = std::sin(2.0f);
    for (auto pairing : {ref::RopePairing::NeoX, ref::RopePairing::Adjacent})
        expect_near(ref::rope(x, 1, 2, 6, pos, rope_params(2, pairing)),
                    {c, s, 7, 8, 9, 10, -s, c, -7, -8, -9, -10});
}

TEST(Reference, rope_rotates_each_token_by_its_own_position) {
    const Floats x = {1, 2, 3, 4, 1, 2, 3, 4};  // two tokens, one head of 4
    const std::vector<int32_t> pos = {0, 2}, p2 = {2};
    const ref::RopeParams p = rope_params(4, ref::RopePairing::NeoX);
    const Floats y = ref::rope(x, 2, 1, 4, pos, p);
    expect_near(Floats(y.begin(), y.begin() + 4), {1, 2, 3, 4});
    expect_near(Floats(y.begin() + 4, y.end()), ref::rope(Floats{1, 2, 3, 4}, 1, 1, 4, p2, p));
}

TEST(Reference, rope_freq_factors_divide_and_freq_scale_multiplies_the_angle) {
    const Floats x = {1, 2, 3, 4};
    const std::vector<int32_t> p1 = {1}, p2 = {2}, p3 = {3};
    // Divisor 1e30 freezes slot 1 (Gemma 4 proportional RoPE): NeoX dims 1 and 3 unchanged.
    const Floats ff = {1.0f, 1e30f};
    ref::RopeParams p = rope_params(4, ref::RopePairing::NeoX);
    p.freq_factors = ff;
    const float c = std::cos(1.0f), s = std::sin(1.0f);
    expect_near(ref::rope(x, 1, 1, 4, p1, p), {1 * c - 3 * s, 2, 3 * c + 1 * s, 4});
    // Divisor 2 at position 2 equals divisor 1 at position 1.
    const Floats ff2 = {2.0f, 2.0f};
    p.freq_factors = ff2;
    expect_near(ref::rope(x, 1, 1, 4, p2, p),
                ref::rope(x, 1, 1, 4, p1, rope_params(4, ref::RopePairing::NeoX)));
    // freq_scale 1/3 at position 3 equals position 1.
    ref::RopeParams q = rope_params(4, ref::RopePairing::Adjacent);
    q.freq_scale = 1.0 / 3.0;
    expect_near(ref::rope(x, 1, 1, 4, p3, q),
                ref::rope(x, 1, 1, 4, p1, rope_params(4, ref::RopePairing::Adjacent)));
}

namespace {

// Three or four streams per token (token-major), every stream equal to pos.
std::vector<int32_t> equal_streams(const std::vector<int32_t>& pos, int n_streams) {
    std::vector<int32_t> out;
    for (const int32_t p : pos) out.insert(out.end(), size_t(n_streams), p);
    return out;
}

// For each frequency slot of a NeoX rope applied to x = all ones: did its pair (s, s + n_rot/2)
// move? Both stay 1 only for an angle that is a multiple of 2 pi.
std::vector<bool> rotated_slots(const Floats& y, int64_t n_rot) {
    std::vector<bool> r;
    for (int64_t s = 0; s < n_rot / 2; ++s)
        r.push_back(std::fabs(y[size_t(s)] - 1.0f) > 1e-6f ||
                    std::fabs(y[size_t(s + n_rot / 2)] - 1.0f) > 1e-6f);
    return r;
}

}  // namespace

TEST(Reference, mrope_with_equal_positions_equals_plain_rope) {
    // Qwen3.5: head_dim 256, n_rot 64, interleaved [11, 11, 10]; GLM: full 128, [16, 24, 24].
    struct Case {
        int64_t head_dim, n_rot;
        ref::MRope mode;
        std::array<int, 4> sections;
        double theta;
    } cases[] = {
        {256, 64, ref::MRope::Interleaved, {11, 11, 10, 0}, 1e7},
        {128, 128, ref::MRope::Contiguous, {16, 24, 24, 0}, 10000.0},
    };
    const std::vector<int32_t> pos = {0, 5, 17};
    for (const Case& c : cases) {
        Floats x(size_t(3 * 2 * c.head_dim));
        for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i));
        const ref::RopeParams plain = rope_params(c.n_rot, ref::RopePairing::NeoX, c.theta);
        ref::RopeParams m = plain;
        m.mrope = c.mode;
        m.sections = c.sections;
        const Floats want = ref::rope(x, 3, 2, c.head_dim, pos, plain);
        expect_near(ref::rope(x, 3, 2, c.head_dim, equal_streams(pos, 3), m), want);
        expect_near(ref::rope(x, 3, 2, c.head_dim, equal_streams(pos, 4), m), want);
    }
}

TEST(Reference, mrope_sections_pick_the_position_stream_per_slot) {
    // Only the h stream is non-zero, so exactly the slots that read h rotate.
    // Position 1000 keeps even the slowest slot's angle (1000 * 1e7^(-62/64)) far above 1e-6.
    const std::vector<int32_t> only_h = {0, 1000, 0};  // t, h, w for one token
    // Interleaved [11, 11, 10] over 32 slots: h owns slots 1, 4, ..., 31 (docs/models/common.md §2.5).
    {
        ref::RopeParams p = rope_params(64, ref::RopePairing::NeoX, 1e7);
        p.mrope = ref::MRope::Interleaved;
        p.sections = {11, 11, 10, 0};
        const std::vector<bool> r = rotated_slots(ref::rope(Floats(64, 1.0f), 1, 1, 64, only_h, p), 64);
        for (int s = 0; s < 32; ++s) EXPECT_EQ(r[size_t(s)], s % 3 == 1) << "slot " << s;
    }
    // Contiguous [16, 24, 24] over 64 slots: h owns slots 16..39.
    {
        ref::RopeParams p = rope_params(128, ref::RopePairing::NeoX);
        p.mrope = ref::MRope::Contiguous;
        p.sections = {16, 24, 24, 0};
        const std::vector<bool> r = rotated_slots(ref::rope(Floats(128, 1.0f), 1, 1, 128, only_h, p), 128);
        for (int s = 0; s < 64; ++s) EXPECT_EQ(r[size_t(s)], s >= 16 && s < 40) << "slot " << s;
    }
    // Contiguous [1, 1, 1, 1] over 4 slots with a 4th stream: slot 3 reads e.
    {
        ref::RopeParams p = rope_params(8, ref::RopePairing::NeoX);
        p.mrope = ref::MRope::Contiguous;
        p.sections = {1, 1, 1, 1};
        const std::vector<int32_t> only_e = {0, 0, 0, 1000};
        const std::vector<bool> r = rotated_slots(ref::rope(Floats(8, 1.0f), 1, 1, 8, only_e, p), 8);
        EXPECT_EQ(r, (std::vector<bool>{false, false, false, true}));
    }
    // Streams are token-major: token 0 at (0, 0, 0) stays put, token 1 at (0, 1000, 0) moves
    // its h slots (contiguous [1, 2, 1]: slots 1 and 2).
    {
        ref::RopeParams p = rope_params(8, ref::RopePairing::NeoX);
        p.mrope = ref::MRope::Contiguous;
        p.sections = {1, 2, 1, 0};
        const std::vector<int32_t> pos = {0, 0, 0, 0, 1000, 0};
        const Floats y = ref::rope(Floats(16, 1.0f), 2, 1, 8, pos, p);
        expect_near(Floats(y.begin(), y.begin() + 8), Floats(8, 1.0f));
        EXPECT_EQ(rotated_slots(Floats(y.begin() + 8, y.end()), 8),
                  (std::vector<bool>{false, true, true, false}));
    }
}

// ===== softmax and attention ====================================================================

TEST(Reference, softmax_rows_with_scale) {
    const float l3 = std::log(3.0f);
    expect_near(ref::softmax(Floats{0.0f, l3, 1000.0f, 1000.0f}, 2), {0.25f, 0.75f, 0.5f, 0.5f});
    expect_near(ref::softmax(Floats{0.0f, l3 / 2}, 2, 2.0f), {0.25f, 0.75f});
}

namespace {
ref::AttnParams attn(int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t head_dim_v) {
    ref::AttnParams p;
    p.n_head = n_head;
    p.n_head_kv = n_head_kv;
    p.head_dim = head_dim;
    p.head_dim_v = head_dim_v;
    return p;
}
}  // namespace

TEST(Reference, attention_with_one_key_returns_its_value) {
    const Floats q = {0.3f, -2.0f}, k = {5.0f, 1.0f}, v = {1.5f, -2.5f, 7.0f};
    const std::vector<int32_t> qp = {4}, kp = {};
    expect_near(ref::attention(q, qp, k, v, kp, attn(1, 1, 2, 3)), v);  // head_dim_v 3 != 2
}

TEST(Reference, attention_scale_and_causal_mask) {
    // Keys (1, 0) and (0, 0) at positions 0 and 1, values 1 and 0, query (1, 0), scale s:
    // weights softmax(s, 0) -> out = e^s / (e^s + 1). A query at position 0 sees key 0 only.
    const Floats q = {1, 0, 1, 0}, k = {1, 0, 0, 0}, v = {1, 0};
    const std::vector<int32_t> qp = {1, 0}, kp = {};
    ref::AttnParams p = attn(1, 1, 2, 1);
    p.scale = 0.5f;
    const float e = std::exp(0.5f);
    expect_near(ref::attention(q, qp, k, v, kp, p), {e / (e + 1), 1.0f});
}

TEST(Reference, attention_window_excludes_old_keys) {
    // Six keys at positions 0..5 with values 0..5, query at 5, window 2: sees keys 4 and 5 only.
    // A zero query gives equal logits, so the output is their mean 4.5 (all six would be 2.5).
    const Floats q = {0, 0}, k(12, 1.0f), v = {0, 1, 2, 3, 4, 5};
    const std::vector<int32_t> qp = {5}, kp = {};
    ref::AttnParams p = attn(1, 1, 2, 1);
    expect_near(ref::attention(q, qp, k, v, kp, p), {2.5f});
    p.window = 2;
    expect_near(ref::attention(q, qp, k, v, kp, p), {4.5f});
    // Explicit key positions: the same keys placed at 10..15 are all in the future of 5.
    const std::vector<int32_t> late = {10, 11, 12, 13, 14, 15};
    expect_near(ref::attention(q, qp, k, v, late, p), {0.0f});  // nothing visible -> zeros
}

TEST(Reference, attention_softcap_bounds_logits) {
    // q.k = 1000 for key 0 and 0 for key 1; softcap 1 maps the logits to tanh(1000) = 1 and 0.
    const Floats q = {1000, 0}, k = {1, 0, 0, 0}, v = {1, 0};
    const std::vector<int32_t> qp = {1}, kp = {};
    ref::AttnParams p = attn(1, 1, 2, 1);
    expect_near(ref::attention(q, qp, k, v, kp, p), {1.0f});  // uncapped: all weight on key 0
    p.softcap = 1.0f;
    const float e = std::exp(1.0f);
    expect_near(ref::attention(q, qp, k, v, kp, p), {e / (e + 1)});
    // The cap applies after the scale: scale 0.001 gives logit 1, capped to 2 tanh(0.5).
    p.scale = 0.001f;
    p.softcap = 2.0f;
    const float l = 2.0f * std::tanh(0.5f);
    expect_near(ref::attention(q, qp, k, v, kp, p), {std::exp(l) / (std::exp(l) + 1)});
}

TEST(Reference, attention_gqa_maps_query_heads_to_kv_heads) {
    // 4 query heads, 2 kv heads, one key: heads 0, 1 read kv head 0; heads 2, 3 read kv head 1.
    const Floats q(4 * 2, 0.5f), k = {1, 2, 3, 4}, v = {10, 11, 20, 21};
    const std::vector<int32_t> qp = {0}, kp = {};
    expect_near(ref::attention(q, qp, k, v, kp, attn(4, 2, 2, 2)), {10, 11, 10, 11, 20, 21, 20, 21});
}

// ===== layout, casts, selection =================================================================

TEST(Reference, concat_copy_and_casts) {
    expect_near(ref::concat(Floats{1, 2, 3, 4}, 2, Floats{9, 8}, 1), {1, 2, 9, 3, 4, 8});
    expect_near(ref::copy(Floats{1, -2}), {1, -2});
    // 0.1 is 0x2e66 in f16 (0.0999755859375) and 0x3dcd in bf16 (0.10009765625).
    const Floats x = {0.1f, 1.0f};
    EXPECT_EQ(ref::to_f16(x), (std::vector<uint16_t>{0x2e66, 0x3c00}));
    EXPECT_EQ(ref::to_bf16(x), (std::vector<uint16_t>{0x3dcd, 0x3f80}));
    EXPECT_EQ(ref::from_f16(ref::to_f16(x))[0], 0.0999755859375f);
    EXPECT_EQ(ref::from_bf16(ref::to_bf16(x))[0], 0.10009765625f);
    expect_near(ref::cast_round(x, DType::F16), {0.0999755859375f, 1.0f}, 0.0f);
    expect_near(ref::cast_round(x, DType::BF16), {0.10009765625f, 1.0f}, 0.0f);
    expect_near(ref::cast_round(x, DType::F32), x, 0.0f);
}

TEST(Reference, argmax_takes_the_first_maximum) {
    const Floats x = {1, 3, 3, 2, -1, -1, -5, -1};
    EXPECT_EQ(ref::argmax(x, 4), (std::vector<int32_t>{1, 0}));
}

TEST(Reference, top_k_sorts_descending_with_ties_by_lower_index) {
    const Floats x = {1, 3, 3, 2, 5, 0, 0, 0, 0, 0};
    EXPECT_EQ(ref::top_k(x, 5, 3), (std::vector<int32_t>{4, 1, 2, 0, 1, 2}));
}

TEST(Reference, comparison_helpers) {
    EXPECT_EQ(ref::nmse(Floats{1, 2}, Floats{1, 2}), 0.0);
    EXPECT_DOUBLE_EQ(ref::nmse(Floats{0, 1}, Floats{0, 2}), 0.25);  // 1 / 4
    EXPECT_DOUBLE_EQ(ref::max_abs_diff(Floats{1, 5}, Floats{1.5f, 3}), 2.0);
}
