// SPDX-License-Identifier: Apache-2.0
// matmul_rl.comp: y[t][r] = sum_k W[r][k] * x[t][k] (+ add[t][r]), layout "rl":
// every lane owns whole rows (R consecutive rows per lane) and walks K alone,
// so there is no cross-lane reduction and x, the same for every lane, is
// fetched at a uniform address. Same bindings, push constants and batch
// invariance as matmul.comp (each lane's accumulation order is fixed; the
// code for one token never depends on N or NT).
// GROUP (matmul_rl_group_*): up to three weights in one dispatch, as matmul.comp.
#version 450
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NT = 8;        // tokens per pass
layout(constant_id = 2) const uint R = 1;         // rows per lane

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
    const uint group = enter_segment(gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u);
    const uint row0 = (group * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * R;
    const uint units = p.K / UNIT;
    for (uint t0 = 0; t0 < p.N; t0 += NT) {
        const uint nt = min(NT, p.N - t0);
        float acc[R * NT];
        [[unroll]] for (uint i = 0; i < R * NT; ++i) acc[i] = 0.0;
        for (uint u = 0; u < units; ++u) {
            [[unroll]] for (uint pc = 0; pc < PIECES; ++pc) {
                const uint k0 = u * UNIT + piece_offset(pc);
                vec4 w[R][8];
                float d[R];  // the piece's scale where the type has one per piece, else 1 (w already scaled)
#ifdef HAS_PIECE_SCALE
                [[unroll]] for (uint r = 0; r < R; ++r) d[r] = raw_piece(min(row0 + r, MROWS - 1), u, pc, w[r]);
#else
                [[unroll]] for (uint r = 0; r < R; ++r) {
                    dequant_piece(min(row0 + r, MROWS - 1), u, pc, w[r]);
                    d[r] = 1.0;
                }
#endif
                [[unroll]] for (uint t = 0; t < NT; ++t) {
                    if (t < nt) {
                        vec4 xv[8];
                        [[unroll]] for (uint j = 0; j < 8; ++j) xv[j] = X4(t, k0 + 4 * j);
                        [[unroll]] for (uint r = 0; r < R; ++r) {
                            float s = 0.0;
                            [[unroll]] for (uint j = 0; j < 8; ++j) s += dot(w[r][j], xv[j]);
                            acc[r * NT + t] += d[r] * s;
                        }
                    }
                }
            }
        }
#ifdef PLAIN_TAIL
        for (uint k = units * UNIT; k < p.K; k += 4) {  // a partial last unit (plain types)
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
                if (t < nt && row0 + r < MROWS) {
                    float o = acc[r * NT + t];
#ifndef GROUP
                    if (p.epilogue == TDM_MATMUL_EPILOGUE_ADD) o += add[p.add_off + (t0 + t) * p.add_stride + row0 + r];
#endif
                    y[Y_OFF + (t0 + t) * Y_STRIDE + row0 + r] = o;
                }
            }
        }
    }
}
