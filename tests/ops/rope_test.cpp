// SPDX-License-Identifier: Apache-2.0
// tests/ops/rope_test.cpp: TDM_OP_ROPE (host/ops/rope.cpp) against the plain-C++ reference
// (tests/support/reference.h, ref::rope): NeoX and adjacent pairs, partial rotation,
// frequency factors and scale, M-RoPE with contiguous and interleaved sections, and
// proportional rotation (i[6]). The ViT's 2-D rotary embedding is in vision_ops_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/op_harness.h"
#include "support/reference.h"

namespace tdm {
namespace {

using test::OpHarness;
using test::randn;

struct RopeCase {
    const char* name;
    tdm_rope_mode mode;
    int n_rot;
    tdm_rope_sections sections;
    std::array<int, 4> sec;
    bool ff;
    float freq_scale;
    int n_freq = 0;  // i[6]: rotated slots (0 = all)
};

class RopeOps : public test::DeviceTest, public ::testing::WithParamInterface<RopeCase> {};

TEST_P(RopeOps, rope_matches_reference) {
    const RopeCase c = GetParam();
    const int64_t D = 64, H = 3, N = 5;
    const auto x = randn(size_t(D * H * N), 40);
    const int streams = c.sections ? 4 : 1;
    std::vector<int32_t> pos;
    for (int t = 0; t < N; ++t)
        for (int s = 0; s < streams; ++s) pos.push_back(t * 7 + 3 + s * (c.sections ? 5 : 0));
    std::vector<float> ff(size_t(c.n_rot / 2));
    for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + 0.25f * float(i % 5);
    OpHarness h(device(), pipelines());
    std::vector<TensorId> in = {h.input_f32({D, H, N}, x), h.input_i32({int64_t(pos.size())}, pos, "pos")};
    if (c.ff) in.push_back(h.input_f32({int64_t(ff.size())}, ff, "ff"));
    const TensorId y = h.op(TDM_OP_ROPE, in, {c.mode, c.n_rot, c.sections, c.sec[0], c.sec[1], c.sec[2], c.n_freq},
                            {10000.0f, c.freq_scale});
    h.run({y});
    ref::RopeParams p;
    p.n_rot = c.n_rot;
    p.theta = 10000.0;
    p.pairing = c.mode == TDM_ROPE_NEOX ? ref::RopePairing::NeoX : ref::RopePairing::Adjacent;
    p.freq_scale = c.freq_scale == 0 ? 1.0 : c.freq_scale;
    if (c.ff) p.freq_factors = ff;
    p.mrope = c.sections == TDM_ROPE_SECTIONS_CONTIGUOUS ? ref::MRope::Contiguous
              : c.sections == TDM_ROPE_SECTIONS_INTERLEAVED ? ref::MRope::Interleaved
                                                            : ref::MRope::None;
    p.sections = c.sec;
    p.n_freq = c.n_freq;
    // angles up to ~40 rad in f32: sin/cos carry ~1e-6 absolute error
    EXPECT_LT(ref::nmse(h.f32(y), ref::rope(x, N, H, D, pos, p)), 1e-10) << c.name;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, RopeOps,
    ::testing::Values(RopeCase{"neox", TDM_ROPE_NEOX, 64, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, false, 0},
                      RopeCase{"adjacent", TDM_ROPE_ADJACENT, 64, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, false, 0},
                      RopeCase{"neox_partial", TDM_ROPE_NEOX, 16, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, false, 0},
                      RopeCase{"adjacent_partial", TDM_ROPE_ADJACENT, 32, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, false, 0},
                      RopeCase{"freq_factors", TDM_ROPE_NEOX, 64, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, true, 0},
                      RopeCase{"freq_scale", TDM_ROPE_NEOX, 64, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, false, 0.25f},
                      RopeCase{"mrope_contiguous", TDM_ROPE_NEOX, 64, TDM_ROPE_SECTIONS_CONTIGUOUS, {8, 12, 12, 0}, false, 0},
                      // GLM-OCR's HF form: adjacent pairs with contiguous sections (t, h, w streams differ here)
                      RopeCase{"mrope_contiguous_adjacent", TDM_ROPE_ADJACENT, 64, TDM_ROPE_SECTIONS_CONTIGUOUS, {8, 12, 12, 0}, false, 0},
                      RopeCase{"mrope_interleaved", TDM_ROPE_NEOX, 64, TDM_ROPE_SECTIONS_INTERLEAVED, {11, 11, 10, 0}, false, 0},
                      RopeCase{"proportional", TDM_ROPE_NEOX, 64, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, false, 0, 8},
                      RopeCase{"proportional_ff", TDM_ROPE_NEOX, 64, TDM_ROPE_SECTIONS_NONE, {0, 0, 0, 0}, true, 0, 5}),
    [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace tdm
