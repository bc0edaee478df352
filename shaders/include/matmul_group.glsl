// SPDX-License-Identifier: Apache-2.0
// matmul_group.glsl: the push constants of matmul.comp and matmul_rl.comp, and their
// GROUP variants: up to three weights of one type and width K times one x in one
// dispatch (host/ops/matmul_group.cpp, formed by host/graph/fusion.cpp from matmuls that
// share their input, e.g. a layer's q, k and v). Segment j is a weight: its workgroups
// start at seg_group[j] (unused segments: ~0u), its rows are seg_M[j], its planes start
// at texel seg_w[j] / field seg_s[j] of the bound span, its result at seg_y[j] with rows
// seg_y_stride[j] apart. A
// workgroup runs one segment with the ungrouped kernel's code, so every row is the sum a
// single matmul gives, bit for bit. Defines MROWS, Y_OFF, Y_STRIDE (and W_OFF, S_OFF for
// dequant.glsl) and enter_segment(group) -> the workgroup's index within its segment.
// GROUP with GLU: a gate and an up weight whose results meet in act(gate) * up, below.
#include "op_codes.h"
#ifdef GROUP
layout(push_constant) uniform Params {
    uint K, N, x_off, x_stride;
    uint seg_group[3], seg_M[3], seg_w[3], seg_s[3], seg_y[3], seg_y_stride[3];
} p;
#ifdef GLU
// GLU (matmul_mv.comp only): segment 0 is the gate weight and segment 1 the up weight, of
// equal rows; every workgroup computes its rows of both (the segments share workgroups,
// seg_group is unused) and writes act(gate) * up where segment 0's result goes. The
// kernel sets mv_weight to the segment whose planes the next weight loads read.
uint mv_weight = 0u;
#define MROWS p.seg_M[0]
#define Y_OFF p.seg_y[0]
#define Y_STRIDE p.seg_y_stride[0]
#define W_OFF p.seg_w[mv_weight]
#define S_OFF p.seg_s[mv_weight]
uint enter_segment(uint group) { return group; }
#else
// The segment of this workgroup. Recomputed where used rather than kept in private
// variables: built from workgroup ids and push constants it stays a uniform scalar that
// the compiler hoists, as the plain kernel's push constants are.
uint segment() {
    const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
    return group >= p.seg_group[2] ? 2u : group >= p.seg_group[1] ? 1u : 0u;
}
#define MROWS p.seg_M[segment()]
#define Y_OFF p.seg_y[segment()]
#define Y_STRIDE p.seg_y_stride[segment()]
#define W_OFF p.seg_w[segment()]
#define S_OFF p.seg_s[segment()]
uint enter_segment(uint group) { return group - p.seg_group[segment()]; }
#endif
#else
layout(push_constant) uniform Params {
    uint K;         // columns
    uint M;         // rows in this dispatch
    uint N;         // tokens
    uint x_off;     // element offset of token 0 (multiple of 4)
    uint x_stride;  // elements between tokens (multiple of 4)
    uint y_off;     // element offset of (token 0, row 0) of this dispatch
    uint y_stride;
    uint w_off;     // texel offset of row 0 in the main plane
    uint s_off;     // element offset of row 0 in the scale plane
    uint add_off;
    uint add_stride;
    // TDM_MATMUL_EPILOGUE_* (include/op_codes.h): ADD is y = W x + add; the gated ones
    // (matmul_mv.comp only) y = act(W x) * add. A push constant, not a specialization
    // constant: it only touches the final store, and as a constant it doubled the variants
    // LLVM compiles on a CPU device (a q6_K variant for 8 tokens takes seconds).
    uint epilogue;
} p;
#define MROWS p.M
#define Y_OFF p.y_off
#define Y_STRIDE p.y_stride
uint enter_segment(uint group) { return group; }
#endif
