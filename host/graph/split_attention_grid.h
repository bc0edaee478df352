/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/split_attention_grid.h: the grid of a compiled graph's split attention
// passes (graph/split_attention.h), set by the host before each run from the batch in
// hand. A graph is recorded once per batch shape and replayed at every position, so the
// number of splits its first passes run cannot be a recorded constant: before each run
// the host writes each grid input, {kv heads, tokens, splits of the longest context among
// the rows}, which the pass dispatches indirectly (ops/attention_split.cpp) and which
// reaches the device with the positions themselves (the graph's input copy). The partials
// the run needs follow from it: those of its largest pass (tokens x query heads x splits
// in use x (dv + 2) floats), in the device's shared scratch (graph/attention_scratch.h).
// So a 64-token context runs one split per (kv head, token) and needs one split's
// partials whatever the KV's capacity. Positions the host cannot read (a result of an
// op rather than a graph input) are bounded by the layer's capacity or window instead:
// correct, as costly as a grid by capacity.
// Not here: the rewrite (split_attention.h), the kernels (ops/attention_split.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/graph.h"

namespace tdm {

class CompiledGraph;

// What one run of a graph's split passes takes: deterministic for its batch.
struct SplitAttentionRun {
    uint64_t scratch_bytes = 0;  // the partials of its largest pass
    uint64_t workgroups = 0;     // of its first passes (kv heads x tokens x splits in use, summed)
};

class SplitAttentionGrid {
public:
    // The split passes of g; nullptr when it has none.
    static std::unique_ptr<SplitAttentionGrid> of(const Graph& g);

    // Before a run of cg: writes every grid input from the positions the host wrote, and
    // returns what the run takes.
    SplitAttentionRun prepare(CompiledGraph& cg) const;
    // The partials of a run whose rows all read one split: what a graph is first recorded with.
    uint64_t min_scratch_bytes() const;

private:
    struct Pass {
        TensorId grid, positions;
        uint32_t window, n_tokens, n_head, n_kv_head, dv, max_splits;
    };
    std::vector<Pass> passes_;
};

}  // namespace tdm
