/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/attention_layout.h: which kernel layout TDM_OP_ATTENTION runs on a device, and
// the fixed geometry of the split-KV layout (GPUs).
// Layouts: "rl" (shaders/attention_rl.comp: every lane owns up to four tokens of one head;
// CPU devices, which read through texel views: each key fetched once serves all of them);
// "ks" (shaders/attention.comp: a workgroup per (kv head, token), lanes over keys, the keys
// walked in chunks of 256 one after another; CPU devices where rl cannot run); "split"
// (GPUs: attention.comp's SPLIT pass, a workgroup per (kv head, token, split of
// kAttentionSplitKeys keys) over the splits the batch's longest context uses, then
// attention_combine.comp merging each token's splits in order; a batch wider than
// kAttentionSplitMaxTokens folds its splits in one pass with the same arithmetic). In every
// layout the KV range is cut at fixed absolute boundaries whatever the batch, so a query's
// bits depend only on its keys (tandem.h invariant 1).
// TANDEM_ATTENTION_LAYOUT=rl|ks|split overrides (experiments, and tests that run every
// layout on one device; "rl" only where the KV has texel views).
// Not here: the kernels' recording (attention.cpp, attention_split.cpp), the graph rewrite
// that gives split attention its passes (graph/split_attention.h), the per-run grid
// (graph/split_attention_grid.h).
#pragma once

#include <cstdint>
#include <span>

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

// The widest batch that runs the two split passes. A wider one (a prefill chunk, a large
// tree) has workgroups enough in (kv heads x tokens) to fill a GPU without splitting its
// keys, so each workgroup folds its token's splits itself (attention.comp's fold: the same
// bits, no partials). 32 rows: decode of up to 32 streams, verify of their drafts and
// trees of up to 32 nodes keep the split passes; the partials they need stay proportionate
// to the K/V they read (graph/attention_scratch.h).
constexpr uint32_t kAttentionSplitMaxTokens = 32;

// The splits a query at position `pos` reads (window 0: every earlier key).
uint32_t attention_key_splits(uint32_t pos, uint32_t window);
// The splits a run of queries at these positions uses: its longest context's.
uint32_t attention_splits_in_use(std::span<const int32_t> positions, uint32_t window);
// The most splits any query of this layer can read: its capacity (a linear layer) or its
// window, whichever is smaller. A bound for the per-run grid, never its size.
uint32_t attention_max_splits(const KvLayerBinding& kv, uint32_t window);
// Bytes of the partials of a pass over `splits` splits: (dv + 2) floats per token, query
// head and split.
constexpr uint64_t attention_partial_bytes(uint32_t n_tokens, uint32_t n_head, uint32_t dv, uint32_t splits) {
    return uint64_t(n_tokens) * n_head * splits * (dv + 2) * sizeof(float);
}

}  // namespace tdm
