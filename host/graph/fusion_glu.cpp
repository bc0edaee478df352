// SPDX-License-Identifier: Apache-2.0
// host/graph/fusion_glu.cpp: the GLU epilogue rewrite of fusion_glu.h. It counts every
// tensor's readers once (fusion_uses.h), then for each glu whose two inputs are the two
// results of one two-weight matmul_group, read by that glu alone, puts a matmul_glu at the
// group's place (x and the weights are ready there, and everything that reads the glu's
// result comes after the glu) and drops the glu.
#include "graph/fusion_glu.h"

#include <optional>
#include <vector>

#include "graph/fusion_uses.h"
#include "ops/matmul_glu.h"
#include "op_codes.h"
#include "ops/op_def.h"

namespace tdm {
namespace {

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
    const FusionUses uses(g);

    std::vector<bool> removed(nodes.size(), false);
    std::vector<std::optional<Node>> replaced(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const Node& glu = nodes[i];
        if (glu.desc.op != TDM_OP_GLU || glu.desc.n_in != 2) continue;
        const std::optional<uint32_t> code = epilogue_code(glu.desc.i[0]);
        const TensorId a = glu.desc.in[0], b = glu.desc.in[1];
        if (!code || a == b || !uses.read_only_by(a, glu) || !uses.read_only_by(b, glu)) continue;
        const int m = uses.producer(a);
        if (m < 0 || uses.producer(b) != m || replaced[size_t(m)]) continue;
        const Node& group = nodes[size_t(m)];
        if (group.desc.op != kOpInternalMatmulGroup || group.desc.n_in != 3) continue;  // two weights
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
