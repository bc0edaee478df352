// SPDX-License-Identifier: Apache-2.0
// tests/ops/vision_ops_test.cpp: the ops vision encoders need (GLM-OCR's ViT and merger),
// against double-precision references: exact-erf GELU, attention without a KV layer or
// causal mask (whole, and per key range), and the ViT's 2-D rotary embedding expressed as
// M-RoPE with frequency divisors. LayerNorm has its own file (layer_norm_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_def.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::f32_bytes;
using test::randn;

class VisionOps : public test::DeviceTest {
protected:
    OpHarness h{device(), pipelines()};
};

TEST_F(VisionOps, gelu_erf_matches_the_exact_gelu_over_a_wide_range) {
    const int64_t C = 256, R = 4;
    std::vector<float> a = randn(size_t(C * R), 40, 4.0f);
    a[0] = -12.0f, a[1] = 12.0f, a[2] = 0.0f, a[3] = -5.5f, a[4] = 1e-6f;
    const TensorId ta = h.input_f32({C, R}, a);
    const TensorId y = h.op(TDM_OP_UNARY, {ta}, {TDM_UNARY_GELU_ERF});
    h.run({y});
    const auto got = h.f32(y), want = ref::gelu_erf(a);
    EXPECT_LT(ref::nmse(got, want), 1e-12);
    for (size_t i = 0; i < a.size(); ++i)  // relative accuracy holds in the negative tail too
        EXPECT_NEAR(got[i], want[i], 5e-6 * std::fabs(want[i]) + 1e-12) << "x = " << a[i];
}

// q [n][H][dk], k/v [m][Hkv][d]: the reference's causal attention with every key visible.
std::vector<float> full_attention(const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v, int64_t n, int64_t m, const ref::AttnParams& p) {
    const std::vector<int32_t> q_pos(static_cast<size_t>(n), static_cast<int32_t>(m));
    return ref::attention(q, q_pos, k, v, {}, p);
}

TEST_F(VisionOps, full_attention_over_activations_matches_reference_with_gqa_and_many_chunks) {
    // m = 600 keys: many chunks (8 keys each at head dim 64), the last one partial.
    const int64_t n = 37, m = 600, H = 8, Hkv = 4, dk = 64, dv = 32;
    const auto q = randn(size_t(n * H * dk), 50), k = randn(size_t(m * Hkv * dk), 51), v = randn(size_t(m * Hkv * dv), 52);
    const TensorId tq = h.input_f32({dk, H, n}, q, "q"), tk = h.input_f32({dk, Hkv, m}, k, "k"),
                   tv = h.input_f32({dv, Hkv, m}, v, "v");
    const TensorId y = h.op(TDM_OP_ATTENTION_FULL, {tq, tk, tv}, {}, {0.0f});
    const TensorId y2 = h.op(TDM_OP_ATTENTION_FULL, {tq, tk, tv}, {}, {0.3f});
    h.run({y, y2});
    ref::AttnParams p{H, Hkv, dk, dv, float(1.0 / std::sqrt(double(dk)))};
    EXPECT_LT(ref::nmse(h.f32(y), full_attention(q, k, v, n, m, p)), 1e-11);
    p.scale = 0.3f;
    EXPECT_LT(ref::nmse(h.f32(y2), full_attention(q, k, v, n, m, p)), 1e-11);
}

TEST_F(VisionOps, full_attention_with_key_ranges_keeps_each_image_to_itself) {
    // Two "images" in one batch: queries 0..9 see keys 0..9, queries 10..29 keys 10..29.
    const int64_t n = 30, H = 2, dk = 16, dv = 16, split = 10;
    const auto q = randn(size_t(n * H * dk), 53), k = randn(size_t(n * H * dk), 54), v = randn(size_t(n * H * dv), 55);
    std::vector<int32_t> ranges(size_t(2 * n));  // [2, n]: (begin, end) per query
    for (int64_t t = 0; t < n; ++t) {
        ranges[size_t(2 * t)] = t < split ? 0 : int32_t(split);
        ranges[size_t(2 * t + 1)] = t < split ? int32_t(split) : int32_t(n);
    }
    const TensorId tq = h.input_f32({dk, H, n}, q, "q"), tk = h.input_f32({dk, H, n}, k, "k"),
                   tv = h.input_f32({dv, H, n}, v, "v"), tr = h.input_i32({2, n}, ranges, "ranges");
    const TensorId y = h.op(TDM_OP_ATTENTION_FULL, {tq, tk, tv, tr});
    h.run({y});
    const auto got = h.f32(y);
    const ref::AttnParams p{H, H, dk, dv, float(1.0 / std::sqrt(double(dk)))};
    const auto part = [&](const std::vector<float>& x, int64_t row_width, int64_t lo, int64_t hi) {
        return std::vector<float>(x.begin() + lo * row_width, x.begin() + hi * row_width);
    };
    const auto first = full_attention(part(q, H * dk, 0, split), part(k, H * dk, 0, split), part(v, H * dv, 0, split),
                                      split, split, p);
    const auto second = full_attention(part(q, H * dk, split, n), part(k, H * dk, split, n),
                                       part(v, H * dv, split, n), n - split, n - split, p);
    EXPECT_LT(ref::nmse(part(got, H * dv, 0, split), first), 1e-11);
    EXPECT_LT(ref::nmse(part(got, H * dv, split, n), second), 1e-11);

    // The split falls inside a lane's queries (CPU devices give a lane four): each query
    // still gets the bits it gets when its image is the whole batch.
    OpHarness h2{device(), pipelines()};
    const TensorId alone = h2.op(TDM_OP_ATTENTION_FULL, {h2.input_f32({dk, H, n - split}, part(q, H * dk, split, n), "q"),
                                                         h2.input_f32({dk, H, n - split}, part(k, H * dk, split, n), "k"),
                                                         h2.input_f32({dv, H, n - split}, part(v, H * dv, split, n), "v")});
    h2.run({alone});
    EXPECT_EQ(part(got, H * dv, split, n), h2.f32(alone));
}

TEST_F(VisionOps, full_attention_over_unaligned_views_gives_the_bits_of_aligned_tensors) {
    // k and v as views two columns into wider rows: offsets and strides that are not
    // multiples of 4 take the storage-buffer loads instead of texel fetches.
    const int64_t n = 21, m = 45, H = 2, dk = 32, dv = 16, pad = 2;
    const auto q = randn(size_t(n * H * dk), 70), k = randn(size_t(m * H * dk), 71), v = randn(size_t(m * H * dv), 72);
    const auto widen = [&](const std::vector<float>& x, int64_t d) {
        std::vector<float> w(size_t(m * H * (d + pad)), 7.0f);
        for (int64_t r = 0; r < m * H; ++r)
            std::copy(x.begin() + r * d, x.begin() + (r + 1) * d, w.begin() + r * (d + pad) + pad);
        return w;
    };
    const TensorId tq = h.input_f32({dk, H, n}, q, "q");
    const TensorId kw = h.op(TDM_OP_VIEW_COLS, {h.input_f32({dk + pad, H, m}, widen(k, dk), "kw")}, {pad, int32_t(dk)});
    const TensorId vw = h.op(TDM_OP_VIEW_COLS, {h.input_f32({dv + pad, H, m}, widen(v, dv), "vw")}, {pad, int32_t(dv)});
    const TensorId from_views = h.op(TDM_OP_ATTENTION_FULL, {tq, kw, vw});
    const TensorId plain = h.op(TDM_OP_ATTENTION_FULL, {tq, h.input_f32({dk, H, m}, k, "k"), h.input_f32({dv, H, m}, v, "v")});
    h.run({from_views, plain});
    EXPECT_EQ(h.f32(from_views), h.f32(plain));
    const ref::AttnParams p{H, H, dk, dv, float(1.0 / std::sqrt(double(dk)))};
    EXPECT_LT(ref::nmse(h.f32(plain), full_attention(q, k, v, n, m, p)), 1e-11);
}

TEST_F(VisionOps, an_image_gives_the_same_bits_wherever_its_keys_sit_in_the_batch) {
    // 300 keys (two chunks) alone, and the same keys after 100 others with ranges: equal bits.
    const int64_t m = 300, pre = 100, H = 2, dk = 32, dv = 32, n = 5;
    const auto k = randn(size_t(m * H * dk), 61), v = randn(size_t(m * H * dv), 62), q = randn(size_t(n * H * dk), 63);
    const auto other_k = randn(size_t(pre * H * dk), 64), other_v = randn(size_t(pre * H * dv), 65);
    std::vector<float> k2 = other_k, v2 = other_v;
    k2.insert(k2.end(), k.begin(), k.end());
    v2.insert(v2.end(), v.begin(), v.end());
    std::vector<int32_t> ranges;
    for (int64_t t = 0; t < n; ++t) ranges.insert(ranges.end(), {int32_t(pre), int32_t(pre + m)});
    ranges[2] = 7, ranges[3] = 7;  // query 1 sees no key: zeros
    const TensorId tq = h.input_f32({dk, H, n}, q, "q");
    const TensorId alone = h.op(TDM_OP_ATTENTION_FULL, {tq, h.input_f32({dk, H, m}, k, "k"), h.input_f32({dv, H, m}, v, "v")});
    const TensorId placed = h.op(TDM_OP_ATTENTION_FULL, {tq, h.input_f32({dk, H, pre + m}, k2, "k2"),
                                                         h.input_f32({dv, H, pre + m}, v2, "v2"),
                                                         h.input_i32({2, n}, ranges, "ranges")});
    h.run({alone, placed});
    const auto a = h.f32(alone), b = h.f32(placed);
    for (int64_t t = 0; t < n; ++t) {
        const std::vector<float> row_a(a.begin() + t * H * dv, a.begin() + (t + 1) * H * dv),
            row_b(b.begin() + t * H * dv, b.begin() + (t + 1) * H * dv);
        if (t == 1) {
            EXPECT_EQ(row_b, std::vector<float>(size_t(H * dv), 0.0f)) << "an empty range gives zeros";
        } else {
            EXPECT_EQ(row_a, row_b) << "query " << t;
        }
    }
}

TEST_F(VisionOps, full_attention_ranges_must_be_pairs_per_query) {
    const int64_t n = 4, H = 1, dk = 8;
    const TensorId q = h.input_f32({dk, H, n}, randn(size_t(n * dk), 66), "q"),
                   k = h.input_f32({dk, H, n}, randn(size_t(n * dk), 67), "k");
    const TensorId r = h.input_i32({n, 2}, std::vector<int32_t>(size_t(2 * n), 0), "ranges");
    OpDesc d;
    d.op = TDM_OP_ATTENTION_FULL;
    d.in[0] = q, d.in[1] = k, d.in[2] = k, d.in[3] = r;
    d.n_in = 4;
    auto res = h.graph().op(d);
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(res.error().code(), TDM_ERR_SHAPE);
    EXPECT_NE(res.error().message().find("must be i32 [2, 4] (begin, end per query)"), std::string::npos)
        << res.error().message();
}

TEST_F(VisionOps, full_attention_of_a_query_does_not_depend_on_how_many_queries_share_the_batch) {
    const int64_t m = 300, H = 4, dk = 64, dv = 64;
    const auto k = randn(size_t(m * H * dk), 56), v = randn(size_t(m * H * dv), 57);
    const auto q = randn(size_t(m * H * dk), 58);
    const TensorId tk = h.input_f32({dk, H, m}, k, "k"), tv = h.input_f32({dv, H, m}, v, "v");
    const TensorId all = h.op(TDM_OP_ATTENTION_FULL, {h.input_f32({dk, H, m}, q, "q"), tk, tv});
    const TensorId three = h.op(TDM_OP_ATTENTION_FULL,
                                {h.input_f32({dk, H, 3}, std::vector<float>(q.begin(), q.begin() + 3 * H * dk), "q3"),
                                 tk, tv});
    h.run({all, three});
    const auto a = h.f32(all), b = h.f32(three);
    EXPECT_EQ(std::vector<float>(a.begin(), a.begin() + long(b.size())), b);
}

// GLM-OCR's (and Qwen2-VL's) ViT rotary embedding over a 64-wide head: 32 frequency slots,
// the first 16 driven by the patch row and the next 16 by its column, each half with its
// own frequencies theta^(-2j/32), j = 0..15, applied NeoX-style (rotate_half over 64). As an
// M-RoPE with contiguous sections [16, 16] whose frequency divisors turn the standard
// theta^(-2i/64) into those.
TEST_F(VisionOps, the_vit_2d_rope_is_mrope_with_frequency_divisors) {
    const int64_t hd = 64, H = 3, n = 12;
    const double theta = 10000.0;
    const auto x = randn(size_t(n * H * hd), 60);
    std::vector<int32_t> pos(size_t(4 * n), 0);  // [4, n], token-major: stream 0 = row, stream 1 = column
    for (int64_t t = 0; t < n; ++t) {
        pos[size_t(4 * t)] = int32_t(t / 4);
        pos[size_t(4 * t + 1)] = int32_t(t % 4);
    }
    std::vector<float> ff(32);
    for (int i = 0; i < 32; ++i)
        ff[size_t(i)] = float(std::pow(theta, -2.0 * i / 64.0) / std::pow(theta, -2.0 * (i % 16) / 32.0));
    const TensorId tx = h.input_f32({hd, H, n}, x), tp = h.input_i32({4, n}, pos, "pos"),
                   tff = h.weight(DType::F32, 32, 1, f32_bytes(ff));
    const TensorId y = h.op(TDM_OP_ROPE, {tx, tp, tff},
                            {TDM_ROPE_NEOX, int32_t(hd), TDM_ROPE_SECTIONS_CONTIGUOUS, 16, 16, 0}, {float(theta), 0.0f});
    h.run({y});
    std::vector<float> want(x.size());
    for (int64_t t = 0; t < n; ++t)
        for (int64_t hh = 0; hh < H; ++hh) {
            const float* xi = x.data() + (t * H + hh) * hd;
            float* yo = want.data() + (t * H + hh) * hd;
            for (int i = 0; i < 32; ++i) {
                const double p = pos[size_t(4 * t + (i < 16 ? 0 : 1))];
                const double angle = p * std::pow(theta, -2.0 * (i % 16) / 32.0);
                const double a = xi[i], b = xi[i + 32];
                yo[i] = float(a * std::cos(angle) - b * std::sin(angle));
                yo[i + 32] = float(b * std::cos(angle) + a * std::sin(angle));
            }
        }
    EXPECT_LT(ref::nmse(h.f32(y), want), 1e-11);
}


}  // namespace
}  // namespace tdm
