/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/split_attention.h: the rewrite that gives attention in the split layout
// (ops/attention_layout.h: TANDEM_ATTENTION_LAYOUT=split) its two passes before a
// graph is compiled. Each such attention node becomes, for every run of at most
// attention_split_tokens() of its tokens, an attention_partials node writing the run's
// partials (a new activation) and an attention_combine node writing the run's rows of the
// attention's own result (ops/attention_split.cpp). The executor places the partials and
// orders the passes like any other nodes: a batch of one run (decode, verify) costs one
// dispatch and one barrier more than the "ks" layout, each further run about two of each.
// Not here: the kernels (ops/attention_split.cpp), the fusions (graph/fusion.h).
#pragma once

#include <cstdint>

#include "graph/graph.h"
#include "vk/device.h"

namespace tdm {

// Rewrites g's split-layout attention nodes in place; returns how many it rewrote.
Result<uint32_t> split_attention(Graph& g, const vk::DeviceCaps& caps);

}  // namespace tdm
