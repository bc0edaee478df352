/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/fusion_glu.h: the rewrite that gives a fused graph's gate/up matmul the GLU as
// its epilogue: a matmul_group of two weights (fusion.h) whose results a glu alone reads
// becomes one matmul_glu (ops/matmul_glu.h) writing act(gate) * up, where the device's
// matmul layout for the weights is "mv" (the GPUs' default; ops/matmul_split.h) and both
// weights' planes can be bound by one dispatch. Elsewhere (lavapipe's "rl", "ks") the
// group and the glu stay. Per FFN this saves one dispatch and one barrier, and the gate
// and up results (2 x rows x tokens floats) are neither written nor read back.
// It runs after fuse_graph (which forms the groups, and the geglu of Gemma 4's gelu and
// mul) and only where fuse_graph runs. Not here: the kernel (ops/matmul_glu.cpp).
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "vk/device.h"

namespace tdm {

// Rewrites g's node list in place; returns how many nodes it removed.
uint32_t fuse_glu_epilogues(Graph& g, const vk::DeviceCaps& caps);

}  // namespace tdm
