// SPDX-License-Identifier: Apache-2.0
// glu.glsl: the activations of the gated linear units, act(gate) * up, shared by
// elementwise.comp (the glu op and the unary activations) and the GLU epilogue of
// matmul_mv.comp, so that the fused and the unfused graphs compute one expression.
// Each result is `precise` (SPIR-V NoContraction): a compiler may not fuse a multiply
// into a neighbouring add in one shader and not in the other, so a value is the same
// bits wherever it is computed from the same inputs. Not here: the other elementwise
// functions (elementwise.comp).
#ifndef TANDEM_GLU_GLSL
#define TANDEM_GLU_GLSL
#include "op_codes.h"

float silu(float v) {
    precise float r = v / (1.0 + exp(-v));
    return r;
}
float gelu_tanh(float v) {
    const float k = 0.7978845608028654;  // sqrt(2/pi)
    precise float r = 0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v)));
    return r;
}
// act(g) * u for code TDM_EW_SWIGLU (silu) or TDM_EW_GEGLU (gelu_tanh).
float glu(uint code, float g, float u) {
    precise float r = (code == TDM_EW_GEGLU ? gelu_tanh(g) : silu(g)) * u;
    return r;
}
#endif
