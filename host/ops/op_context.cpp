// SPDX-License-Identifier: Apache-2.0
// host/ops/op_context.cpp: the checks many ops share while Graph::op adds them,
// and the creation of their results.
#include "graph/weight.h"
#include "ops/op_def.h"

namespace tdm {

Status OpContext::f32(int k) const {
    const Tensor& t = in(k);
    if (t.kind == TensorKind::weight || t.kind == TensorKind::kv || t.kind == TensorKind::state ||
        t.type != DType::F32)
        return Error::coded(TDM_ERR_TYPE, "{}: input {} must be an f32 activation, got {}", op(), k, describe(k));
    return {};
}

Status OpContext::f32_or_weight(int k) const {
    const Tensor& t = in(k);
    if (t.kind == TensorKind::weight) {
        if (t.type != DType::F32 || t.weight->chunks().size() != 1)
            return Error::coded(TDM_ERR_TYPE, "{}: weight input {} must be a small f32 weight, got {}", op(), k,
                                describe(k));
        return {};
    }
    return f32(k);
}

Status OpContext::weight(int k) const {
    if (in(k).kind != TensorKind::weight)
        return Error::coded(TDM_ERR_TYPE, "{}: input {} must be a weight, got {}", op(), k, describe(k));
    return {};
}

Result<const Tensor*> OpContext::batch_positions() const {
    if (g_.positions_ == kNoTensor)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: the graph has no batch positions", op());
    return &g_.tensors_[g_.positions_];
}

Status OpContext::state_inputs(int64_t n) const {
    if (g_.state_io_ == kNoTensor || g_.seq_ids_ == kNoTensor)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: the graph has no recurrent-state inputs", op());
    // The kernels read state_io (ops/recurrent_state.h) and the seq_ids of segments' first rows.
    const Tensor& io = g_.tensors_[g_.state_io_];
    if (io.type != DType::I32)
        return Error::coded(TDM_ERR_TYPE, "{}: state_io {} must be i32", op(), g_.describe(g_.state_io_));
    if (!io.contiguous() || io.elements() != state_io_entries(n))
        return Error::coded(TDM_ERR_SHAPE,
                            "{}: state_io {} must be i32 [{}] (segments, the checkpoint after each row, each "
                            "segment's first row and read checkpoint)",
                            op(), g_.describe(g_.state_io_), state_io_entries(n));
    if (g_.tensors_[g_.seq_ids_].type != DType::I32)
        return Error::coded(TDM_ERR_TYPE, "{}: seq_ids must be i32", op());
    return {};
}

Status OpContext::output(DType type, std::vector<int64_t> ne) {
    out = TDM_TRY(g_.add_activation(type, std::move(ne), node_, name_));
    return {};
}

Status OpContext::second_output(DType type, std::vector<int64_t> ne, const char* suffix) {
    out2 = TDM_TRY(g_.add_activation(type, std::move(ne), node_, name_ + "." + suffix));
    return {};
}

Status OpContext::view(int k, std::vector<int64_t> ne, uint64_t off, uint64_t row_stride) {
    // A view keeps its base's name unless the op names it.
    out = TDM_TRY(g_.add_view(d.in[k], std::move(ne), off, row_stride, d.name));
    return {};
}

void OpContext::pass_through(int k) {
    Tensor t = in(k);
    t.producer = node_;
    t.name = name_;
    out = g_.add_tensor(std::move(t));
}

}  // namespace tdm
