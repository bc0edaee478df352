/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/matmul_act_mul.h: the host-internal matmul with a gated epilogue,
// y [M, n] = act(x W^T) * e, e an f32 tensor of y's shape: the plain matmul's own dispatches
// (matmul_mv.comp, whose push constant `epilogue` selects it), the sum never written. The
// kernel applies the glu op's function (shaders/include/glu.glsl) to the sum the plain
// matmul stores, so y is the unfused matmul and glu's, bit for bit. graph/fusion_glu.h forms
// it from a matmul whose result only a glu reads, as its gate: Gemma 4's per-layer input,
// gelu_tanh(W_gate x) * (the layer's slice of the per-layer embedding).
// OpDesc, as TDM_OP_MATMUL's with an add: in[0] = W, in[1] = x, in[2] = e;
// i[0] = TDM_MATMUL_EPILOGUE_GEGLU or TDM_MATMUL_EPILOGUE_SWIGLU (shaders/include/op_codes.h).
// Not here: gate and up weights with the GLU epilogue (matmul_glu.h), the pattern matching
// (graph/fusion_glu.cpp).
#pragma once

#include "graph/weight.h"
#include "vk/device.h"

namespace tdm {

// Whether a matmul of `w` can take the gated epilogue on this device: its layout is "mv"
// (ops/matmul_split.h), the one kernel that has it. The fusion pass asks before it fuses.
bool matmul_act_mul_supported(const vk::DeviceCaps& caps, const DeviceWeight& w);

}  // namespace tdm
