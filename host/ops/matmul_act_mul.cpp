// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul_act_mul.cpp: the matmul with the gated epilogue of matmul_act_mul.h: the
// plain matmul's pipeline and dispatches (matmul.cpp) with the push constant `epilogue` set
// to act(sum) * e. Not here: the pattern matching (graph/fusion_glu.cpp).
#include "ops/matmul_act_mul.h"

#include "op_codes.h"
#include "ops/matmul_split.h"
#include "ops/weight_record.h"

namespace tdm {

bool matmul_act_mul_supported(const vk::DeviceCaps& caps, const DeviceWeight& w) {
    return matmul_layout(caps, w.type()) == MatmulLayout::mv;
}

namespace {

using namespace kernel;

Status validate_matmul_act_mul(OpContext& c) {
    return Error::coded(TDM_ERR_UNSUPPORTED, "{}: formed by the graph's fusion pass only", c.op());
}

Status record_matmul_act_mul(RecordContext& c, const Node& n, const std::string& detail_label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& w = *tensor(c, d.in[0]).weight;
    if (!matmul_act_mul_supported(c.device.caps(), w))  // the fusion pass asked the same of the same device
        return Error::coded(TDM_ERR_UNSUPPORTED, "{}: the matmul of {} has no gated epilogue on this device", d.name,
                            w.name());
    if (d.i[0] != TDM_MATMUL_EPILOGUE_GEGLU && d.i[0] != TDM_MATMUL_EPILOGUE_SWIGLU)
        return Error::coded(TDM_ERR_UNSUPPORTED, "{}: unknown gated epilogue {}", d.name, d.i[0]);
    const std::string label =
        profile_detail() ? detail_label : fmt::format("matmul_act_mul_{}", dtype_name(w.type()));
    return record_matmul_op(c, n, uint32_t(d.i[0]), label);
}

}  // namespace

extern const OpDef kOpMatmulActMul = {kOpInternalMatmulActMul, "matmul_act_mul", 3, 3, 0, nullptr,
                                      validate_matmul_act_mul, record_matmul_act_mul};

}  // namespace tdm
