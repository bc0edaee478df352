// SPDX-License-Identifier: Apache-2.0
// host/ops/moe_sum.cpp: TDM_OP_MOE_SUM, the weighted sum over a token's expert
// slots, slots added in order (shaders/moe_sum.comp, one dispatch).
#include <algorithm>

#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate(OpContext& c) {
    TDM_TRY(c.f32(0));
    TDM_TRY(c.f32(1));
    const Tensor& y = c.in(0);
    const Tensor& w = c.in(1);
    if (!y.contiguous() || !w.contiguous() || w.ne[0] != y.ne[1] || w.rows() != y.ne[2] * y.ne[3])
        return Error::coded(TDM_ERR_SHAPE, "moe_sum: y {} and weights {} do not match", c.describe(0), c.describe(1));
    return c.output(DType::F32, {y.ne[0], y.ne[2] * y.ne[3]});
}

Status record(RecordContext& c, const Node& n, const std::string&) {
    const OpDesc& d = n.desc;
    const Tensor& y = tensor(c, d.in[0]);
    const uint32_t M = uint32_t(y.ne[0]), n_used = uint32_t(y.ne[1]), n_tok = uint32_t(y.ne[2] * y.ne[3]);
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get(act_texel(c) ? "moe_sum_tex" : "moe_sum_buf", {kLocal}));
    struct {
        uint32_t M, n_used, n_tokens, t0, y_off, w_off, o_off;
    } pc{M, n_used, n_tok, 0, uint32_t(y.off), off(c, d.in[1]), off(c, n.out)};
    const vk::Binding by = TDM_TRY(act_input(c, d.in[0]));
    const vk::Binding bw = TDM_TRY(act_input(c, d.in[1]));
    for (uint32_t t0 = 0; t0 < n_tok; t0 += kMaxGroups) {
        pc.t0 = t0;
        dispatch(c, *p, {by, bw, storage(c, n.out)}, pc, div_up(M, kLocal), std::min(kMaxGroups, n_tok - t0),
                 "moe_sum");
    }
    return {};
}

}  // namespace

extern const OpDef kOpMoeSum = {TDM_OP_MOE_SUM, "moe_sum", 2, 2, 0, nullptr, validate, record};

}  // namespace tdm
