/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/fusion.h: the graph rewrite that runs before a graph is compiled:
// chains of ops whose intermediates nothing else reads become one fused op, so a
// step records fewer dispatches and barriers. Every fused op computes each element
// in the arithmetic order of the chain it replaces, so results are bit for bit the
// unfused graph's (tests/ops/norm_rope_test.cpp, tests/graph/fusion_test.cpp).
// Fusions (each needs every intermediate to be read by the next op alone, never a
// graph output or caller-bound storage):
//   rms_norm -> rope of query heads, and [rms_norm ->] rope -> kv_store of key heads
//   (with value heads RMS-normed without a weight or stored raw), the query part
//   joining the key part of the attention that reads that KV layer: one dispatch of
//   ops/norm_rope.cpp instead of up to six.
//   matmuls of one weight type and width that read the same input (q, k and v; gate and
//   up): one ops/matmul_group.cpp dispatch for up to three weights.
//   rms_norm -> add [-> mul by a one-element weight] [-> rms_norm of the sum]: a post-norm
//   residual step (Gemma 4) in one ops/norm_add.cpp dispatch;
//   unary gelu_tanh -> mul as glu geglu (one elementwise dispatch).
// Not here: the gate/up group and its glu, or a matmul and the glu that gates its result
// (Gemma 4's per-layer input), as one matmul with a GLU epilogue (fusion_glu.h, which runs
// after this pass and needs the device's matmul layout), the fused kernels
// (host/ops/), memory planning and recording (executor.h).
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "vk/device.h"

namespace tdm {

// Whether graphs compiled for this device are fused: on GPUs, where a dispatch and its
// barrier cost more than the work of a small op; off on CPU devices (lavapipe), where the
// grouped matmuls and the fused norm/rope/store kernels spread a step's work over fewer,
// larger workgroups and measured 10% slower decode and prefill (docs/BENCHMARKS.md,
// "Dispatches per decode step"). TANDEM_FUSE=1 or 0 forces it either way (the tests run
// the GPUs' fused graphs on lavapipe with it).
bool fusion_enabled(const vk::DeviceCaps& caps);

// Rewrites g's node list in place; returns how many nodes it removed.
uint32_t fuse_graph(Graph& g);

}  // namespace tdm
