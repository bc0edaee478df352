// SPDX-License-Identifier: Apache-2.0
// host/ops/moe_sum.cpp: TDM_OP_MOE_SUM, the weighted sum over a token's expert
// slots, slots added in order, optionally with a per-expert scale of each
// slot's weight (inputs 2 and 3: the slots' expert ids and the scales)
// (shaders/moe_sum.comp, one dispatch).
#include <algorithm>

#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_moe_sum(OpContext& c) {
    TDM_TRY(c.f32(0));
    TDM_TRY(c.f32(1));
    const Tensor& y = c.in(0);
    const Tensor& w = c.in(1);
    if (!y.contiguous() || !w.contiguous() || w.ne[0] != y.ne[1] || w.rows() != y.ne[2] * y.ne[3])
        return Error::coded(TDM_ERR_SHAPE, "moe_sum: y {} and weights {} do not match", c.describe(0), c.describe(1));
    if (c.d.n_in == 3)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "moe_sum: a per-expert scale needs both the ids and the scales "
                                                      "(4 inputs), got 3");
    if (c.d.n_in == 4) {
        const Tensor& ids = c.in(2);
        if (ids.type != DType::I32 || ids.kind == TensorKind::kv || ids.kind == TensorKind::state)
            return Error::coded(TDM_ERR_TYPE, "moe_sum: expert ids {} must be i32", c.describe(2));
        if (!ids.contiguous() || ids.elements() != w.elements())
            return Error::coded(TDM_ERR_SHAPE, "moe_sum: expert ids {} do not match the weights {}", c.describe(2),
                                c.describe(1));
        TDM_TRY(c.f32_or_weight(3));
        if (!c.in(3).contiguous() || c.in(3).rows() != 1)
            return Error::coded(TDM_ERR_SHAPE, "moe_sum: expert scales {} must be one row [n_expert]", c.describe(3));
    }
    return c.output(DType::F32, {y.ne[0], y.ne[2] * y.ne[3]});
}

Status record_moe_sum(RecordContext& c, const Node& n, const std::string&) {
    const OpDesc& d = n.desc;
    const Tensor& y = tensor(c, d.in[0]);
    const uint32_t M = uint32_t(y.ne[0]), n_used = uint32_t(y.ne[1]), n_tok = uint32_t(y.ne[2] * y.ne[3]);
    const bool scaled = d.n_in == 4;
    const vk::Pipeline* p =
        TDM_TRY(c.pipelines.get(act_texel(c) ? "moe_sum_tex" : "moe_sum_buf", {kLocal, scaled ? 1u : 0u}));
    struct {
        uint32_t M, n_used, n_tokens, t0, y_off, w_off, o_off, ids_off, n_expert;
    } pc{M, n_used, n_tok, 0, uint32_t(y.off), off(c, d.in[1]), off(c, n.out), 0, 0};
    const vk::Binding by = TDM_TRY(act_input(c, d.in[0]));
    const vk::Binding bw = TDM_TRY(act_input(c, d.in[1]));
    // unscaled: bindings 3 and 4 are never read; any valid buffer stands in
    vk::Binding bids = storage(c, n.out), bscale = storage(c, n.out);
    if (scaled) {
        const Tensor& s = tensor(c, d.in[3]);
        bids = storage(c, d.in[2]);
        pc.ids_off = off(c, d.in[2]);
        pc.n_expert = uint32_t(s.ne[0]);
        if (s.kind == TensorKind::weight) {
            bscale = small_weight(c, d.in[3]);
        } else {
            if (off(c, d.in[3]) != 0) return Error("moe_sum: expert scales must start their storage");
            bscale = storage(c, d.in[3]);
        }
    }
    for (uint32_t t0 = 0; t0 < n_tok; t0 += kMaxGroups) {
        pc.t0 = t0;
        dispatch(c, *p, {by, bw, storage(c, n.out), bids, bscale}, pc, div_up(M, kLocal), std::min(kMaxGroups, n_tok - t0),
                 "moe_sum");
    }
    return {};
}

}  // namespace

extern const OpDef kOpDef_MOE_SUM = {TDM_OP_MOE_SUM, "moe_sum", 2, 4, 0, nullptr, validate_moe_sum, record_moe_sum};

}  // namespace tdm
