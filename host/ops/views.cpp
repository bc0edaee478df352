// SPDX-License-Identifier: Apache-2.0
// host/ops/views.cpp: the ops whose result is a view of their input's storage,
// with no work on the device: TDM_OP_VIEW_COLS (some columns of every row) and
// TDM_OP_RESHAPE (new ne of a contiguous tensor).
#include "ops/op_def.h"

namespace tdm {
namespace {

Status validate_view_cols(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& a = c.in(0);
    const int32_t first = c.d.i[0], count = c.d.i[1];
    if (first < 0 || count <= 0 || int64_t(first) + count > a.cols())
        return Error::coded(TDM_ERR_SHAPE, "view_cols: columns [{}, {}) outside {}", first, int64_t(first) + count,
                            c.describe(0));
    return c.view(0, {count, a.ne[1], a.ne[2], a.ne[3]}, a.off + uint64_t(first), a.row_stride);
}

Status check_reshape(const OpDesc& d) {
    for (int k = 0; k < 4; ++k)
        if (d.i[k] < 0)
            return Error::coded(TDM_ERR_UNSUPPORTED, "reshape: negative dimension i[{}] = {}", k, d.i[k]);
    return {};
}

Status validate_reshape(OpContext& c) {
    const Tensor& a = c.in(0);
    if (a.kind == TensorKind::weight || a.kind == TensorKind::kv || a.kind == TensorKind::state)
        return Error::coded(TDM_ERR_TYPE, "reshape: {} is not an activation", c.describe(0));
    if (!a.contiguous())
        return Error::coded(TDM_ERR_SHAPE, "reshape: {} is not contiguous (copy it first)", c.describe(0));
    int64_t n = 1;
    std::vector<int64_t> ne(4, 1);
    for (int k = 0; k < 4; ++k) {
        ne[k] = c.d.i[k] ? c.d.i[k] : 1;
        n *= ne[k];
    }
    if (n != a.elements())
        return Error::coded(TDM_ERR_SHAPE, "reshape: {} elements cannot become [{}, {}, {}, {}]", a.elements(), ne[0],
                            ne[1], ne[2], ne[3]);
    const uint64_t row_stride = uint64_t(ne[0]);
    return c.view(0, std::move(ne), a.off, row_stride);
}

}  // namespace

extern const OpDef kOpDef_VIEW_COLS = {TDM_OP_VIEW_COLS, "view_cols", 1, 1, 0, nullptr, validate_view_cols, nullptr};
extern const OpDef kOpDef_RESHAPE = {TDM_OP_RESHAPE, "reshape", 1, 1, 0, check_reshape, validate_reshape, nullptr};

}  // namespace tdm
