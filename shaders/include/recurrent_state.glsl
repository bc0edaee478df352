// SPDX-License-Identifier: Apache-2.0
// recurrent_state.glsl: checkpointed recurrent states (host/graph/graph.h,
// StateBinding). One buffer holds n_ckpt checkpoints of n_f32 floats for every
// sequence slot; checkpoint c of sequence s starts at float (s * n_ckpt + c) * n_f32.
// The batch belongs to one sequence, seq_ids[0]. state_io[0] names the checkpoint
// read before the first row, state_io[1 + i] the one written after row i (-1: none).
// A sequence or checkpoint outside the buffer reads as a zero state and is never
// written, so bad indices cannot reach memory outside the state.
// Before including: define STATE_BINDING, IO_BINDING, SEQ_BINDING and declare push
// constants io_off, seq_off (element offsets of state_io / seq_ids), n_ckpt,
// n_seqs (sequence slots in the buffer) and n_f32.
layout(binding = STATE_BINDING, std430) buffer StateBuf { float st[]; };
layout(binding = IO_BINDING, std430) readonly buffer IoBuf { int sio[]; };
layout(binding = SEQ_BINDING, std430) readonly buffer SeqBuf { int seq_ids[]; };

// First float of checkpoint c of the batch's sequence; false when outside the state.
bool checkpoint_base(int c, out uint base) {
    const int s = seq_ids[p.seq_off];
    base = 0u;
    if (s < 0 || uint(s) >= p.n_seqs || c < 0 || uint(c) >= p.n_ckpt) return false;
    base = (uint(s) * p.n_ckpt + uint(c)) * p.n_f32;
    return true;
}
// The checkpoint read before the first row.
bool read_checkpoint(out uint base) { return checkpoint_base(sio[p.io_off], base); }
// The checkpoint written after row i, if any.
bool write_checkpoint(uint i, out uint base) { return checkpoint_base(sio[p.io_off + 1u + i], base); }
