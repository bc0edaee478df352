// SPDX-License-Identifier: Apache-2.0
// host/ops/select_rows.cpp: TDM_OP_SELECT_ROWS, rows of an activation picked by
// I32 ids (the output rows of a batch). shaders/select_rows.comp.
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_select_rows(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& ids = c.in(1);
    if (ids.type != DType::I32 || ids.kind == TensorKind::kv || ids.kind == TensorKind::state)
        return Error::coded(TDM_ERR_TYPE, "select_rows: ids must be i32, got {}", c.describe(1));
    return c.output(DType::F32, {c.in(0).cols(), ids.elements()});
}

Status record_select_rows(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("select_rows", {kLocal}));
    const Tensor& x = tensor(c, d.in[0]);
    const uint32_t m = uint32_t(tensor(c, d.in[1]).elements());
    struct {
        uint32_t n, cols, x_off, x_stride, ids_off, y_off, y_stride;
    } pc{m, uint32_t(x.cols()), off(c, d.in[0]), stride(c, d.in[0]), off(c, d.in[1]), off(c, n.out),
         stride(c, n.out)};
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, d.in[1]), storage(c, n.out)}, pc, div_up(x.cols(), kLocal), m,
             label);
    return {};
}

}  // namespace

extern const OpDef kOpDef_SELECT_ROWS = {TDM_OP_SELECT_ROWS, "select_rows", 2, 2, 0,
                                    nullptr, validate_select_rows, record_select_rows};

}  // namespace tdm
