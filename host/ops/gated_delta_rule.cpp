// SPDX-License-Identifier: Apache-2.0
// host/ops/gated_delta_rule.cpp: TDM_OP_GATED_DELTA_RULE, the Gated DeltaNet core
// (docs/models/common.md §6) over a checkpointed recurrent state. Two forms, one
// dispatch each: recurrent (shaders/gated_delta_rule.comp, i[5] = 0,
// batch-invariant) and chunked (shaders/gated_delta_rule_chunked.comp, i[5] =
// chunk size up to kMaxDeltaRuleChunk, for long prefill batches).
#include <algorithm>
#include <cmath>

#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/recurrent_state.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_gated_delta_rule(const OpDesc& d) {
    const int64_t Nk = d.i[0], Nv = d.i[1], dk = d.i[2], dv = d.i[3];
    if (Nk <= 0 || Nv <= 0 || dk <= 0 || dv <= 0 || Nv % Nk)
        return Error::coded(TDM_ERR_UNSUPPORTED,
                            "gated_delta_rule: invalid heads Nk {} Nv {} dk {} dv {} (i[0..3]: positive, Nv a "
                            "multiple of Nk)",
                            Nk, Nv, dk, dv);
    if (dk % 4 || dv % 4 || dk > kMaxDeltaRuleDim || dv > kMaxDeltaRuleDim)
        return Error::coded(TDM_ERR_LIMIT, "gated_delta_rule: head dims dk {} dv {} must be multiples of 4 up to {}",
                            dk, dv, kMaxDeltaRuleDim);
    if (d.i[4] != TDM_HEAD_MAP_TILED && d.i[4] != TDM_HEAD_MAP_GROUPED)
        return Error::coded(TDM_ERR_UNSUPPORTED,
                            "gated_delta_rule: unknown head map {} (i[4]; this host knows 0 tiled, 1 grouped)", d.i[4]);
    if (d.i[5] < 0)
        return Error::coded(TDM_ERR_UNSUPPORTED, "gated_delta_rule: chunk size i[5] must be 0 (recurrent) to {}, got {}",
                            kMaxDeltaRuleChunk, d.i[5]);
    if (uint32_t(d.i[5]) > kMaxDeltaRuleChunk)
        return Error::coded(TDM_ERR_LIMIT, "gated_delta_rule: chunk size i[5] must be 0 (recurrent) to {}, got {}",
                            kMaxDeltaRuleChunk, d.i[5]);
    return {};
}

Status validate_gated_delta_rule(OpContext& c) {
    for (int k = 0; k < 3; ++k) TDM_TRY(c.f32(k));
    const int64_t Nk = c.d.i[0], Nv = c.d.i[1], dk = c.d.i[2], dv = c.d.i[3];
    const int64_t n = c.in(0).rows();
    if (c.in(0).cols() != 2 * Nk * dk + Nv * dv)
        return Error::coded(TDM_ERR_SHAPE, "gated_delta_rule: qkv {} must have {} columns", c.describe(0),
                            2 * Nk * dk + Nv * dv);
    const Tensor& g = c.in(1);
    const Tensor& beta = c.in(2);
    if (g.elements() != Nv * n || beta.elements() != Nv * n || !g.contiguous() || !beta.contiguous())
        return Error::coded(TDM_ERR_SHAPE, "gated_delta_rule: g {} and beta {} must be contiguous [{}, {}]",
                            c.describe(1), c.describe(2), Nv, n);
    const Tensor& st = c.in(3);
    if (st.kind != TensorKind::state)
        return Error::coded(TDM_ERR_TYPE, "gated_delta_rule: input 3 must be a recurrent state of {} floats",
                            Nv * dk * dv);
    if (st.state->n_f32 != uint64_t(Nv * dk * dv))
        return Error::coded(TDM_ERR_SHAPE,
                            "gated_delta_rule: input 3 must be a recurrent state of {} floats, '{}' has {}",
                            Nv * dk * dv, st.state->name, st.state->n_f32);
    TDM_TRY(c.state_inputs(n));
    return c.output(DType::F32, {dv, Nv, n});
}

Status record_gated_delta_rule(RecordContext& c, const Node& n, const std::string&) {
    const OpDesc& d = n.desc;
    const uint32_t Nk = uint32_t(d.i[0]), Nv = uint32_t(d.i[1]), dk = uint32_t(d.i[2]), dv = uint32_t(d.i[3]);
    const uint32_t grouped = d.i[4] == TDM_HEAD_MAP_GROUPED ? 1 : 0;
    const uint32_t chunk = uint32_t(d.i[5]);  // 0: recurrent form
    const Tensor& qkv = c.graph.tensor(d.in[0]);
    const Tensor& out = c.graph.tensor(n.out);
    const StateBinding& st = *c.graph.tensor(d.in[3]).state;
    const StateParams sp = TDM_TRY(state_params(c, n, st, "gated_delta_rule"));
    const bool texel = act_texel(c);
    const char* path = texel ? "tex" : "buf";
    const std::string name = std::string(chunk ? "gated_delta_rule_chunked_" : "gated_delta_rule_") + path;
    // Recurrent: one lane per column of S. Chunked: enough lanes for the columns
    // of S and for the columns of T of the largest chunk.
    const uint32_t cmax = kMaxDeltaRuleChunk;
    const vk::Pipeline* p = TDM_TRY(chunk ? c.pipelines.get(name, {std::max(dv, cmax), dk, cmax})
                                          : c.pipelines.get(name, {dv, dk}));
    struct {
        uint32_t n_tokens, n_k_heads, n_v_heads, dv, grouped, chunk, qkv_off, qkv_stride, g_off, beta_off, o_off,
            o_stride;
        StateParams s;
        float eps, scale;
    } pc{uint32_t(qkv.rows()),
         Nk,
         Nv,
         dv,
         grouped,
         chunk,
         uint32_t(qkv.off),
         uint32_t(qkv.row_stride),
         uint32_t(c.graph.tensor(d.in[1]).off),
         uint32_t(c.graph.tensor(d.in[2]).off),
         uint32_t(out.off),
         uint32_t(out.row_stride),
         sp,
         d.f[0] != 0 ? d.f[0] : 1e-6f,
         d.f[1] != 0 ? d.f[1] : 1.0f / std::sqrt(float(dk))};
    dispatch(c, *p,
             {TDM_TRY(act_input(c, d.in[0])), TDM_TRY(act_input(c, d.in[1])), TDM_TRY(act_input(c, d.in[2])),
              storage(c, n.out), vk::Binding::storage(st.buffer), storage(c, n.state_io), storage(c, n.seq_ids)},
             pc, Nv, state_segments(sp, uint32_t(qkv.rows())), chunk ? "gated_delta_rule_chunked" : "gated_delta_rule");
    return {};
}

}  // namespace

extern const OpDef kOpDef_GATED_DELTA_RULE = {TDM_OP_GATED_DELTA_RULE, "gated_delta_rule", 4, 4, kOpReadsStateIo,
                                        check_gated_delta_rule, validate_gated_delta_rule, record_gated_delta_rule};

}  // namespace tdm
