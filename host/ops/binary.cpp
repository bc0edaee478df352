// SPDX-License-Identifier: Apache-2.0
// host/ops/binary.cpp: the two-operand elementwise ops TDM_OP_ADD, MUL, SUB
// (b: a's shape, one row broadcast over a's rows, one column [1, rows of a]
// broadcast over its columns, or [v2] one element broadcast over all of a; b may
// be a small f32 weight) and TDM_OP_GLU
// (act(gate) * up, same shapes). One kernel: shaders/elementwise.comp.
#include "ops/elementwise.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_operands(OpContext& c, bool broadcast) {
    TDM_TRY(c.f32(0));
    TDM_TRY(broadcast ? c.f32_or_weight(1) : c.f32(1));
    const Tensor& a = c.in(0);
    const Tensor& b = c.in(1);
    const bool same = a.cols() == b.cols() && a.rows() == b.rows();
    const bool row_bcast = broadcast && a.cols() == b.cols() && b.rows() == 1;
    const bool col_bcast = broadcast && b.cols() == 1 && b.rows() == a.rows();
    const bool scalar = broadcast && b.cols() == 1 && b.rows() == 1;
    if (!same && !row_bcast && !col_bcast && !scalar)
        return Error::coded(TDM_ERR_SHAPE, "{}: shapes differ: {} vs {}", c.op(), c.describe(0), c.describe(1));
    return output_like_input0(c);
}

Status validate_arith(OpContext& c) { return validate_operands(c, true); }
Status validate_glu(OpContext& c) { return validate_operands(c, false); }

template <uint32_t kCode>
Status record_arith(RecordContext& c, const Node& n, const std::string& label) {
    return record_elementwise(c, kCode, n.desc.in[0], n.desc.in[1], n.out, 0, 0, label);
}

// The glu kind (i[0], tdm_glu) as an elementwise code; false for unknown kinds.
bool glu_code(int32_t kind, uint32_t* code) {
    switch (kind) {
        case TDM_GLU_SWIGLU: *code = TDM_EW_SWIGLU; return true;
        case TDM_GLU_GEGLU: *code = TDM_EW_GEGLU; return true;
        default: return false;
    }
}

Status check_glu(const OpDesc& d) {
    uint32_t code;
    if (!glu_code(d.i[0], &code))
        return Error::coded(TDM_ERR_UNSUPPORTED, "glu: unknown kind {} (i[0]; this host knows 0 swiglu, 1 geglu)",
                            d.i[0]);
    return {};
}

Status record_glu(RecordContext& c, const Node& n, const std::string& label) {
    uint32_t code = 0;
    TDM_TRY(check_glu(n.desc));
    glu_code(n.desc.i[0], &code);
    return record_elementwise(c, code, n.desc.in[0], n.desc.in[1], n.out, 0, 0, label);
}

}  // namespace

extern const OpDef kOpDef_ADD = {TDM_OP_ADD, "add", 2, 2, 0, nullptr, validate_arith, record_arith<TDM_EW_ADD>};
extern const OpDef kOpDef_MUL = {TDM_OP_MUL, "mul", 2, 2, 0, nullptr, validate_arith, record_arith<TDM_EW_MUL>};
extern const OpDef kOpDef_SUB = {TDM_OP_SUB, "sub", 2, 2, 0, nullptr, validate_arith, record_arith<TDM_EW_SUB>};
extern const OpDef kOpDef_GLU = {TDM_OP_GLU, "glu", 2, 2, 0, check_glu, validate_glu, record_glu};

}  // namespace tdm
