// SPDX-License-Identifier: Apache-2.0
// conv1d_causal.comp: causal depthwise 1-D convolution over the tokens of each
// sequence of the batch with a checkpointed state (TDM_OP_CONV1D_CAUSAL; Gated
// DeltaNet's qkv conv, docs/models/common.md §6):
//   y[t][c] = act( sum_j w[c][j] * x_{t-K+1+j}[c] ),  act = SiLU or identity,
// inputs before the batch coming from the state ([K-1][C], oldest first).
//
// One invocation per channel and segment (recurrent_state.glsl: a run of rows of one
// sequence), tokens in order. Each invocation reads its own channel's K-1 state values
// of its segment's sequence and K taps into registers before the segment's first row,
// then keeps the last K-1 inputs in registers; after row i it writes them to
// checkpoint state_io[1 + i] when that is >= 0. Invocations touch only their own
// channel, so writing the checkpoint that was read (decode in place) is safe.
// The sum runs over j in order whatever the batch size: a token's output and the
// states written are bit-identical for any n (batch invariance).
//
// Dispatch: x = ceil(C / local size), y = the most segments a batch can hold. Variants: conv1d_causal_<tex|buf> (x read
// through a texel view or a storage buffer); spec constants K (taps), SILU.
#version 450
#extension GL_EXT_control_flow_attributes : enable
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint K = 4;     // taps per channel (>= 2)
layout(constant_id = 2) const uint SILU = 0;  // 1: SiLU on the output

layout(push_constant) uniform Params {
    uint n_tokens, C;
    uint x_off, x_stride;  // x: row t at x_off + t * x_stride
    uint y_off, y_stride;
    uint io_off, seq_off, n_ckpt, n_seqs, n_f32;
} p;

#include "activations.glsl"
ACT_INPUT(0, x)
layout(binding = 1, std430) readonly buffer WBuf { float w[]; };  // [C][K]
layout(binding = 2, std430) writeonly buffer YBuf { float y[]; };
#define STATE_BINDING 3
#define IO_BINDING 4
#define SEQ_BINDING 5
#include "recurrent_state.glsl"

void main() {
    const uint c = gl_GlobalInvocationID.x;
    Segment sg;
    if (c >= p.C || !batch_segment(gl_WorkGroupID.y, sg)) return;
    float wk[K];
    [[unroll]] for (uint j = 0; j < K; ++j) wk[j] = w[c * K + j];
    float hist[K - 1];  // the K-1 previous inputs, oldest first
    uint base;
    const bool have = read_checkpoint(sg, base);
    [[unroll]] for (uint j = 0; j < K - 1; ++j) hist[j] = have ? st[base + j * p.C + c] : 0.0;

    for (uint t = sg.first; t < sg.first + sg.count; ++t) {
        const float xt = x_at(p.x_off + t * p.x_stride + c);
        float acc = 0.0;
        [[unroll]] for (uint j = 0; j < K - 1; ++j) acc += wk[j] * hist[j];
        acc += wk[K - 1] * xt;
        [[unroll]] for (uint j = 0; j + 1 < K - 1; ++j) hist[j] = hist[j + 1];
        hist[K - 2] = xt;
        y[p.y_off + t * p.y_stride + c] = SILU != 0 ? acc / (1.0 + exp(-acc)) : acc;
        if (write_checkpoint(sg, t, base)) {
            [[unroll]] for (uint j = 0; j < K - 1; ++j) st[base + j * p.C + c] = hist[j];
        }
    }
}
