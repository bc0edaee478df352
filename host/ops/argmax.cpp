// SPDX-License-Identifier: Apache-2.0
// host/ops/argmax.cpp: the ops that pick the indices of each row's largest
// values; ties go to the lower index.
// TDM_OP_ARGMAX runs in two passes, which Graph::op adds as two nodes: the internal
// argmax_slices op (shaders/argmax_slices.comp) reduces each slice of kArgmaxSlice
// columns of a row to its maximum and index, many workgroups per row, and the argmax
// node (shaders/argmax_combine.comp) combines a row's slices in column order, one
// workgroup per row. Its second output is the logit at the argmax (the host's finite
// check reads it when the logits stay on the device).
// TDM_OP_TOP_K (shaders/topk.comp, k <= kMaxTopK, a second output with the values):
// one workgroup per row.
#include <algorithm>

#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

// Input 0: the rows to reduce; input 1 (added by Graph::op, never by a plugin): their
// partials from argmax_slices.
Status validate_argmax(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& x = c.in(0);
    if (c.d.n_in != 2 || c.in(1).type != DType::I32 || c.in(1).rows() != x.rows() ||
        c.in(1).cols() != 2 * int64_t(argmax_slices(x.cols())))
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "argmax: input 1 must be the argmax_slices of input 0");
    // output() adds a tensor to the graph, which may move x: take its rows first
    const int64_t rows = x.rows();
    TDM_TRY(c.output(DType::I32, {rows}));
    return c.second_output(DType::F32, {rows});
}

Status record_argmax(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("argmax_combine", {kLocal}));
    const Tensor& x = tensor(c, d.in[0]);
    struct {
        uint32_t rows, x_off, x_stride, n_slices, p_off, p_stride, y_off, v_off;
    } pc{uint32_t(x.rows()), off(c, d.in[0]), stride(c, d.in[0]), argmax_slices(x.cols()), off(c, d.in[1]),
         stride(c, d.in[1]), off(c, n.out), off(c, n.out2)};
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, d.in[1]), storage(c, n.out), storage(c, n.out2)}, pc,
             uint32_t(x.rows()), 1, label);
    return {};
}

Status validate_argmax_slices(OpContext& c) {
    TDM_TRY(c.f32(0));
    if (c.in(0).rows() > int64_t(kMaxGroups))
        return Error::coded(TDM_ERR_LIMIT, "argmax: {} rows, at most {}", c.in(0).rows(), kMaxGroups);
    return c.output(DType::I32, {2 * int64_t(argmax_slices(c.in(0).cols())), c.in(0).rows()});
}

Status record_argmax_slices(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("argmax_slices", {kLocal}));
    const Tensor& x = tensor(c, d.in[0]);
    const uint32_t slices = argmax_slices(x.cols());
    struct {
        uint32_t cols, x_off, x_stride, slice, n_slices, p_off, p_stride;
    } pc{uint32_t(x.cols()), off(c, d.in[0]), stride(c, d.in[0]), kArgmaxSlice, slices, off(c, n.out),
         stride(c, n.out)};
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, n.out)}, pc, slices, uint32_t(x.rows()), label);
    return {};
}

Status check_top_k(const OpDesc& d) {
    if (d.i[0] < 1) return Error::coded(TDM_ERR_UNSUPPORTED, "top_k: k = {} (i[0]) must be at least 1", d.i[0]);
    if (uint32_t(d.i[0]) > kMaxTopK)
        return Error::coded(TDM_ERR_LIMIT, "top_k: k = {} is over this host's limit of {}", d.i[0], kMaxTopK);
    return {};
}

Status validate_top_k(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& x = c.in(0);
    const int32_t k = c.d.i[0];
    if (k > x.cols())
        return Error::coded(TDM_ERR_SHAPE, "top_k: k = {} out of range 1..min({}, {})", k, kMaxTopK, x.cols());
    const int64_t rows = x.rows();  // output() may move x
    TDM_TRY(c.output(DType::I32, {k, rows}));
    return c.second_output(DType::F32, {k, rows});
}

Status record_top_k(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("topk", {kLocal}));
    const Tensor& x = tensor(c, d.in[0]);
    struct {
        uint32_t rows, cols, x_off, x_stride, k, y_off, y_stride;
    } pc{uint32_t(x.rows()), uint32_t(x.cols()), off(c, d.in[0]), stride(c, d.in[0]), uint32_t(d.i[0]),
         off(c, n.out), stride(c, n.out)};
    // ids and values are separate [k, rows] tensors that start their storage, so
    // one offset/stride pair addresses both.
    if (off(c, n.out) != 0 || off(c, n.out2) != 0) return Error("top_k: outputs must start their storage");
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, n.out), storage(c, n.out2)}, pc, uint32_t(x.rows()), 1, label);
    return {};
}

}  // namespace

uint32_t argmax_slices(int64_t cols) { return kernel::div_up(uint64_t(std::max<int64_t>(cols, 1)), kArgmaxSlice); }

// One input for plugins (Graph::op adds the slices as the second).
extern const OpDef kOpDef_ARGMAX = {TDM_OP_ARGMAX, "argmax", 1, 1, 0, nullptr, validate_argmax, record_argmax};
extern const OpDef kOpArgmaxSlices = {kOpInternalArgmaxSlices, "argmax_slices", 1, 1, 0, nullptr,
                                      validate_argmax_slices, record_argmax_slices};
extern const OpDef kOpDef_TOP_K = {TDM_OP_TOP_K, "top_k", 1, 1, 0, check_top_k, validate_top_k, record_top_k};

}  // namespace tdm
