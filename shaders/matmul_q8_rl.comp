// SPDX-License-Identifier: Apache-2.0
// matmul_q8_rl.comp: y[t][r] = sum_b dW[r][b] * dx[t][b] * sum_{k in b} qW[r][k] * qx[t][k]
// (+ add[t][r]): Q8_0 weights times int8 activations (quantize_q8.comp), the
// products of each 32-element block summed in 32-bit integers (exact) and
// scaled once per block. Layout "rl" as matmul_rl.comp: every lane owns R whole
// rows and walks K alone; x, the same for every lane, sits at a uniform address.
// Batch invariance: each lane's accumulation order is fixed and the code for one
// token never depends on N or NT.
// The 4x8 dot products are written out (sign-extended bytes, multiply, add): on
// lavapipe they compile to the same code as OpSDot (measured), and they need no
// device feature. Unpacking w once per block for all tokens and x once for all
// rows was slower on lavapipe (4.6 against 5.3-6.1 tok/s: 128 live integers).
// Dispatch: x = ceil(M / (R * local size)) (wrapped into y beyond 65535).
// Variants: matmul_q8_rl_<tex|buf> (the weight access path).
#version 450
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "op_codes.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NT = 8;        // tokens per pass
layout(constant_id = 2) const uint R = 1;         // rows per lane

#define W_BINDING 0
#define S_BINDING 1
#include "weights.glsl"
layout(binding = 2, std430) readonly buffer XqBuf { uvec4 xq4[]; };
layout(binding = 3, std430) writeonly buffer YBuf { float y[]; };
layout(binding = 4, std430) readonly buffer ABuf { float add[]; };
layout(binding = 5, std430) readonly buffer XsBuf { float xs[]; };  // the same buffer as XqBuf

layout(push_constant) uniform Params {
    uint K, M, N, x_off, x_stride, y_off, y_stride, w_off, s_off, add_off, add_stride;
    uint epilogue;  // TDM_MATMUL_EPILOGUE_*: only ADD (y = W x + add) reaches this kernel
} p;

int dot4x8(uint a, uint b) {
    const ivec4 u = i8x4(a) * i8x4(b);
    return (u.x + u.y) + (u.z + u.w);
}

void main() {
    const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
    const uint row0 = (group * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * R;
    const uint nb = p.K / 32;
    for (uint t0 = 0; t0 < p.N; t0 += NT) {
        const uint nt = min(NT, p.N - t0);
        float acc[R * NT];
        [[unroll]] for (uint i = 0; i < R * NT; ++i) acc[i] = 0.0;
        for (uint b = 0; b < nb; ++b) {
            uvec4 w0[R], w1[R];
            float dw[R];
            [[unroll]] for (uint r = 0; r < R; ++r) {
                const uint row = min(row0 + r, p.M - 1);
                w0[r] = load_row_w(p.w_off, row, 2 * nb, 2 * b);
                w1[r] = load_row_w(p.w_off, row, 2 * nb, 2 * b + 1);
                dw[r] = load_row_scale(p.s_off, row, nb, b);
            }
            [[unroll]] for (uint t = 0; t < NT; ++t) {
                if (t < nt) {
                    const uint xrow = p.x_off + (t0 + t) * p.x_stride;  // in words
                    const uvec4 x0 = xq4[(xrow >> 2) + b * 2], x1 = xq4[(xrow >> 2) + b * 2 + 1];
                    const float dx = xs[xrow + nb * 8 + b];
                    [[unroll]] for (uint r = 0; r < R; ++r) {
                        const int s = ((dot4x8(w0[r].x, x0.x) + dot4x8(w0[r].y, x0.y)) +
                                       (dot4x8(w0[r].z, x0.z) + dot4x8(w0[r].w, x0.w))) +
                                      ((dot4x8(w1[r].x, x1.x) + dot4x8(w1[r].y, x1.y)) +
                                       (dot4x8(w1[r].z, x1.z) + dot4x8(w1[r].w, x1.w)));
                        acc[r * NT + t] += (dw[r] * dx) * float(s);
                    }
                }
            }
        }
        [[unroll]] for (uint r = 0; r < R; ++r) {
            [[unroll]] for (uint t = 0; t < NT; ++t) {
                if (t < nt && row0 + r < p.M) {
                    float o = acc[r * NT + t];
                    if (p.epilogue == TDM_MATMUL_EPILOGUE_ADD) o += add[p.add_off + (t0 + t) * p.add_stride + row0 + r];
                    y[p.y_off + (t0 + t) * p.y_stride + row0 + r] = o;
                }
            }
        }
    }
}
