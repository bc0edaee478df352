/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/fusion_glu.h: the rewrite that gives a fused graph's matmuls the GLU as their
// epilogue, where the device's matmul layout for the weights is "mv" (the GPUs' default;
// ops/matmul_split.h), the one kernel that has it. Elsewhere (lavapipe's "rl", "ks") the
// graph stays as it is. Two forms, each computing the unfused ops' bits:
//  - a matmul_group of two weights (fusion.h) whose results a glu alone reads becomes one
//    matmul_glu (ops/matmul_glu.h) writing act(gate) * up, where both weights' planes can
//    be bound by one dispatch. Per FFN this saves one dispatch and one barrier, and the gate
//    and up results (2 x rows x tokens floats) are neither written nor read back.
//  - a plain matmul whose result a glu alone reads as its gate, the glu's other input e an
//    f32 tensor of the same shape, becomes one matmul_act_mul (ops/matmul_act_mul.h) writing
//    act(W x) * e: Gemma 4's per-layer input, gelu_tanh(W_gate x) times the layer's slice of
//    the per-layer embedding. One dispatch and one barrier less per layer.
// It runs after fuse_graph (which forms the groups, and the geglu of Gemma 4's gelu and
// mul) and only where fuse_graph runs. Not here: the kernels (ops/matmul_glu.cpp,
// ops/matmul_act_mul.cpp).
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "vk/device.h"

namespace tdm {

// Rewrites g's node list in place; returns how many nodes it removed.
uint32_t fuse_glu_epilogues(Graph& g, const vk::DeviceCaps& caps);

}  // namespace tdm
