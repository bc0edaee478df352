// SPDX-License-Identifier: Apache-2.0
// host/ops/argmax.cpp: the ops that pick the indices of each row's largest
// values: TDM_OP_ARGMAX (shaders/argmax.comp) and TDM_OP_TOP_K
// (shaders/topk.comp, k <= kMaxTopK, a second output with the values). One
// workgroup per row; ties go to the lower index.
#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_argmax(OpContext& c) {
    TDM_TRY(c.f32(0));
    return c.output(DType::I32, {c.in(0).rows()});
}

Status record_argmax(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("argmax", {kLocal}));
    const Tensor& x = tensor(c, d.in[0]);
    struct {
        uint32_t rows, cols, x_off, x_stride, y_off;
    } pc{uint32_t(x.rows()), uint32_t(x.cols()), off(c, d.in[0]), stride(c, d.in[0]), off(c, n.out)};
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, n.out)}, pc, uint32_t(x.rows()), 1, label);
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
    TDM_TRY(c.output(DType::I32, {k, x.rows()}));
    return c.second_output(DType::F32, {k, x.rows()});
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

extern const OpDef kOpDef_ARGMAX = {TDM_OP_ARGMAX, "argmax", 1, 1, 0, nullptr, validate_argmax, record_argmax};
extern const OpDef kOpDef_TOP_K = {TDM_OP_TOP_K, "top_k", 1, 1, 0, check_top_k, validate_top_k, record_top_k};

}  // namespace tdm
