/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/elementwise.h: the one kernel behind the elementwise ops (add, mul,
// sub, glu, scale, unary, copy, cast, concat): shaders/elementwise.comp, whose
// function is a TDM_EW_* code of shaders/include/op_codes.h.
#pragma once

#include <string>

#include "op_codes.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm::kernel {

// Records y[rows x cols] = op(a, b) with strided views (b = kNoTensor for
// unary codes). b is a's shape, one row (broadcast over rows), or one column
// [1, rows] (broadcast over columns); an f32 weight operand binds its single
// chunk's main plane. y_col_off shifts the output columns (concat).
Status record_elementwise(RecordContext& c, uint32_t op, TensorId a, TensorId b, TensorId y, uint32_t y_col_off,
                          float s, const std::string& label);

// The output has input 0's shape (ops whose result is elementwise in input 0).
inline Status output_like_input0(OpContext& c) {
    const Tensor& a = c.in(0);
    return c.output(DType::F32, {a.ne[0], a.ne[1], a.ne[2], a.ne[3]});
}

}  // namespace tdm::kernel
