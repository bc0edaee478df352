// SPDX-License-Identifier: Apache-2.0
// host/graph/finite_probe.cpp
#include "graph/finite_probe.h"

#include <cstring>

#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {

Result<std::unique_ptr<FiniteProbes>> FiniteProbes::create(vk::Device& device, const Graph& graph) {
    std::unique_ptr<FiniteProbes> p(new FiniteProbes());
    const auto& nodes = graph.nodes();
    p->by_node_.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const OpDef* def = find_op(nodes[i].desc.op);
        if (!def || !def->record) continue;  // a view: its base was probed where it was written
        for (TensorId o : nodes[i].results()) {
            if (o == kNoTensor) continue;
            const Tensor& t = graph.tensor(o);
            if (t.kind != TensorKind::activation || t.type != DType::F32) continue;
            p->by_node_[i].push_back(uint32_t(p->probes_.size()));
            p->probes_.push_back({i, o});
        }
    }
    const uint64_t bytes = std::max<uint64_t>(p->probes_.size(), 1) * 4;
    p->flags_ = TDM_TRY(vk::Buffer::create(device, bytes, vk::MemoryKind::host, "non-finite probe flags"));
    p->reset();
    return p;
}

std::span<const uint32_t> FiniteProbes::slots_of(size_t node) const { return by_node_[node]; }

vk::BufferSlice FiniteProbes::flag(uint32_t slot) const { return {flags_.get(), uint64_t(slot) * 4, 4}; }

Status FiniteProbes::record(RecordContext& ctx, uint32_t slot) const {
    using namespace kernel;
    const vk::Pipeline* p = TDM_TRY(ctx.pipelines.get("finite_probe", {kLocal}));
    const TensorId t = probes_[slot].tensor;
    const Tensor& x = tensor(ctx, t);
    struct {
        uint32_t rows, cols, off, stride, slot;
    } pc{uint32_t(x.rows()), uint32_t(x.cols()), off(ctx, t), stride(ctx, t), slot};
    const uint32_t groups = std::min<uint32_t>(div_up(uint64_t(x.elements()), kLocal), kMaxGroups);
    dispatch(ctx, *p, {storage(ctx, t), vk::Binding::storage({flags_.get(), 0, flags_->size()})}, pc, groups, 1,
             "finite_probe");
    return {};
}

void FiniteProbes::reset() const { std::memset(flags_->mapped(), 0, flags_->size()); }

std::optional<ProbedTensor> FiniteProbes::first_non_finite() const {
    const auto* flags = reinterpret_cast<const uint32_t*>(flags_->mapped());
    for (size_t i = 0; i < probes_.size(); ++i)
        if (flags[i]) return probes_[i];
    return std::nullopt;
}

}  // namespace tdm
