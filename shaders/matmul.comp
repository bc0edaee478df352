// SPDX-License-Identifier: Apache-2.0
// matmul.comp: y[t][r] = sum_k W[r][k] * x[t][k] (+ add[t][r]) for the N tokens of a
// decode or verify batch, W in any supported weight type.
//
// Layout "ks": a workgroup owns R consecutive rows; its lanes stride over K in
// units (one quant block, or 32 plain elements, per lane), so neighbouring lanes
// read neighbouring memory. Each 32-element piece of x is fetched once per token
// and applied to all R rows; each dequantized weight piece is applied to all
// tokens. At the end every (row, token) partial is reduced across the workgroup
// with subgroupAdd (a fixed tree on a given device); a workgroup holds several
// independent subgroups.
//
// Batch invariance (DESIGN invariant 1): the value for token t comes from the
// same per-lane accumulation order and the same reduction tree whatever N is.
// N is a push constant; tokens are processed NT at a time (NT a specialization
// constant chosen from N) and the code applied to one token never depends on
// N or NT. tests/ops/batch_invariance_test.cpp checks this bit for bit.
//
// x is read through a texel view on the texel path (lavapipe turns storage loads
// indexed by loop counters into per-lane scalar loops; texel fetches are vector
// gathers), and through a storage buffer elsewhere.
//
// Dispatch: x = ceil(M / (R * subgroups per workgroup)) (wrapped into y beyond 65535), with
// the device's reported subgroup size fixed in full subgroups (host/vk/pipeline.h). Variants:
// matmul_<wtype>_<tex|buf>, wtype in f32 f16 bf16 q8_0 q4_0 q5_0 q5_1 q4_K q5_K q6_K.
// GROUP (matmul_group_<wtype>_<tex|buf>): up to three weights in one dispatch
// (include/matmul_group.glsl).
// Weight planes: host/graph/weight_layout.h.
#version 450
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#extension GL_KHR_shader_subgroup_arithmetic : enable
#extension GL_KHR_shader_subgroup_basic : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NT = 8;        // tokens per pass
layout(constant_id = 2) const uint R = 4;         // rows per workgroup

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

#include "dequant.glsl"

void main() {
    // Each subgroup owns R rows and reduces them alone (subgroupAdd, no barrier);
    // a workgroup holds several subgroups so that lavapipe's per-workgroup
    // overhead is paid once for many rows.
    const uint group = enter_segment(gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u);
    const uint row0 = (group * gl_NumSubgroups + gl_SubgroupID) * R;
    if (row0 >= MROWS) return;  // whole subgroup: uniform
    const uint lane = gl_SubgroupInvocationID, LS = gl_SubgroupSize;
    const uint units = p.K / UNIT;

    for (uint t0 = 0; t0 < p.N; t0 += NT) {
        const uint nt = min(NT, p.N - t0);
        float acc[R * NT];
        [[unroll]] for (uint i = 0; i < R * NT; ++i) acc[i] = 0.0;

        for (uint u = lane; u < units; u += LS) {
            [[unroll]] for (uint pc = 0; pc < PIECES; ++pc) {
                const uint k0 = u * UNIT + piece_offset(pc);
                vec4 w[R][8];
                [[unroll]] for (uint r = 0; r < R; ++r) dequant_piece(min(row0 + r, MROWS - 1), u, pc, w[r]);
                [[unroll]] for (uint t = 0; t < NT; ++t) {
                    if (t < nt) {
                        vec4 xv[8];
                        [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = X4(t, k0 + 4 * j);
                        [[unroll]] for (uint r = 0; r < R; ++r) {
                            float s = 0.0;
                            [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(w[r][j], xv[j]);
                            acc[r * NT + t] += s;
                        }
                    }
                }
            }
        }
#ifdef PLAIN_TAIL
        for (uint k = units * UNIT + 4 * lane; k < p.K; k += 4 * LS) {  // a partial last unit (plain types)
            vec4 w4[R];
            [[unroll]] for (uint r = 0; r < R; ++r) w4[r] = dequant4(min(row0 + r, MROWS - 1), k);
            [[unroll]] for (uint t = 0; t < NT; ++t) {
                if (t < nt) {
                    const vec4 xv = X4(t, k);
                    [[unroll]] for (uint r = 0; r < R; ++r) acc[r * NT + t] += dot(w4[r], xv);
                }
            }
        }
#endif

        [[unroll]] for (uint r = 0; r < R; ++r) {
            [[unroll]] for (uint t = 0; t < NT; ++t) {
                if (t < nt) {
                    const float v = subgroupAdd(acc[r * NT + t]);
                    if (lane == 0 && row0 + r < MROWS) {
                        float o = v;
#ifndef GROUP
                        if (p.epilogue == TDM_MATMUL_EPILOGUE_ADD)
                            o += add[p.add_off + (t0 + t) * p.add_stride + row0 + r];
#endif
                        y[Y_OFF + (t0 + t) * Y_STRIDE + row0 + r] = o;
                    }
                }
            }
        }
    }
}
