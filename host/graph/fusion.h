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
// Not here: the fused kernels (host/ops/), memory planning and recording (executor.h).
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace tdm {

// Whether compiled graphs are fused: on unless TANDEM_FUSE=0 (before/after measurements).
bool fusion_enabled();

// Rewrites g's node list in place; returns how many nodes it removed.
uint32_t fuse_graph(Graph& g);

}  // namespace tdm
