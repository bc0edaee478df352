// SPDX-License-Identifier: Apache-2.0
// host/graph/fusion_glu.cpp: the GLU epilogue rewrite of fusion_glu.h. It counts every
// tensor's readers once, then for each glu whose two inputs are the two results of one
// matmul_group, read by that glu alone, puts a matmul_glu at the group's place (x and the
// weights are ready there, and everything that reads the glu's result comes after the
// glu) and drops the glu.
#include "graph/fusion_glu.h"

#include <optional>
#include <vector>

#include "ops/matmul_glu.h"
#include "op_codes.h"
#include "ops/op_def.h"

namespace tdm {
namespace {

// Readers per storage owner (a view's reads count for its base); graph outputs and
// caller-bound storage count as extra readers, so they are never fused away.
std::vector<int> count_readers(const Graph& g) {
    std::vector<int> readers(g.tensor_count(), 0);
    for (const Node& n : g.nodes()) {
        for (int k = 0; k < n.desc.n_in; ++k) ++readers[g.tensor(n.desc.in[k]).base];
        for (TensorId t : {n.positions, n.seq_ids, n.state_io, n.kv_tree})
            if (t != kNoTensor) ++readers[g.tensor(t).base];
    }
    for (TensorId o : g.outputs()) readers[g.tensor(o).base] += 2;
    for (TensorId t = 1; t < g.tensor_count(); ++t)
        if (g.tensor(t).bound) readers[t] += 2;
    return readers;
}

// The elementwise code of a glu kind (i[0], tdm_glu), or nullopt.
std::optional<uint32_t> epilogue_code(int32_t kind) {
    switch (kind) {
        case TDM_GLU_SWIGLU: return TDM_EW_SWIGLU;
        case TDM_GLU_GEGLU: return TDM_EW_GEGLU;
        default: return std::nullopt;
    }
}

}  // namespace

uint32_t fuse_glu_epilogues(Graph& g, const vk::DeviceCaps& caps) {
    const std::vector<Node>& nodes = g.nodes();
    const std::vector<int> readers = count_readers(g);
    std::vector<int> producer(g.tensor_count(), -1);  // the group node writing a tensor
    for (size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].desc.op == kOpInternalMatmulGroup && nodes[i].desc.n_in == 3)
            for (TensorId o : {nodes[i].out, nodes[i].out2}) producer[o] = int(i);
    // an activation of its own storage that one node reads
    auto read_once = [&](TensorId t) {
        const Tensor& x = g.tensor(t);
        return x.kind == TensorKind::activation && x.base == t && readers[t] == 1;
    };

    std::vector<bool> removed(nodes.size(), false);
    std::vector<std::optional<Node>> replaced(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const Node& glu = nodes[i];
        if (glu.desc.op != TDM_OP_GLU || glu.desc.n_in != 2) continue;
        const std::optional<uint32_t> code = epilogue_code(glu.desc.i[0]);
        const TensorId a = glu.desc.in[0], b = glu.desc.in[1];
        if (!code || a == b || !read_once(a) || !read_once(b)) continue;
        const int m = producer[a];
        if (m < 0 || producer[b] != m || replaced[size_t(m)]) continue;
        const Node& group = nodes[size_t(m)];
        // the group's weights in the order of its results: gate is the one the glu activates
        const bool gate_first = group.out == a;
        const TensorId w_gate = group.desc.in[gate_first ? 1 : 2], w_up = group.desc.in[gate_first ? 2 : 1];
        if (!matmul_glu_spans(caps, *g.tensor(w_gate).weight, *g.tensor(w_up).weight)) continue;
        Node f;
        f.desc.op = kOpInternalMatmulGlu;
        f.desc.name = glu.desc.name;
        f.positions = group.positions;
        f.seq_ids = group.seq_ids;
        f.state_io = group.state_io;
        f.desc.in[0] = group.desc.in[0];
        f.desc.in[1] = w_gate;
        f.desc.in[2] = w_up;
        f.desc.n_in = 3;
        f.desc.i[0] = int32_t(*code);
        f.out = glu.out;
        replaced[size_t(m)] = std::move(f);
        removed[i] = true;
    }

    std::vector<Node> out;
    uint32_t dropped = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (replaced[i]) out.push_back(*replaced[i]);
        else if (!removed[i]) out.push_back(nodes[i]);
        else ++dropped;
    }
    if (dropped) g.replace_nodes(std::move(out));
    return dropped;
}

}  // namespace tdm
