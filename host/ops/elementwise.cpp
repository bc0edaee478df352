// SPDX-License-Identifier: Apache-2.0
// host/ops/elementwise.cpp: recording of shaders/elementwise.comp, shared by the
// elementwise ops (their OpDefs live in binary.cpp, unary.cpp, copy.cpp,
// concat.cpp).
#include "ops/elementwise.h"

#include <algorithm>

#include "graph/weight.h"

namespace tdm::kernel {

Status record_elementwise(RecordContext& c, uint32_t op, TensorId a, TensorId b, TensorId y, uint32_t y_col_off,
                          float s, const std::string& label) {
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("elementwise", {kLocal, op}));
    const Tensor& ta = tensor(c, a);
    const uint32_t rows = uint32_t(ta.rows()), cols = uint32_t(ta.cols());
    struct {
        uint32_t rows, cols, a_off, a_stride, b_off, b_stride, b_cstride, y_off, y_stride, row0;
        float s;
    } pc{rows, cols, off(c, a), stride(c, a), 0, 0, 1, off(c, y) + y_col_off, stride(c, y), 0, s};
    vk::Binding bb = storage(c, a);
    if (b != kNoTensor) {
        const Tensor& tb = tensor(c, b);
        const bool weight = tb.kind == TensorKind::weight;
        bb = weight ? small_weight(c, b) : storage(c, b);
        pc.b_off = weight ? 0 : off(c, b);
        pc.b_stride = stride(c, b);
        const bool same = tb.cols() == ta.cols() && tb.rows() == ta.rows();
        if (!same && tb.rows() == 1 && tb.cols() == ta.cols()) pc.b_stride = 0;  // one row over all rows
        if (!same && tb.cols() == 1) pc.b_cstride = 0;                            // one column over all columns
        if (!same && tb.cols() == 1 && tb.rows() == 1) pc.b_stride = 0;           // one element over everything
    }
    for (uint32_t row0 = 0; row0 < rows; row0 += kMaxGroups) {
        pc.row0 = row0;
        dispatch(c, *p, {storage(c, a), bb, storage(c, y)}, pc, div_up(cols, kLocal), std::min(kMaxGroups, rows - row0),
                 label);
    }
    return {};
}

}  // namespace tdm::kernel
