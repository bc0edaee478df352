// SPDX-License-Identifier: Apache-2.0
// host/ops/softmax.cpp: TDM_OP_SOFTMAX, softmax(x * scale) per row.
// shaders/softmax.comp, one workgroup per row.
#include <algorithm>

#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_softmax(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& x = c.in(0);
    return c.output(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]});
}

Status record_softmax(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("softmax", {kLocal}));
    const Tensor& x = tensor(c, d.in[0]);
    const uint32_t rows = uint32_t(x.rows());
    struct {
        uint32_t rows, cols, x_off, x_stride, y_off, y_stride;
        float scale;
    } pc{rows, uint32_t(x.cols()), off(c, d.in[0]), stride(c, d.in[0]), off(c, n.out), stride(c, n.out),
         d.f[0] == 0 ? 1.0f : d.f[0]};
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, n.out)}, pc, std::min(rows, kMaxGroups), div_up(rows, kMaxGroups),
             label);
    return {};
}

}  // namespace

extern const OpDef kOpDef_SOFTMAX = {TDM_OP_SOFTMAX, "softmax", 1, 1, 0, nullptr, validate_softmax, record_softmax};

}  // namespace tdm
