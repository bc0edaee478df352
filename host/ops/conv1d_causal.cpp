// SPDX-License-Identifier: Apache-2.0
// host/ops/conv1d_causal.cpp: TDM_OP_CONV1D_CAUSAL, causal depthwise conv1d over
// time with a checkpointed recurrent state holding the K-1 previous inputs
// (Gated DeltaNet, Mamba). shaders/conv1d_causal.comp, one dispatch over the
// channels and the batch's segments (ops/recurrent_state.h); the state after each
// token is written to the checkpoint state_io names.
#include <algorithm>

#include "graph/weight.h"
#include "ops/op_def.h"
#include "ops/recurrent_state.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_conv1d_causal(const OpDesc& d) {
    if (d.i[0] != 0 && d.i[0] != 1)
        return Error::coded(TDM_ERR_UNSUPPORTED, "conv1d_causal: i[0] (SiLU) must be 0 or 1, got {}", d.i[0]);
    return {};
}

Status validate_conv1d_causal(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& x = c.in(0);
    const Tensor& w = c.in(1);
    if (w.kind != TensorKind::weight || w.type != DType::F32 || w.weight->chunks().size() != 1)
        return Error::coded(TDM_ERR_TYPE, "conv1d_causal: weights {} must be a small f32 weight", c.describe(1));
    const int64_t K = w.ne[0], C = w.elements() / std::max<int64_t>(1, K);
    if (K < 2 || C != x.cols())
        return Error::coded(TDM_ERR_SHAPE, "conv1d_causal: weights {} do not match {} channels", c.describe(1),
                            x.cols());
    const Tensor& st = c.in(2);
    if (st.kind != TensorKind::state)
        return Error::coded(TDM_ERR_TYPE, "conv1d_causal: input 2 must be a recurrent state of {} floats",
                            C * (K - 1));
    if (st.state->n_f32 != uint64_t(C * (K - 1)))
        return Error::coded(TDM_ERR_SHAPE, "conv1d_causal: input 2 must be a recurrent state of {} floats, '{}' has {}",
                            C * (K - 1), st.state->name, st.state->n_f32);
    TDM_TRY(c.state_inputs(x.rows()));
    return c.output(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]});
}

Status record_conv1d_causal(RecordContext& c, const Node& n, const std::string&) {
    const OpDesc& d = n.desc;
    const Tensor& x = c.graph.tensor(d.in[0]);
    const DeviceWeight& w = *c.graph.tensor(d.in[1]).weight;
    const StateBinding& st = *c.graph.tensor(d.in[2]).state;
    const Tensor& y = c.graph.tensor(n.out);
    const StateParams sp = TDM_TRY(state_params(c, n, st, "conv1d_causal"));
    const uint32_t K = uint32_t(w.ne()[0]), C = uint32_t(x.cols());
    const bool texel = act_texel(c);
    const vk::Pipeline* p = TDM_TRY(
        c.pipelines.get(texel ? "conv1d_causal_tex" : "conv1d_causal_buf", {kLocal, K, d.i[0] == 1 ? 1u : 0u}));
    struct {
        uint32_t n_tokens, C, x_off, x_stride, y_off, y_stride;
        StateParams s;
    } pc{uint32_t(x.rows()), C, uint32_t(x.off), uint32_t(x.row_stride), uint32_t(y.off), uint32_t(y.row_stride), sp};
    dispatch(c, *p,
             {TDM_TRY(act_input(c, d.in[0])), vk::Binding::storage(w.chunks()[0].main), storage(c, n.out),
              vk::Binding::storage(st.buffer), storage(c, n.state_io), storage(c, n.seq_ids)},
             pc, div_up(C, kLocal), state_segments(sp, uint32_t(x.rows())), "conv1d_causal");
    return {};
}

}  // namespace

extern const OpDef kOpDef_CONV1D_CAUSAL = {TDM_OP_CONV1D_CAUSAL, "conv1d_causal", 3, 3, kOpReadsStateIo,
                                      check_conv1d_causal, validate_conv1d_causal, record_conv1d_causal};

}  // namespace tdm
