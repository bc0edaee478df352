// SPDX-License-Identifier: Apache-2.0
// host/ops/norm_add.cpp: the host-internal fused post-norm residual step
// (shaders/norm_add.comp): s = (x + rms(f) * W1) [* sc] and, optionally, y = rms(s) * W2,
// which host/graph/fusion.cpp forms from rms_norm -> add [-> mul] [-> rms_norm]. The
// fusion pass builds the node itself (never Graph::op); its OpDesc:
//   in[0] = f, in[1] = x, then the weights W1, sc, W2 that are present;
//   i[0] = tdm_norm_weight of rms(f), i[1] = 1 when scaled by sc, i[2] = 0 without y or
//   1 + tdm_norm_weight of rms(s); i[3], i[4], i[5] = input slots of W1, sc, W2 (-1: none);
//   f[0], f[1] = the two norms' eps; outputs: out = s, out2 = y.
// Not here: the unfused ops (norm.cpp, binary.cpp), the pattern matching.
#include <algorithm>

#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_norm_add(OpContext& c) {
    return Error::coded(TDM_ERR_UNSUPPORTED, "{}: formed by the graph's fusion pass only", c.op());
}

Status record_norm_add(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const vk::Pipeline* p =
        TDM_TRY(c.pipelines.get("norm_add", {kLocal, uint32_t(d.i[0]), uint32_t(d.i[1]), uint32_t(d.i[2])}));
    const TensorId f = d.in[0], x = d.in[1];
    const Tensor& ft = tensor(c, f);
    const uint32_t rows = uint32_t(ft.rows());
    const TensorId y = n.out2 ? n.out2 : n.out;
    struct {
        uint32_t rows, cols, f_off, f_stride, x_off, x_stride, s_off, s_stride, y_off, y_stride;
        float eps1, eps2;
    } pc{rows, uint32_t(ft.cols()), off(c, f), stride(c, f), off(c, x), stride(c, x), off(c, n.out), stride(c, n.out),
         off(c, y), stride(c, y), d.f[0], d.f[1]};
    auto weight_or = [&](int slot) {  // weights only (fusion.cpp checks); absent: f, never read
        return d.i[slot] < 0 ? storage(c, f) : small_weight(c, d.in[d.i[slot]]);
    };
    dispatch(c, *p, {storage(c, f), storage(c, x), weight_or(3), weight_or(4), weight_or(5), storage(c, n.out),
                     storage(c, y)},
             pc, std::min(rows, kMaxGroups), div_up(rows, kMaxGroups), label);
    return {};
}

}  // namespace

extern const OpDef kOpNormAdd = {kOpInternalNormAdd, "norm_add", 2, 5, 0, nullptr, validate_norm_add, record_norm_add};

}  // namespace tdm
