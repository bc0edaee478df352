/* SPDX-License-Identifier: Apache-2.0 */
// shaders/include/op_codes.h: codes that select what a shader computes through
// a specialization constant, shared by the shaders (GLSL) and the host code that
// records them (host/ops/, C++). Plain #defines valid in both languages, so the
// two sides cannot drift apart. Codes are internal to the host (not ABI): the
// ABI's enums (tdm_unary, tdm_glu, ...) are mapped onto them in host/ops/.
#ifndef TANDEM_OP_CODES_H
#define TANDEM_OP_CODES_H

// elementwise.comp, spec constant 1 (OP): y = f(a) or f(a, b).
#define TDM_EW_ADD 0          // a + b
#define TDM_EW_MUL 1          // a * b
#define TDM_EW_SCALE 2        // a * s
#define TDM_EW_SILU 3         // a * sigmoid(a)
#define TDM_EW_GELU_TANH 4    // gelu, tanh approximation
#define TDM_EW_SIGMOID 5
#define TDM_EW_SOFTPLUS 6
#define TDM_EW_EXP 7
#define TDM_EW_SWIGLU 8       // silu(a) * b
#define TDM_EW_GEGLU 9        // gelu_tanh(a) * b
#define TDM_EW_COPY 10        // a
#define TDM_EW_NEG 11         // -a
#define TDM_EW_ADD_SCALAR 12  // a + s
#define TDM_EW_SUB 13         // a - b
#define TDM_EW_SOFTCAP 14     // s * tanh(a / s)
#define TDM_EW_ROUND_F16 15   // a rounded through f16
#define TDM_EW_ROUND_BF16 16  // a rounded through bf16 (nearest even)
#define TDM_EW_TO_I32 17      // round(a) as an i32 (written through the int view of y)
#define TDM_EW_GELU_ERF 18    // 0.5 a (1 + erf(a / sqrt 2))

// norm.comp, spec constant 1 (MODE). Its WMODE (spec constant 2) is the ABI's
// tdm_norm_weight (0 none, 1 w, 2 1 + w).
#define TDM_NORM_RMS 0        // x * rsqrt(mean(x^2) + eps) * W
#define TDM_NORM_L2 1         // x * rsqrt(sum(x^2) + eps)
#define TDM_NORM_GATED_RMS 2  // rms(x) * w * silu(z)
#define TDM_NORM_LAYER 3      // (x - mean) * rsqrt(var + eps) * w + b (b in z's binding when WMODE is 3)

// The matmul kernels' push constant `epilogue` (include/matmul_group.glsl): what becomes of
// a row's sum y before it is stored, e being the tensor bound as `add` (element [t][r]).
// The gated ones are matmul_mv.comp's only (host/ops/matmul_act_mul.cpp), computed with the
// glu op's own function (include/glu.glsl).
#define TDM_MATMUL_EPILOGUE_NONE 0
#define TDM_MATMUL_EPILOGUE_ADD 1     // y + e
#define TDM_MATMUL_EPILOGUE_SWIGLU 2  // silu(y) * e
#define TDM_MATMUL_EPILOGUE_GEGLU 3   // gelu_tanh(y) * e

#endif  // TANDEM_OP_CODES_H
