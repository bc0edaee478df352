/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/split_attention.h: the rewrite that gives attention in the split layout
// (ops/attention_layout.h; the GPUs') its kernels before a graph is compiled
// (ops/attention_split.cpp):
// - a batch of at most kAttentionSplitMaxTokens rows (decode, verify, a small tree): an
//   attention_partials node, dispatched indirectly from a grid input {kv heads, tokens,
//   splits in use} that the host writes before each run (graph/split_attention_grid.h),
//   writing the partials into the device's shared scratch (graph/attention_scratch.h), then
//   an attention_combine node writing the attention's result. Nodes with the same
//   positions, window and kv heads share one grid input. Cost: one dispatch and one barrier
//   more than the "ks" layout per attention.
// - a wider batch (a prefill chunk), or one whose partials at the layer's capacity or
//   window (tokens x query heads x splits x (dv + 2) floats) would exceed what the device
//   binds at once (maxStorageBufferRange): one attention_folded node, a workgroup per (kv
//   head, token) folding the token's splits itself: the dispatches and barriers of "ks",
//   no partials, and the bits of the two passes. Chosen when the graph is compiled, from
//   its worst case, so that no later run fails for want of partials.
// Not here: the kernels (ops/attention_split.cpp), the fusions (graph/fusion.h).
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "vk/device.h"

namespace tdm {

// Rewrites g's split-layout attention nodes in place; returns how many it rewrote.
Result<uint32_t> split_attention(Graph& g, const vk::DeviceCaps& caps);

}  // namespace tdm
