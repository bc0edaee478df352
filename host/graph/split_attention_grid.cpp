// SPDX-License-Identifier: Apache-2.0
// host/graph/split_attention_grid.cpp: per-run grids of split attention passes
// (graph/split_attention_grid.h).
#include "graph/split_attention_grid.h"

#include <algorithm>
#include <span>

#include "graph/executor.h"
#include "ops/attention_layout.h"
#include "ops/op_def.h"

namespace tdm {

std::unique_ptr<SplitAttentionGrid> SplitAttentionGrid::of(const Graph& g) {
    auto grid = std::make_unique<SplitAttentionGrid>();
    for (const Node& n : g.nodes()) {
        if (n.desc.op != kOpInternalAttentionPartials) continue;
        const Tensor& q = g.tensor(n.desc.in[0]);
        const KvLayerBinding& kv = *g.tensor(n.desc.in[1]).kv;
        const uint32_t window = uint32_t(n.desc.i[0]);
        grid->passes_.push_back({n.desc.in[2], n.positions, window, uint32_t(q.ne[2] * q.ne[3]), uint32_t(q.ne[1]),
                                 kv.n_kv_head, kv.dv, attention_max_splits(kv, window)});
    }
    if (grid->passes_.empty()) return nullptr;
    return grid;
}

SplitAttentionRun SplitAttentionGrid::prepare(CompiledGraph& cg) const {
    const Graph& g = cg.graph();
    // passes that share a grid input (the same positions, window and kv heads) run its
    // largest count: the same unless a row's position lies past a layer's capacity
    std::vector<std::pair<TensorId, uint32_t>> splits_of;  // by grid input
    for (const Pass& p : passes_) {
        const Tensor& pos = g.tensor(p.positions);
        uint32_t splits = p.max_splits;
        if (g.tensor(pos.base).kind == TensorKind::input) {
            const auto* host = static_cast<const int32_t*>(cg.input_data(pos.base)) + pos.off;
            splits = std::min(splits, attention_splits_in_use(std::span(host, p.n_tokens), p.window));
        }
        auto it = std::find_if(splits_of.begin(), splits_of.end(), [&](const auto& e) { return e.first == p.grid; });
        if (it == splits_of.end()) splits_of.emplace_back(p.grid, splits);
        else it->second = std::max(it->second, splits);
    }
    SplitAttentionRun run;
    for (const Pass& p : passes_) {
        const uint32_t splits =
            std::find_if(splits_of.begin(), splits_of.end(), [&](const auto& e) { return e.first == p.grid; })->second;
        auto* grid = cg.input_as<uint32_t>(p.grid);
        grid[0] = p.n_kv_head;
        grid[1] = p.n_tokens;
        grid[2] = splits;
        run.scratch_bytes = std::max(run.scratch_bytes, attention_partial_bytes(p.n_tokens, p.n_head, p.dv, splits));
        run.workgroups += uint64_t(p.n_kv_head) * p.n_tokens * splits;
    }
    return run;
}

uint64_t SplitAttentionGrid::min_scratch_bytes() const {
    uint64_t bytes = 0;
    for (const Pass& p : passes_) bytes = std::max(bytes, attention_partial_bytes(p.n_tokens, p.n_head, p.dv, 1));
    return bytes;
}

}  // namespace tdm
