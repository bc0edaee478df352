// SPDX-License-Identifier: Apache-2.0
// matmul_mv.comp: y[t][r] = sum_k W[r][k] * x[t][k] (+ add[t][r], or act(sum) * add[t][r]),
// layout "mv": the mat-vec kernel for GPUs (decode and verify batches of N tokens). Same
// bindings, push constants and GROUP variants as matmul.comp; the host picks the layout
// (host/ops/matmul_split.h).
//
// Shape of the work, and why:
// - A subgroup owns R rows (1 or 2 by default, a specialization constant) and a workgroup
//   holds a few subgroups (2-4), so a 1024-row matrix launches hundreds of workgroups and
//   every SM or CU gets some (ks's 8 x 8 rows per workgroup launched 16). A subgroup
//   reduces its rows alone with subgroupAdd: no shared memory, no barrier.
// - The lanes of a subgroup stride over the row's units (one quant block or super-block
//   part: 32-128 weights, dequant.glsl), so at each step the subgroup reads one contiguous
//   span of the row: every lane's loads are 16-byte texels (uvec4) of the main plane,
//   neighbouring lanes reading neighbouring texels, which coalesces on NVIDIA (32 lanes)
//   and AMD (32 or 64).
// - The K loop is unrolled U times (a specialization constant): a lane fetches U units,
//   LS units apart, before it uses any of them, so U independent blocks per row are in
//   flight per lane. A mat-vec product is bound by memory latency and bandwidth, and one
//   block per lane per step leaves the memory system idle between steps.
// - The block scale is applied once per piece (dequant_mv.glsl: s * dot(q, x), plus
//   m * sum(x) for the types with a min) instead of once per weight.
// - Each 32-element piece of x is fetched once per token and applied to all R rows;
//   each piece of W is unpacked once and applied to all NT tokens of a pass.
//
// Exactness (DESIGN invariant 1). A lane's share of a row is the units lane, lane + LS,
// lane + 2 LS, ... whatever R, the subgroup count or U is; it keeps one accumulator per
// piece index and adds its units into each in ascending order; at the end it adds the
// pieces' accumulators in piece order (and the plain types' partial last unit), and the
// row's lanes are reduced by one subgroupAdd. R, the subgroups per workgroup and U only
// decide which subgroup runs which row and how many loads are issued ahead, so every
// split `tandem tune` may choose gives the same bits, and a token's value never depends
// on N or NT (tokens are processed NT at a time with code that does not depend on either).
// The sums differ from ks's and rl's (the scale is factored out, the lane's units are
// split per piece): a layout is chosen per device and weight type, never per batch.
//
// Dispatch: x = ceil(M / (R * subgroups per workgroup)) (wrapped into y beyond 65535). The
// pipeline fixes the device's reported subgroup size in full subgroups (host/vk/pipeline.h):
// gl_NumSubgroups and LS are what the host divided the rows by, on every driver.
// Variants: matmul_mv_<wtype>_<tex|buf> and matmul_mv_group_<wtype>_<tex|buf>
// (include/matmul_group.glsl), wtype in f32 f16 bf16 q8_0 q4_0 q5_0 q5_1 q4_K q5_K q6_K.
// matmul_mv_glu_<wtype>_<tex|buf> (GROUP and GLU; host/ops/matmul_glu.cpp): a gate and an
// up weight, a subgroup accumulating its R rows of each with the code above (so each row is
// the sum the matmul gives, bit for bit) and writing act(gate) * up with the function the
// glu op uses (include/glu.glsl): the GLU dispatch and the gate and up results disappear.
// The plain variants' gated epilogues (push constant epilogue, include/op_codes.h;
// host/ops/matmul_act_mul.cpp) write act(sum) * e, e a tensor of y's shape bound as add,
// with that function too: Gemma 4's gelu_tanh(W_gate x) * (per-layer input) in the
// matmul's own pipeline (only a push constant differs), so the sum is the plain matmul's.
// The tex variants exist so that tests can force this layout on lavapipe.
#version 450
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "glu.glsl"
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NT = 8;  // tokens per pass
layout(constant_id = 2) const uint R = 1;   // rows per subgroup
layout(constant_id = 3) const uint U = 2;   // units in flight per lane
#ifdef GLU
layout(constant_id = 4) const uint GLU_OP = TDM_EW_SWIGLU;  // or TDM_EW_GEGLU (include/op_codes.h)
const uint WEIGHTS = 2;  // a subgroup's R rows of the gate weight, then the same R rows of up
#else
const uint WEIGHTS = 1;
#endif
const uint RW = R * WEIGHTS;  // rows a subgroup accumulates

#define W_BINDING 0
#define S_BINDING 1
#include "weights.glsl"
#ifdef WEIGHTS_TEXEL
layout(binding = 2) uniform samplerBuffer x_tex;
#define X4(t, k) texelFetch(x_tex, int((p.x_off + (t0 + (t)) * p.x_stride + (k)) >> 2))
#else
layout(binding = 2, std430) readonly buffer XBuf { vec4 x4[]; };
#define X4(t, k) x4[(p.x_off + (t0 + (t)) * p.x_stride + (k)) >> 2]
#endif
layout(binding = 3, std430) writeonly buffer YBuf { float y[]; };
layout(binding = 4, std430) readonly buffer ABuf { float add[]; };

#include "matmul_group.glsl"

#include "dequant_mv.glsl"

// Accumulated row r (< RW) of the subgroup: the weight it reads is selected (GLU: gate rows
// first, then up rows) and its row index returned, clamped in bounds.
uint weight_row(uint row0, uint r) {
#ifdef GLU
    mv_weight = r / R;
#endif
    return min(row0 + r % R, MROWS - 1);
}

void main() {
    const uint group = enter_segment(gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u);
    const uint row0 = (group * gl_NumSubgroups + gl_SubgroupID) * R;
    if (row0 >= MROWS) return;  // whole subgroup: uniform
    const uint lane = gl_SubgroupInvocationID, LS = gl_SubgroupSize;
    const uint units = p.K / UNIT;

    for (uint t0 = 0; t0 < p.N; t0 += NT) {
        const uint nt = min(NT, p.N - t0);
        float acc[PIECES][RW * NT];  // per piece index: the lane's units in ascending order
        [[unroll]] for (uint pc = 0; pc < PIECES; ++pc)
            [[unroll]] for (uint i = 0; i < RW * NT; ++i) acc[pc][i] = 0.0;

        for (uint u0 = lane; u0 < units; u0 += U * LS) {
            [[unroll]] for (uint pc = 0; pc < PIECES; ++pc) {
                // every load of the U units first; a unit past the row's end loads the last
                // one again (in bounds) and is not added
                vec4 q[U][RW][8];
                vec4 s[U][RW];
                [[unroll]] for (uint i = 0; i < U; ++i) {
                    const uint u = min(u0 + i * LS, units - 1);
                    [[unroll]] for (uint r = 0; r < RW; ++r) s[i][r] = mv_piece(weight_row(row0, r), u, pc, q[i][r]);
                }
                [[unroll]] for (uint i = 0; i < U; ++i) {
                    const uint u = u0 + i * LS;
                    if (u < units) {
                        const uint k0 = u * UNIT + piece_offset(pc);
                        [[unroll]] for (uint t = 0; t < NT; ++t) {
                            if (t < nt) {
                                vec4 xv[8];
                                [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = X4(t, k0 + 4 * j);
                                [[unroll]] for (uint r = 0; r < RW; ++r) acc[pc][r * NT + t] += mv_dot(q[i][r], s[i][r], xv);
                            }
                        }
                    }
                }
            }
        }
        [[unroll]] for (uint pc = 1; pc < PIECES; ++pc)
            [[unroll]] for (uint i = 0; i < RW * NT; ++i) acc[0][i] += acc[pc][i];
#ifdef PLAIN_TAIL
        for (uint k = units * UNIT + 4 * lane; k < p.K; k += 4 * LS) {  // a partial last unit (plain types)
            vec4 w4[RW];
            [[unroll]] for (uint r = 0; r < RW; ++r) w4[r] = dequant4(weight_row(row0, r), k);
            [[unroll]] for (uint t = 0; t < NT; ++t) {
                if (t < nt) {
                    const vec4 xv = X4(t, k);
                    [[unroll]] for (uint r = 0; r < RW; ++r) acc[0][r * NT + t] += dot(w4[r], xv);
                }
            }
        }
#endif

        [[unroll]] for (uint r = 0; r < R; ++r) {
            [[unroll]] for (uint t = 0; t < NT; ++t) {
                if (t < nt) {
                    const float v = subgroupAdd(acc[0][r * NT + t]);
#ifdef GLU
                    const float up = subgroupAdd(acc[0][(R + r) * NT + t]);
                    if (lane == 0 && row0 + r < MROWS) y[Y_OFF + (t0 + t) * Y_STRIDE + row0 + r] = glu(GLU_OP, v, up);
#else
                    if (lane == 0 && row0 + r < MROWS) {
                        float o = v;
#ifndef GROUP
                        const uint e = p.add_off + (t0 + t) * p.add_stride + row0 + r;
                        if (p.epilogue == TDM_MATMUL_EPILOGUE_ADD) o += add[e];
                        else if (p.epilogue != TDM_MATMUL_EPILOGUE_NONE)
                            o = glu(p.epilogue == TDM_MATMUL_EPILOGUE_GEGLU ? TDM_EW_GEGLU : TDM_EW_SWIGLU, o, add[e]);
#endif
                        y[Y_OFF + (t0 + t) * Y_STRIDE + row0 + r] = o;
                    }
#endif
                }
            }
        }
    }
}
