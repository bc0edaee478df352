// SPDX-License-Identifier: Apache-2.0
// elementwise.comp: y = f(a) or y = f(a, b) over a [rows x cols] region; every
// operand is a strided 2-D view (element offset + row stride). b is addressed
// as b[b_off + r * b_stride + c * b_cstride], so b may broadcast one row over
// all rows (b_stride = 0), or one column over all columns (b_cstride = 0: a
// per-row scalar such as a per-token gate). b may be an f32 weight's plane.
// OP (spec constant 1): one of the TDM_EW_* codes of include/op_codes.h (shared
// with host/ops/elementwise.cpp, which picks them).
// Dispatch: x = ceil(cols / local_size), y = rows (<= 65535 per dispatch slice).
#version 450
#include "op_codes.h"
#include "glu.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0;

layout(binding = 0, std430) readonly buffer ABuf { float a[]; };
layout(binding = 1, std430) readonly buffer BBuf { float b[]; };
layout(binding = 2, std430) writeonly buffer YBuf { float y[]; };
layout(binding = 2, std430) writeonly buffer YIntBuf { int yi[]; };  // TDM_EW_TO_I32's output, bit exact

layout(push_constant) uniform Params {
    uint rows, cols;
    uint a_off, a_stride;
    uint b_off, b_stride, b_cstride;
    uint y_off, y_stride;
    uint row0;  // first row of this dispatch slice
    float s;
} p;

// erfc with a relative error below 1.2e-7 everywhere (the Chebyshev fit of Numerical
// Recipes' erfcc): GLSL has no erf, and GELU's tail for negative inputs needs erfc's
// relative accuracy, which 1 + erf would lose.
float erfc_approx(float z) {
    const float t = 1.0 / (1.0 + 0.5 * abs(z));
    const float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
                    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
                    t * (-0.82215223 + t * 0.17087277)))))))));
    return z >= 0.0 ? r : 2.0 - r;
}
float gelu_erf(float v) { return 0.5 * v * erfc_approx(-v * 0.7071067811865476); }
float softplus(float v) { return v > 20.0 ? v : log(1.0 + exp(v)); }

void main() {
    const uint c = gl_GlobalInvocationID.x;
    const uint r = gl_WorkGroupID.y + p.row0;
    if (c >= p.cols || r >= p.rows) return;
    const float va = a[p.a_off + r * p.a_stride + c];
    if (OP == TDM_EW_TO_I32) {
        yi[p.y_off + r * p.y_stride + c] = int(roundEven(va));
        return;
    }
    float vb = 0.0;
    const bool binary = OP == TDM_EW_ADD || OP == TDM_EW_MUL || OP == TDM_EW_SWIGLU || OP == TDM_EW_GEGLU || OP == TDM_EW_SUB;
    if (binary) vb = b[p.b_off + r * p.b_stride + c * p.b_cstride];
    float v;
    switch (OP) {
        case TDM_EW_ADD: v = va + vb; break;
        case TDM_EW_MUL: v = va * vb; break;
        case TDM_EW_SCALE: v = va * p.s; break;
        case TDM_EW_SILU: v = silu(va); break;
        case TDM_EW_GELU_TANH: v = gelu_tanh(va); break;
        case TDM_EW_GELU_ERF: v = gelu_erf(va); break;
        case TDM_EW_SIGMOID: v = 1.0 / (1.0 + exp(-va)); break;
        case TDM_EW_SOFTPLUS: v = softplus(va); break;
        case TDM_EW_EXP: v = exp(va); break;
        case TDM_EW_SWIGLU:
        case TDM_EW_GEGLU: v = glu(OP, va, vb); break;
        case TDM_EW_COPY: v = va; break;
        case TDM_EW_NEG: v = -va; break;
        case TDM_EW_ADD_SCALAR: v = va + p.s; break;
        case TDM_EW_SUB: v = va - vb; break;
        case TDM_EW_SOFTCAP: v = p.s * tanh(va / p.s); break;
        case TDM_EW_ROUND_F16: v = unpackHalf2x16(packHalf2x16(vec2(va, 0.0))).x; break;
        case TDM_EW_ROUND_BF16: {
            const uint u = floatBitsToUint(va);
            v = uintBitsToFloat(((u + 0x7fffu + ((u >> 16) & 1u)) >> 16) << 16);
            break;
        }
        default: v = va; break;
    }
    y[p.y_off + r * p.y_stride + c] = v;
}
