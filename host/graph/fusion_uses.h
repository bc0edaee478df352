// SPDX-License-Identifier: Apache-2.0
// host/graph/fusion_uses.h: who reads and who writes each tensor of a graph, as the fusion
// passes (fusion.cpp, fusion_glu.cpp) need it to tell whether a result may be fused away.
// Not here: the rewrites themselves.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace tdm {

// Who reads what: readers per storage owner (a view's reads count for its base), and
// the tensors a fused op must keep (graph outputs, caller-bound storage).
class FusionUses {
public:
    explicit FusionUses(const Graph& g) : g_(g), readers_(g.tensor_count(), 0), producer_(g.tensor_count(), -1) {
        const auto& nodes = g.nodes();
        for (size_t i = 0; i < nodes.size(); ++i) {
            const OpDesc& d = nodes[i].desc;
            for (int k = 0; k < d.n_in; ++k) ++readers_[g.tensor(d.in[k]).base];
            for (TensorId t : {nodes[i].positions, nodes[i].seq_ids, nodes[i].state_io, nodes[i].kv_tree})
                if (t != kNoTensor) ++readers_[g.tensor(t).base];
            for (TensorId o : nodes[i].results())
                if (o != kNoTensor) producer_[o] = int(i);
        }
        for (TensorId o : g.outputs()) readers_[g.tensor(o).base] += 2;  // never fused away
        for (TensorId t = 1; t < g.tensor_count(); ++t)
            if (g.tensor(t).bound) readers_[t] += 2;
    }
    // The node producing t as its first output, or -1.
    int producer(TensorId t) const { return t < producer_.size() ? producer_[t] : -1; }
    // t is an activation read once, by `reader` directly (not through a view).
    bool read_only_by(TensorId t, const Node& reader) const {
        const Tensor& x = g_.tensor(t);
        if (x.kind != TensorKind::activation || x.base != t || readers_[t] != 1) return false;
        for (int k = 0; k < reader.desc.n_in; ++k)
            if (reader.desc.in[k] == t) return true;
        return false;
    }

private:
    const Graph& g_;
    std::vector<int> readers_;
    std::vector<int> producer_;
};

}  // namespace tdm
