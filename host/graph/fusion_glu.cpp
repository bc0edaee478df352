// SPDX-License-Identifier: Apache-2.0
// host/graph/fusion_glu.cpp: the GLU epilogue rewrites of fusion_glu.h. It counts every
// tensor's readers once (fusion_uses.h), then for each glu whose gate input a matmul writes
// for that glu alone:
//  - the two results of one two-weight matmul_group, both read by the glu alone: a
//    matmul_glu at the group's place (x and the weights are ready there, and everything that
//    reads the glu's result comes after the glu), the glu dropped;
//  - the result of a plain matmul, the glu's other input e any f32 tensor of its shape: a
//    matmul_act_mul at the glu's place (x, the weight and e are ready there), the matmul
//    dropped.
#include "graph/fusion_glu.h"

#include <optional>
#include <vector>

#include "graph/fusion_uses.h"
#include "op_codes.h"
#include "ops/matmul_act_mul.h"
#include "ops/matmul_glu.h"
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

class GluEpilogues {
public:
    GluEpilogues(Graph& g, const vk::DeviceCaps& caps)
        : g_(g), caps_(caps), uses_(g), removed_(g.nodes().size(), false), replaced_(g.nodes().size()) {}

    uint32_t run() {
        const std::vector<Node>& nodes = g_.nodes();
        for (size_t i = 0; i < nodes.size(); ++i) {
            const Node& glu = nodes[i];
            if (glu.desc.op != TDM_OP_GLU || glu.desc.n_in != 2 || !epilogue_code(glu.desc.i[0])) continue;
            const TensorId a = glu.desc.in[0];
            if (glu.desc.in[1] == a || !uses_.read_only_by(a, glu)) continue;
            const int m = uses_.producer(a);
            if (m < 0 || removed_[size_t(m)] || replaced_[size_t(m)]) continue;
            if (nodes[size_t(m)].desc.op == kOpInternalMatmulGroup) fuse_group(int(i), m);
            else if (nodes[size_t(m)].desc.op == TDM_OP_MATMUL) fuse_matmul(int(i), m);
        }
        std::vector<Node> out;
        uint32_t dropped = 0;
        for (size_t i = 0; i < nodes.size(); ++i) {
            if (replaced_[i]) out.push_back(*replaced_[i]);
            else if (!removed_[i]) out.push_back(nodes[i]);
            else ++dropped;
        }
        if (dropped) g_.replace_nodes(std::move(out));
        return dropped;
    }

private:
    // glu i reads both results of matmul_group m: one matmul_glu at m's place.
    void fuse_group(int i, int m) {
        const Node& glu = g_.nodes()[size_t(i)];
        const Node& group = g_.nodes()[size_t(m)];
        const TensorId a = glu.desc.in[0], b = glu.desc.in[1];
        if (group.desc.n_in != 3 || uses_.producer(b) != m || !uses_.read_only_by(b, glu)) return;  // two weights
        // the group's weights in the order of its results: gate is the one the glu activates
        const bool gate_first = group.out == a;
        const TensorId w_gate = group.desc.in[gate_first ? 1 : 2], w_up = group.desc.in[gate_first ? 2 : 1];
        if (!matmul_glu_spans(caps_, *g_.tensor(w_gate).weight, *g_.tensor(w_up).weight)) return;
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
        f.desc.i[0] = int32_t(*epilogue_code(glu.desc.i[0]));
        f.out = glu.out;
        replaced_[size_t(m)] = std::move(f);
        removed_[size_t(i)] = true;
    }

    // glu i activates the result of plain matmul m and multiplies it by e, an f32 tensor of
    // that result's shape (Gemma 4: a view of the per-layer inputs): one matmul_act_mul at
    // the glu's place.
    void fuse_matmul(int i, int m) {
        const Node& glu = g_.nodes()[size_t(i)];
        const Node& mm = g_.nodes()[size_t(m)];
        if (mm.desc.n_in != 2 || mm.out != glu.desc.in[0]) return;  // an add epilogue is taken
        const Tensor& w = g_.tensor(mm.desc.in[0]);
        if (!w.weight || !matmul_act_mul_supported(caps_, *w.weight)) return;
        const Tensor& y = g_.tensor(mm.out);
        const Tensor& e = g_.tensor(glu.desc.in[1]);
        const TensorKind storage = g_.tensor(e.base).kind;
        if (e.type != DType::F32 || e.cols() != y.cols() || e.rows() != y.rows() ||
            (storage != TensorKind::activation && storage != TensorKind::input))
            return;
        Node f = mm;
        f.desc.op = kOpInternalMatmulActMul;
        f.desc.name = glu.desc.name;
        f.desc.in[2] = glu.desc.in[1];
        f.desc.n_in = 3;
        f.desc.i[0] = glu.desc.i[0] == TDM_GLU_GEGLU ? TDM_MATMUL_EPILOGUE_GEGLU : TDM_MATMUL_EPILOGUE_SWIGLU;
        f.out = glu.out;
        replaced_[size_t(i)] = std::move(f);
        removed_[size_t(m)] = true;
    }

    Graph& g_;
    const vk::DeviceCaps& caps_;
    FusionUses uses_;
    std::vector<bool> removed_;
    std::vector<std::optional<Node>> replaced_;
};

}  // namespace

uint32_t fuse_glu_epilogues(Graph& g, const vk::DeviceCaps& caps) { return GluEpilogues(g, caps).run(); }

}  // namespace tdm
