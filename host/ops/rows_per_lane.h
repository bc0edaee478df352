/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/rows_per_lane.h: the shape of the "rows per lane" attention kernels
// (shaders/attention_full.comp and attention_rl.comp): each lane owns a few queries of
// one head and walks their keys alone; a workgroup holds the G query heads of a kv head.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/record.h"

namespace tdm::kernel {

// Keys per chunk of a query's online softmax, from the head dims alone (dk4, dv4 = dims
// / 4), so a query's arithmetic is fixed by the op's shape. The chunk loop is unrolled:
// this keeps it near 128 vec4 steps per query (8 keys at head dim 64), which compiles in
// seconds on lavapipe and loses nothing measurable to larger chunks (docs/perf-notes/lavapipe-attention.md).
inline uint32_t lane_keys_per_chunk(uint32_t dk4, uint32_t dv4) {
    return std::clamp<uint32_t>(128 / std::max(dk4, dv4), 1, 32);
}

// Query slots per workgroup: 32 lanes' worth, the G heads of each slot side by side.
inline uint32_t lane_slots(uint32_t G) { return std::max<uint32_t>(1, 32 / G); }

// Dispatches x = gx by blocks of `queries_per_group` queries, in slices of at most
// kMaxGroups workgroup rows; `first_query` (a field of `push`) gets each slice's first.
template <class P>
void dispatch_query_blocks(RecordContext& c, const vk::Pipeline& p, std::initializer_list<vk::Binding> b, P& push,
                           uint32_t& first_query, uint32_t n_queries, uint32_t queries_per_group, uint32_t gx,
                           std::string_view label) {
    const uint32_t blocks = uint32_t(div_up(n_queries, queries_per_group));
    for (uint32_t b0 = 0; b0 < blocks; b0 += kMaxGroups) {
        first_query = b0 * queries_per_group;
        dispatch(c, p, b, push, gx, std::min(blocks - b0, kMaxGroups), label);
    }
}

}  // namespace tdm::kernel
