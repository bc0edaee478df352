// SPDX-License-Identifier: Apache-2.0
// host/ops/copy.cpp: the ops that copy their inputs into a new contiguous
// tensor: TDM_OP_COPY, TDM_OP_CAST (rounds through f16 or bf16, result f32; or
// to the nearest integer, result i32)
// and TDM_OP_CONCAT (a's columns, then b's). One kernel:
// shaders/elementwise.comp.
#include "ops/elementwise.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_copy(OpContext& c) {
    TDM_TRY(c.f32(0));
    return output_like_input0(c);
}

Status record_copy(RecordContext& c, const Node& n, const std::string& label) {
    return record_elementwise(c, TDM_EW_COPY, n.desc.in[0], kNoTensor, n.out, 0, 0, label);
}

// The cast's target type (i[0], tdm_dtype) as an elementwise code.
bool cast_code(int32_t type, uint32_t* code) {
    switch (type) {
        case TDM_DTYPE_F32: *code = TDM_EW_COPY; return true;
        case TDM_DTYPE_F16: *code = TDM_EW_ROUND_F16; return true;
        case TDM_DTYPE_BF16: *code = TDM_EW_ROUND_BF16; return true;
        case TDM_DTYPE_I32: *code = TDM_EW_TO_I32; return true;
        default: return false;
    }
}

Status check_cast(const OpDesc& d) {
    uint32_t code;
    if (!cast_code(d.i[0], &code))
        return Error::coded(TDM_ERR_UNSUPPORTED, "cast: unsupported target type {} (i[0]; this host knows f32, f16, bf16, i32)",
                            d.i[0]);
    return {};
}

// f32 -> f32, or -> i32 (nearest integer) when i[0] is TDM_DTYPE_I32
Status validate_cast(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& a = c.in(0);
    return c.output(c.d.i[0] == TDM_DTYPE_I32 ? DType::I32 : DType::F32, {a.ne[0], a.ne[1], a.ne[2], a.ne[3]});
}

Status record_cast(RecordContext& c, const Node& n, const std::string& label) {
    uint32_t code = 0;
    TDM_TRY(check_cast(n.desc));
    cast_code(n.desc.i[0], &code);
    return record_elementwise(c, code, n.desc.in[0], kNoTensor, n.out, 0, 0, label);
}

Status validate_concat(OpContext& c) {
    TDM_TRY(c.f32(0));
    TDM_TRY(c.f32(1));
    const Tensor& a = c.in(0);
    if (a.rows() != c.in(1).rows())
        return Error::coded(TDM_ERR_SHAPE, "concat: row counts differ: {} vs {}", c.describe(0), c.describe(1));
    return c.output(DType::F32, {a.cols() + c.in(1).cols(), a.ne[1], a.ne[2], a.ne[3]});
}

Status record_concat(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    TDM_TRY(record_elementwise(c, TDM_EW_COPY, d.in[0], kNoTensor, n.out, 0, 0, label));
    return record_elementwise(c, TDM_EW_COPY, d.in[1], kNoTensor, n.out, uint32_t(tensor(c, d.in[0]).cols()), 0,
                              label);
}

}  // namespace

extern const OpDef kOpDef_COPY = {TDM_OP_COPY, "copy", 1, 1, 0, nullptr, validate_copy, record_copy};
extern const OpDef kOpDef_CAST = {TDM_OP_CAST, "cast", 1, 1, 0, check_cast, validate_cast, record_cast};
extern const OpDef kOpDef_CONCAT = {TDM_OP_CONCAT, "concat", 2, 2, 0, nullptr, validate_concat, record_concat};

}  // namespace tdm
