// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_vision_reference_test.cpp: self-tests of the GLM-OCR vision encoder reference
// (tests/support/glm_vision_reference.h) on a tiny synthetic config. Each piece whose element order
// HF fixes with a view/permute is recomputed here in its unflattened form (the Conv3d over the
// image, the Conv2d over the feature map, the patch positions); the rope is checked against hand
// values; whole-forward properties (bidirectional attention, position awareness, order matters)
// are checked by perturbing the input. GLM-OCR's real tensor list is checked against the
// checkpoint's parameter count.
#include <gtest/gtest.h>

#include "support/glm_vision_reference.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace tdm;
using ref::Floats;
using ref::GlmVisionConfig;
using ref::MapVisionWeights;

namespace {

constexpr int kGridH = 4, kGridW = 6;  // 24 patches, 6 merged tokens (2 x 3 blocks)

GlmVisionConfig tiny_glm_vision_reference() {
    GlmVisionConfig c;  // patch 14, temporal 2, merge 2, 3 channels: GLM-OCR's own
    c.depth = 2;
    c.hidden = 32;
    c.heads = 2;  // head_dim 16
    c.intermediate = 48;
    c.out_hidden = 24;  // merger width 72
    return c;
}

// Deterministic values in [-1.5, 1.5), like normalized pixels.
Floats noise(size_t n, uint64_t seed) {
    Floats v(n);
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (float& x : v) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x = float(double(s >> 40) / double(1ull << 24) * 3.0 - 1.5);
    }
    return v;
}

Floats random_patches(const GlmVisionConfig& c, int gh, int gw, uint64_t seed) {
    return noise(size_t(gh) * size_t(gw) * size_t(c.patch_values()), seed);
}

std::span<const float> row_glm_vision_reference(const Floats& x, int64_t cols, int64_t i) {
    return std::span<const float>(x.data() + i * cols, size_t(cols));
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
    EXPECT_EQ(a.size(), b.size());
    double m = 0.0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
    return m;
}

// The processor's patch order, written out as loops rather than index arithmetic: block row,
// block column, row in block, column in block.
std::vector<std::pair<int, int>> merge_block_order(int gh, int gw, int m) {
    std::vector<std::pair<int, int>> rc;
    for (int br = 0; br < gh / m; ++br)
        for (int bc = 0; bc < gw / m; ++bc)
            for (int i = 0; i < m; ++i)
                for (int j = 0; j < m; ++j) rc.emplace_back(br * m + i, bc * m + j);
    return rc;
}

void swap_patches(const GlmVisionConfig& c, Floats& patches, int a, int b) {
    const size_t P = size_t(c.patch_values());
    std::swap_ranges(patches.begin() + long(a * P), patches.begin() + long((a + 1) * P), patches.begin() + long(b * P));
}

}  // namespace

TEST(GlmVisionReference, TensorListMatchesTheGlmOcrCheckpoint) {
    const auto specs = ref::glm_vision_tensors(GlmVisionConfig::glm_ocr());
    // 2 patch_embed + 24 blocks x 14 + 6 merger + 2 downsample + 1 post_layernorm.
    EXPECT_EQ(specs.size(), 347u);
    int64_t params = 0;
    std::set<std::string> names;
    for (const auto& s : specs) {
        int64_t n = 1;
        for (int64_t d : s.shape) n *= d;
        params += n;
        EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
        EXPECT_EQ(s.name.rfind("model.visual.", 0), 0u) << s.name;
    }
    // docs/models/glm-ocr.md: "vision tower 434 M" (the audit of the checkpoint header).
    EXPECT_EQ(params, 434120192);
    const auto shape_of = [&](const std::string& name) {
        for (const auto& s : specs)
            if (s.name == name) return s.shape;
        ADD_FAILURE() << "no " << name;
        return std::vector<int64_t>{};
    };
    using V = std::vector<int64_t>;
    EXPECT_EQ(shape_of("model.visual.patch_embed.proj.weight"), (V{1024, 3, 2, 14, 14}));
    EXPECT_EQ(shape_of("model.visual.blocks.23.attn.qkv.weight"), (V{3072, 1024}));
    EXPECT_EQ(shape_of("model.visual.blocks.0.attn.q_norm.weight"), (V{64}));
    EXPECT_EQ(shape_of("model.visual.blocks.0.mlp.down_proj.weight"), (V{1024, 4096}));
    EXPECT_EQ(shape_of("model.visual.downsample.weight"), (V{1536, 1024, 2, 2}));
    EXPECT_EQ(shape_of("model.visual.merger.gate_proj.weight"), (V{4608, 1536}));
    EXPECT_EQ(shape_of("model.visual.merger.post_projection_norm.bias"), (V{1536}));
}

TEST(GlmVisionReference, ForwardReadsExactlyTheListedTensors) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const MapVisionWeights w = MapVisionWeights::synthetic(c, 1);
    (void)ref::glm_vision_forward(c, w, random_patches(c, kGridH, kGridW, 2), kGridH, kGridW);
    std::set<std::string> listed;
    for (const auto& s : ref::glm_vision_tensors(c)) listed.insert(s.name);
    EXPECT_EQ(w.names_read(), listed);
}

TEST(GlmVisionReference, OutputHasOneRowPerMergeBlock) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const MapVisionWeights w = MapVisionWeights::synthetic(c, 1);
    const auto st = ref::glm_vision_forward_stages(c, w, random_patches(c, kGridH, kGridW, 2), kGridH, kGridW);
    const size_t n = size_t(kGridH * kGridW), tokens = n / 4;
    EXPECT_EQ(st.embedded.size(), n * size_t(c.hidden));
    EXPECT_EQ(st.post_norm.size(), n * size_t(c.hidden));
    EXPECT_EQ(st.downsampled.size(), tokens * size_t(c.out_hidden));
    ASSERT_EQ(st.merged.size(), tokens * size_t(c.out_hidden));
    double mag = 0.0;
    for (float v : st.merged) {
        ASSERT_TRUE(std::isfinite(v));
        mag = std::max(mag, double(std::abs(v)));
    }
    EXPECT_GT(mag, 1e-3);  // not collapsed to zero
    EXPECT_LT(mag, 1e3);   // the synthetic scales keep activations of order 1
    EXPECT_EQ(ref::glm_vision_forward(c, w, random_patches(c, kGridH, kGridW, 2), kGridH, kGridW), st.merged);
}

TEST(GlmVisionReference, SyntheticWeightsAreDeterministicPerSeed) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const Floats p = random_patches(c, kGridH, kGridW, 3);
    const Floats a = ref::glm_vision_forward(c, MapVisionWeights::synthetic(c, 5), p, kGridH, kGridW);
    const Floats b = ref::glm_vision_forward(c, MapVisionWeights::synthetic(c, 5), p, kGridH, kGridW);
    const Floats d = ref::glm_vision_forward(c, MapVisionWeights::synthetic(c, 6), p, kGridH, kGridW);
    EXPECT_EQ(a, b);
    EXPECT_GT(max_abs_diff(a, d), 1e-3);
}

TEST(GlmVisionReference, PositionsFollowMergeBlockOrder) {
    const auto pos = ref::glm_vision_positions(kGridH, kGridW, 2);
    const auto expect = merge_block_order(kGridH, kGridW, 2);
    ASSERT_EQ(pos.size(), expect.size());
    for (size_t n = 0; n < pos.size(); ++n) {
        EXPECT_EQ(pos[n][0], expect[n].first) << "patch " << n;
        EXPECT_EQ(pos[n][1], expect[n].second) << "patch " << n;
    }
    // Spot values: the first block is (0,0) (0,1) (1,0) (1,1); the second starts at column 2.
    EXPECT_EQ(pos[3], (std::array<int, 2>{1, 1}));
    EXPECT_EQ(pos[4], (std::array<int, 2>{0, 2}));
    EXPECT_EQ(pos[12], (std::array<int, 2>{2, 0}));
}

// The Conv3d (kernel = stride = [2, 14, 14]) computed over an actual 2-frame image with the
// unflattened 5-D kernel, against the flattened per-patch matmul the forward uses. Also checks
// that patch n of the merge-block order lands at the right image location.
TEST(GlmVisionReference, PatchEmbedIsTheConv3dOverTheImage) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const MapVisionWeights w = MapVisionWeights::synthetic(c, 11);
    const int C = c.in_channels, T = c.temporal_patch, ps = c.patch, D = c.hidden;
    const int H = kGridH * ps, W = kGridW * ps;
    const Floats image = noise(size_t(C * T * H * W), 12);  // [C][T][H][W]
    const auto px = [&](int ch, int t, int y, int x) { return image[size_t(((ch * T + t) * H + y) * W + x)]; };

    const auto order = merge_block_order(kGridH, kGridW, c.merge);
    Floats patches;
    for (const auto& [r, col] : order)
        for (int ch = 0; ch < C; ++ch)
            for (int t = 0; t < T; ++t)
                for (int y = 0; y < ps; ++y)
                    for (int x = 0; x < ps; ++x) patches.push_back(px(ch, t, r * ps + y, col * ps + x));

    const Floats embed = ref::glm_vision_patch_embed(c, w, patches);
    ASSERT_EQ(embed.size(), order.size() * size_t(D));
    const Floats& kernel = w.get("model.visual.patch_embed.proj.weight", {D, C, T, ps, ps});
    const Floats& bias = w.get("model.visual.patch_embed.proj.bias", {D});
    const auto k5 = [&](int o, int ch, int t, int ky, int kx) {
        return kernel[size_t((((o * C + ch) * T + t) * ps + ky) * ps + kx)];
    };
    double worst = 0.0;
    for (size_t n = 0; n < order.size(); ++n) {
        const auto [r, col] = order[n];
        for (int o = 0; o < D; ++o) {
            double acc = bias[size_t(o)];
            for (int ch = 0; ch < C; ++ch)
                for (int t = 0; t < T; ++t)
                    for (int ky = 0; ky < ps; ++ky)
                        for (int kx = 0; kx < ps; ++kx)
                            acc += double(k5(o, ch, t, ky, kx)) * double(px(ch, t, r * ps + ky, col * ps + kx));
            worst = std::max(worst, std::abs(acc - double(embed[n * size_t(D) + size_t(o)])));
        }
    }
    EXPECT_LT(worst, 1e-5);
}

// For a still image (both frames equal) the Conv3d is a Conv2d with the two temporal kernel
// slices summed (docs/models/glm-ocr.md §5 step 2), the form a runtime may prefer.
TEST(GlmVisionReference, StillImagePatchEmbedIsConv2dWithSummedKernel) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const MapVisionWeights w = MapVisionWeights::synthetic(c, 13);
    const int C = c.in_channels, T = c.temporal_patch, S = c.patch * c.patch, D = c.hidden;
    const Floats frame = noise(size_t(C * S), 14);  // one patch, one frame: [C][py][px]
    Floats patch;
    for (int ch = 0; ch < C; ++ch)
        for (int t = 0; t < T; ++t) patch.insert(patch.end(), frame.begin() + ch * S, frame.begin() + (ch + 1) * S);
    const Floats embed = ref::glm_vision_patch_embed(c, w, patch);
    const Floats& kernel = w.get("model.visual.patch_embed.proj.weight", {D, C, T, c.patch, c.patch});
    const Floats& bias = w.get("model.visual.patch_embed.proj.bias", {D});
    for (int o = 0; o < D; ++o) {
        double acc = bias[size_t(o)];
        for (int ch = 0; ch < C; ++ch)
            for (int s = 0; s < S; ++s) {
                double k = 0.0;
                for (int t = 0; t < T; ++t) k += kernel[size_t(((o * C + ch) * T + t) * S + s)];
                acc += k * frame[size_t(ch * S + s)];
            }
        EXPECT_NEAR(embed[size_t(o)], acc, 1e-5) << "channel " << o;
    }
}

TEST(GlmVisionReference, RopeAtOriginIsIdentity) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const Floats f = noise(size_t(c.head_dim()), 21);
    std::vector<double> v(f.begin(), f.end());
    ref::glm_vision_rope(c, 0, 0, v);
    for (size_t d = 0; d < v.size(); ++d) EXPECT_EQ(v[d], double(f[d])) << "dim " << d;
}

// HF: emb = cat([row f, col f], [row f, col f]), out = q cos + rotate_half(q) sin with
// rotate_half(q) = cat(-q[h:], q[:h]), h = hd/2, f_0 = 1. So unit vector e_0 at row r goes to
// cos(r) e_0 + sin(r) e_h, and e_{hd/4} at column c goes to cos(c) e_{hd/4} + sin(c) e_{hd/4+h}.
TEST(GlmVisionReference, RopeRotatesRowAndColumnDimsSeparately) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const int hd = c.head_dim(), half = hd / 2, quarter = hd / 4;
    const auto unit = [&](int d) {
        std::vector<double> v(size_t(hd), 0.0);
        v[size_t(d)] = 1.0;
        return v;
    };
    std::vector<double> e0 = unit(0);
    ref::glm_vision_rope(c, 3, 5, e0);  // the column must not matter for dim 0
    EXPECT_NEAR(e0[0], std::cos(3.0), 1e-12);
    EXPECT_NEAR(e0[size_t(half)], std::sin(3.0), 1e-12);
    std::vector<double> eq = unit(quarter);
    ref::glm_vision_rope(c, 3, 5, eq);  // the row must not matter for dim hd/4
    EXPECT_NEAR(eq[size_t(quarter)], std::cos(5.0), 1e-12);
    EXPECT_NEAR(eq[size_t(quarter + half)], std::sin(5.0), 1e-12);
    // Frequency j of the row dims is theta^(-4j/hd).
    std::vector<double> e1 = unit(1);
    ref::glm_vision_rope(c, 7, 0, e1);
    const double f1 = std::pow(c.rope_theta, -4.0 / hd);
    EXPECT_NEAR(e1[1], std::cos(7.0 * f1), 1e-12);
    EXPECT_NEAR(e1[size_t(1 + half)], std::sin(7.0 * f1), 1e-12);

    // A row change moves only the row dims (d and d + h for d < hd/4); a column change only the rest.
    const Floats f = noise(size_t(hd), 22);
    const std::vector<double> base(f.begin(), f.end());
    std::vector<double> by_row = base, by_col = base;
    ref::glm_vision_rope(c, 2, 0, by_row);
    ref::glm_vision_rope(c, 0, 2, by_col);
    double norm_base = 0.0, norm_row = 0.0, norm_col = 0.0;
    for (int d = 0; d < hd; ++d) {
        const bool row_dim = d % half < quarter;
        if (row_dim) {
            EXPECT_NE(by_row[size_t(d)], base[size_t(d)]) << "dim " << d;
            EXPECT_EQ(by_col[size_t(d)], base[size_t(d)]) << "dim " << d;
        } else {
            EXPECT_EQ(by_row[size_t(d)], base[size_t(d)]) << "dim " << d;
            EXPECT_NE(by_col[size_t(d)], base[size_t(d)]) << "dim " << d;
        }
        norm_base += base[size_t(d)] * base[size_t(d)];
        norm_row += by_row[size_t(d)] * by_row[size_t(d)];
        norm_col += by_col[size_t(d)] * by_col[size_t(d)];
    }
    EXPECT_NEAR(norm_row, norm_base, 1e-12);  // a rotation
    EXPECT_NEAR(norm_col, norm_base, 1e-12);
}

// The downsample recomputed as an explicit Conv2d (kernel = stride = 2, unflattened 4-D kernel)
// over the [hidden][grid_h][grid_w] feature map, built from the post-norm rows and their positions.
TEST(GlmVisionReference, DownsampleIsTheConv2dOverTheFeatureMap) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const MapVisionWeights w = MapVisionWeights::synthetic(c, 31);
    const auto st = ref::glm_vision_forward_stages(c, w, random_patches(c, kGridH, kGridW, 32), kGridH, kGridW);
    const int D = c.hidden, O = c.out_hidden, m = c.merge;
    std::vector<double> fmap(size_t(D * kGridH * kGridW));  // [D][gh][gw]
    const auto order = merge_block_order(kGridH, kGridW, m);
    for (size_t n = 0; n < order.size(); ++n)
        for (int ch = 0; ch < D; ++ch)
            fmap[size_t((ch * kGridH + order[n].first) * kGridW + order[n].second)] =
                st.post_norm[n * size_t(D) + size_t(ch)];
    const Floats& kernel = w.get("model.visual.downsample.weight", {O, D, m, m});
    const Floats& bias = w.get("model.visual.downsample.bias", {O});
    double worst = 0.0;
    for (int br = 0; br < kGridH / m; ++br)
        for (int bc = 0; bc < kGridW / m; ++bc)
            for (int o = 0; o < O; ++o) {
                double acc = bias[size_t(o)];
                for (int ch = 0; ch < D; ++ch)
                    for (int ky = 0; ky < m; ++ky)
                        for (int kx = 0; kx < m; ++kx)
                            acc += double(kernel[size_t(((o * D + ch) * m + ky) * m + kx)]) *
                                   fmap[size_t((ch * kGridH + br * m + ky) * kGridW + bc * m + kx)];
                const size_t token = size_t(br * (kGridW / m) + bc);  // merged tokens in raster order
                worst = std::max(worst, std::abs(acc - double(st.downsampled[token * size_t(O) + size_t(o)])));
            }
    EXPECT_LT(worst, 1e-5);
}

TEST(GlmVisionReference, AttentionIsBidirectional) {
    GlmVisionConfig c = tiny_glm_vision_reference();
    const Floats p = random_patches(c, kGridH, kGridW, 41);
    Floats q = p;
    const int last = kGridH * kGridW - 1;
    const Floats other = noise(size_t(c.patch_values()), 42);
    std::copy(other.begin(), other.end(), q.begin() + long(size_t(last) * size_t(c.patch_values())));
    const int64_t O = c.out_hidden;

    const MapVisionWeights w = MapVisionWeights::synthetic(c, 43);
    const Floats a = ref::glm_vision_forward(c, w, p, kGridH, kGridW);
    const Floats b = ref::glm_vision_forward(c, w, q, kGridH, kGridW);
    EXPECT_GT(max_abs_diff(row_glm_vision_reference(a, O, 0), row_glm_vision_reference(b, O, 0)), 1e-4);  // the first token sees the last patch

    // Control: without blocks a token depends only on its own 4 patches, so the same change
    // leaves the first token alone (and moves the last).
    c.depth = 0;
    const MapVisionWeights w0 = MapVisionWeights::synthetic(c, 43);
    const Floats a0 = ref::glm_vision_forward(c, w0, p, kGridH, kGridW);
    const Floats b0 = ref::glm_vision_forward(c, w0, q, kGridH, kGridW);
    EXPECT_EQ(max_abs_diff(row_glm_vision_reference(a0, O, 0), row_glm_vision_reference(b0, O, 0)), 0.0);
    EXPECT_GT(max_abs_diff(row_glm_vision_reference(a0, O, 5), row_glm_vision_reference(b0, O, 5)), 1e-4);
}

// Without the rope, blocks are permutation-equivariant: swapping two patches would just swap
// their post-norm rows. With it, each patch's result depends on where it sits.
TEST(GlmVisionReference, BlocksArePositionAware) {
    GlmVisionConfig c = tiny_glm_vision_reference();
    const Floats p = random_patches(c, kGridH, kGridW, 51);
    Floats q = p;
    swap_patches(c, q, 0, 9);
    const int64_t D = c.hidden;
    const MapVisionWeights w = MapVisionWeights::synthetic(c, 52);
    const auto a = ref::glm_vision_forward_stages(c, w, p, kGridH, kGridW);
    const auto b = ref::glm_vision_forward_stages(c, w, q, kGridH, kGridW);
    EXPECT_GT(max_abs_diff(row_glm_vision_reference(a.post_norm, D, 0), row_glm_vision_reference(b.post_norm, D, 9)), 1e-4);

    c.depth = 0;  // control: the patch embedding and post_layernorm alone are per-patch
    const MapVisionWeights w0 = MapVisionWeights::synthetic(c, 52);
    const auto a0 = ref::glm_vision_forward_stages(c, w0, p, kGridH, kGridW);
    const auto b0 = ref::glm_vision_forward_stages(c, w0, q, kGridH, kGridW);
    EXPECT_EQ(max_abs_diff(row_glm_vision_reference(a0.post_norm, D, 0), row_glm_vision_reference(b0.post_norm, D, 9)), 0.0);
}

TEST(GlmVisionReference, PatchOrderMatters) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    const MapVisionWeights w = MapVisionWeights::synthetic(c, 61);
    const Floats p = random_patches(c, kGridH, kGridW, 62);
    const Floats base = ref::glm_vision_forward(c, w, p, kGridH, kGridW);
    const int64_t O = c.out_hidden;
    for (const auto& [a, b] : {std::pair{0, 1}, std::pair{0, 4}, std::pair{5, 20}}) {
        Floats q = p;
        swap_patches(c, q, a, b);
        const Floats out = ref::glm_vision_forward(c, w, q, kGridH, kGridW);
        EXPECT_GT(max_abs_diff(row_glm_vision_reference(base, O, a / 4), row_glm_vision_reference(out, O, a / 4)), 1e-4) << a << " <-> " << b;
    }
}

TEST(GlmVisionReference, RejectsBadInputsAndWeights) {
    const GlmVisionConfig c = tiny_glm_vision_reference();
    MapVisionWeights w = MapVisionWeights::synthetic(c, 71);
    const Floats p = random_patches(c, kGridH, kGridW, 72);
    EXPECT_THROW(ref::glm_vision_forward(c, w, p, kGridH, kGridW + 1), std::invalid_argument);
    EXPECT_THROW(ref::glm_vision_forward(c, w, p, 3, 8), std::invalid_argument);  // 24 patches, odd rows
    EXPECT_THROW(ref::glm_vision_forward(c, w, std::span<const float>(p).first(p.size() - 1), kGridH, kGridW),
                 std::invalid_argument);
    EXPECT_THROW(w.get("model.visual.post_layernorm.weight", {int64_t(c.hidden) + 1}), std::invalid_argument);
    EXPECT_THROW(w.get("model.visual.no_such.weight", {1}), std::out_of_range);
    EXPECT_THROW(w.set("x", {2, 3}, Floats(5)), std::invalid_argument);
    // A checkpoint whose q_norm is the wrong size stops the forward with the tensor's name.
    w.set("model.visual.blocks.1.attn.q_norm.weight", {int64_t(c.hidden)}, Floats(size_t(c.hidden), 1.0f));
    try {
        (void)ref::glm_vision_forward(c, w, p, kGridH, kGridW);
        ADD_FAILURE() << "no throw";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("blocks.1.attn.q_norm.weight"), std::string::npos) << e.what();
    }
    GlmVisionConfig bad = c;
    bad.heads = 4;  // head_dim 8: fine
    EXPECT_NO_THROW(ref::check_config(bad));
    bad.heads = 16;  // head_dim 2: not a multiple of 4
    EXPECT_THROW(ref::check_config(bad), std::invalid_argument);
    bad.heads = 5;  // 32 / 5
    EXPECT_THROW(ref::check_config(bad), std::invalid_argument);
}
