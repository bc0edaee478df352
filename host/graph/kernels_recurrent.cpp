// host/graph/kernels_recurrent.cpp: recording of the ops that update a
// checkpointed recurrent state: conv1d_causal (shaders/conv1d_causal.comp) and
// gated_delta_rule (shaders/gated_delta_rule.comp, recurrent form, and
// shaders/gated_delta_rule_chunked.comp, chunked form). Each is one dispatch.
// The state binding covers every sequence slot and checkpoint of the state; the
// kernels find the batch's sequence (seq_ids[0]) and checkpoints (state_io) of
// the node's batch on the device, so one recorded graph serves every step.
// Not here: shape validation (graph.cpp), the checkpoint policy (host/kv).
#include <algorithm>
#include <cmath>

#include "graph/kernel_util.h"
#include "graph/weight.h"

namespace tdm {
namespace {

using kernel::act_input;
using kernel::act_texel;
using kernel::storage;

constexpr uint32_t kLocal = 64;

// Where the kernels find the batch's sequence and checkpoints (push constants
// io_off, seq_off, n_ckpt, n_seqs, n_f32 of shaders/include/recurrent_state.glsl).
struct StateParams {
    uint32_t io_off, seq_off, n_ckpt, n_seqs, n_f32;
};

Result<StateParams> state_params(const RecordContext& c, const Node& n, const StateBinding& st, std::string_view op) {
    const uint64_t per_seq = uint64_t(st.n_checkpoints) * st.n_f32 * 4;
    if (st.n_checkpoints == 0 || st.n_f32 == 0 || st.buffer.size < per_seq)
        return Error::format("{}: state '{}' holds no checkpoint ({} bytes for {} checkpoints of {} floats)", op,
                             st.name, st.buffer.size, st.n_checkpoints, st.n_f32);
    if (st.buffer.size > c.device.caps().max_storage_buffer_range)
        return Error::format("{}: state '{}' ({}) exceeds one storage binding ({})", op, st.name,
                             vk::format_bytes(st.buffer.size), vk::format_bytes(c.device.caps().max_storage_buffer_range));
    const Tensor& io = c.graph.tensor(n.state_io);
    const Tensor& seq = c.graph.tensor(n.seq_ids);
    return StateParams{uint32_t(io.off), uint32_t(seq.off), st.n_checkpoints, uint32_t(st.buffer.size / per_seq),
                       uint32_t(st.n_f32)};
}

}  // namespace

Status record_conv1d_causal(RecordContext& c, const Node& n) {
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
    kernel::dispatch(c, *p,
                     {TDM_TRY(act_input(c, d.in[0])), vk::Binding::storage(w.chunks()[0].main), storage(c, n.out),
                      vk::Binding::storage(st.buffer), storage(c, n.state_io),
                      storage(c, n.seq_ids)},
                     pc, kernel::div_up(C, kLocal), 1, "conv1d_causal");
    return {};
}

Status record_gated_delta_rule(RecordContext& c, const Node& n) {
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
    const uint32_t cmax = uint32_t(kMaxDeltaRuleChunk);
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
    kernel::dispatch(c, *p,
                     {TDM_TRY(act_input(c, d.in[0])), TDM_TRY(act_input(c, d.in[1])), TDM_TRY(act_input(c, d.in[2])),
                      storage(c, n.out), vk::Binding::storage(st.buffer), storage(c, n.state_io),
                      storage(c, n.seq_ids)},
                     pc, Nv, 1, chunk ? "gated_delta_rule_chunked" : "gated_delta_rule");
    return {};
}

}  // namespace tdm
