/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/recurrent_state.h: what the ops that update a checkpointed recurrent
// state (conv1d_causal, gated_delta_rule) push to find the batch's segments (runs of
// rows of one sequence), their sequences and checkpoints on the device (push constants
// io_off, seq_off, n_ckpt, n_seqs, n_f32 of shaders/include/recurrent_state.glsl), and
// how many segments their dispatch makes room for. The state binding covers every
// sequence slot and checkpoint, so one recorded graph serves every step.
// The state_io layout: graph/graph.h, StateBinding.
// Not here: the checkpoint policy (host/kv).
#pragma once

#include <algorithm>

#include "ops/record.h"

namespace tdm::kernel {

struct StateParams {
    uint32_t io_off, seq_off, n_ckpt, n_seqs, n_f32;
};

// Workgroup rows of a state op's dispatch: one per segment a batch of n rows can hold
// (no more segments than rows, nor than sequence slots in the state).
inline uint32_t state_segments(const StateParams& sp, uint32_t n) { return std::max(1u, std::min(n, sp.n_seqs)); }

inline Result<StateParams> state_params(const RecordContext& c, const Node& n, const StateBinding& st,
                                        std::string_view op) {
    const uint64_t per_seq = uint64_t(st.n_checkpoints) * st.n_f32 * 4;
    if (st.n_checkpoints == 0 || st.n_f32 == 0 || st.buffer.size < per_seq)
        return Error::format("{}: state '{}' holds no checkpoint ({} bytes for {} checkpoints of {} floats)", op,
                             st.name, st.buffer.size, st.n_checkpoints, st.n_f32);
    if (st.buffer.size > c.device.caps().max_storage_buffer_range)
        return Error::format("{}: state '{}' ({}) exceeds one storage binding ({})", op, st.name,
                             vk::format_bytes(st.buffer.size),
                             vk::format_bytes(c.device.caps().max_storage_buffer_range));
    const Tensor& io = c.graph.tensor(n.state_io);
    const Tensor& seq = c.graph.tensor(n.seq_ids);
    return StateParams{uint32_t(io.off), uint32_t(seq.off), st.n_checkpoints, uint32_t(st.buffer.size / per_seq),
                       uint32_t(st.n_f32)};
}

}  // namespace tdm::kernel
