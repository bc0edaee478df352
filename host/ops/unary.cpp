// SPDX-License-Identifier: Apache-2.0
// host/ops/unary.cpp: the one-operand elementwise ops TDM_OP_UNARY (i[0] =
// tdm_unary, f[0] its parameter) and TDM_OP_SCALE (a * f[0]).
// One kernel: shaders/elementwise.comp.
#include "ops/elementwise.h"

namespace tdm {
namespace {

using namespace kernel;

// The unary kind (tdm_unary) as an elementwise code; false for unknown kinds.
bool unary_code(int32_t kind, uint32_t* code) {
    switch (kind) {
        case TDM_UNARY_SILU: *code = TDM_EW_SILU; return true;
        case TDM_UNARY_GELU_TANH: *code = TDM_EW_GELU_TANH; return true;
        case TDM_UNARY_SIGMOID: *code = TDM_EW_SIGMOID; return true;
        case TDM_UNARY_SOFTPLUS: *code = TDM_EW_SOFTPLUS; return true;
        case TDM_UNARY_EXP: *code = TDM_EW_EXP; return true;
        case TDM_UNARY_NEG: *code = TDM_EW_NEG; return true;
        case TDM_UNARY_SOFTCAP: *code = TDM_EW_SOFTCAP; return true;
        case TDM_UNARY_ADD_SCALAR: *code = TDM_EW_ADD_SCALAR; return true;
        case TDM_UNARY_GELU_ERF: *code = TDM_EW_GELU_ERF; return true;
        default: return false;
    }
}

Status check_unary(const OpDesc& d) {
    uint32_t code;
    if (!unary_code(d.i[0], &code))
        return Error::coded(TDM_ERR_UNSUPPORTED, "unary: unknown kind {} (i[0]; this host knows {}..{})", d.i[0],
                            int(TDM_UNARY_SILU), int(TDM_UNARY_GELU_ERF));
    if (d.i[0] == TDM_UNARY_SOFTCAP && !(d.f[0] > 0))
        return Error::coded(TDM_ERR_UNSUPPORTED, "unary softcap: f[0] (the cap) must be > 0, got {}", d.f[0]);
    return {};
}

Status validate_unary(OpContext& c) {
    TDM_TRY(c.f32(0));
    return output_like_input0(c);
}

Status record_unary(RecordContext& c, const Node& n, const std::string&) {
    const OpDesc& d = n.desc;
    uint32_t code = 0;
    TDM_TRY(check_unary(d));
    unary_code(d.i[0], &code);
    return record_elementwise(c, code, d.in[0], kNoTensor, n.out, 0, d.f[0], fmt::format("unary_{}", d.i[0]));
}

Status record_scale(RecordContext& c, const Node& n, const std::string& label) {
    return record_elementwise(c, TDM_EW_SCALE, n.desc.in[0], kNoTensor, n.out, 0, n.desc.f[0], label);
}

}  // namespace

extern const OpDef kOpDef_UNARY = {TDM_OP_UNARY, "unary", 1, 1, 0, check_unary, validate_unary, record_unary};
extern const OpDef kOpDef_SCALE = {TDM_OP_SCALE, "scale", 1, 1, 0, nullptr, validate_unary, record_scale};

}  // namespace tdm
