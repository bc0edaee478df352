// SPDX-License-Identifier: Apache-2.0
// host/graph/split_attention.cpp: attention nodes in the split layout become their split
// passes or their fold (graph/split_attention.h).
#include "graph/split_attention.h"

#include <map>
#include <tuple>
#include <vector>

#include "ops/attention_layout.h"
#include "ops/op_def.h"

namespace tdm {

Result<uint32_t> split_attention(Graph& g, const vk::DeviceCaps& caps) {
    std::vector<Node> out;
    std::map<std::tuple<TensorId, int32_t, uint32_t>, TensorId> grids;  // by (positions, window, kv heads)
    uint32_t rewritten = 0;
    for (const Node& n : g.nodes()) {
        const KvLayerBinding* kv = n.desc.op == TDM_OP_ATTENTION ? g.tensor(n.desc.in[1]).kv : nullptr;
        if (!kv || attention_layout(caps, *kv) != AttentionLayout::key_splits) {
            out.push_back(n);
            continue;
        }
        ++rewritten;
        const Tensor& q = g.tensor(n.desc.in[0]);
        const int64_t n_head = q.ne[1], n_tok = q.ne[2] * q.ne[3];
        // the partials of the deepest run this node can have (every row at the end of the
        // layer's capacity or window) must fit what one pass binds, or a later run would fail
        const uint64_t worst = attention_partial_bytes(uint32_t(n_tok), uint32_t(n_head), kv->dv,
                                                       attention_max_splits(*kv, uint32_t(n.desc.i[0])));
        const bool partials_fit = caps.max_storage_buffer_range == 0 || worst <= caps.max_storage_buffer_range;
        if (n_tok > kAttentionSplitMaxTokens || !partials_fit) {
            Node folded = n;
            folded.desc.op = kOpInternalAttentionFolded;
            out.push_back(folded);
            continue;
        }
        TensorId& grid = grids[{n.positions, n.desc.i[0], kv->n_kv_head}];
        if (!grid) grid = g.input(DType::I32, {3}, n.desc.name + ".split_grid");
        Node partials = n;
        partials.desc.op = kOpInternalAttentionPartials;
        partials.desc.in[2] = grid;
        partials.desc.n_in = 3;
        partials.desc.name = n.desc.name + ".partials";
        partials.out = kNoTensor;  // its result is the device's scratch
        out.push_back(partials);
        Node combine = n;
        combine.desc.op = kOpInternalAttentionCombine;
        combine.desc.in[0] = grid;
        combine.desc.in[1] = kNoTensor;
        combine.desc.n_in = 1;
        combine.desc.i[1] = int32_t(n_head);
        out.push_back(combine);
    }
    if (rewritten) g.replace_nodes(std::move(out));
    return rewritten;
}

}  // namespace tdm
