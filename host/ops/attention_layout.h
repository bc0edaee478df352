/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/attention_layout.h: which kernel layout TDM_OP_ATTENTION runs on a device, and
// the fixed geometry of the split-KV layout (GPUs).
// Layouts: "rl" (shaders/attention_rl.comp: every lane owns up to four tokens of one head;
// CPU devices, which read through texel views: each key fetched once serves all of them);
// "ks" (shaders/attention.comp: a workgroup per (kv head, token), lanes over keys, the keys
// walked in chunks of 256 one after another); "split" (attention.comp's SPLIT pass, then
// attention_combine.comp: a workgroup per (kv head, token, split of kAttentionSplitKeys
// keys), the splits merged in order; GPUs, whose hundred-odd cores one workgroup per token
// would leave idle while it walks a long context). In every layout the KV range is cut at
// fixed absolute boundaries whatever the batch, so a query's bits depend only on its keys
// (tandem.h invariant 1). GPUs use ks: split is forced for now (docs/TUNING.md says why);
// when it becomes a GPU's layout it must serve every batch there, a short context simply
// having one split.
// TANDEM_ATTENTION_LAYOUT=rl|ks|split overrides (experiments, and tests that run every
// layout on one device; "rl" only where the KV has texel views).
// Not here: the kernels' recording (attention.cpp, attention_split.cpp), the graph rewrite
// that gives split attention its two passes (graph/split_attention.h).
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "vk/device.h"

namespace tdm {

enum class AttentionLayout { rows_per_lane, key_chunks, key_splits };

AttentionLayout attention_layout(const vk::DeviceCaps& caps, const KvLayerBinding& kv);

// Keys per split: a fixed multiple of attention.comp's chunk (256). One chunk: the
// shortest walk per workgroup that keeps the chunk arithmetic, so a 4096-key context
// spreads over 16 workgroups per kv head; the partials it costs are (dv + 2) floats per
// query head and 256 keys, well under 1% of the K/V bytes the split reads.
constexpr uint32_t kAttentionSplitKeys = 256;

// The splits a query at position `pos` reads (window 0: every earlier key).
uint32_t attention_key_splits(uint32_t pos, uint32_t window);
// The most splits any query of this layer can read: its capacity (a linear layer) or its
// window, whichever is smaller. The first pass's grid depth: the compiled graph serves
// every position, so the grid covers the longest context the layer holds.
uint32_t attention_max_splits(const KvLayerBinding& kv, uint32_t window);
// Tokens per pass pair: the partials of a pass (tokens x heads x splits x (dv + 2) floats)
// stay within kAttentionPartialBytes, so a wide prefill batch over a long context runs
// its tokens in several pairs rather than holding partials for all of them.
constexpr uint64_t kAttentionPartialBytes = 64ull << 20;
uint32_t attention_split_tokens(uint32_t n_tokens, uint32_t n_head, uint32_t dv, uint32_t max_splits);

}  // namespace tdm
