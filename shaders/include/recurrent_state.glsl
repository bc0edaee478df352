// SPDX-License-Identifier: Apache-2.0
// recurrent_state.glsl: checkpointed recurrent states (host/graph/graph.h,
// StateBinding). One buffer holds n_ckpt checkpoints of n_f32 floats for every
// sequence slot; checkpoint c of sequence s starts at float (s * n_ckpt + c) * n_f32.
//
// A batch holds segments: runs of consecutive rows of one sequence, in position order
// (rows of several sequences share a pass in a server). state_io (I32 [3n + 1], n rows;
// host/ops/recurrent_state.h) says, for a batch of S segments:
//   state_io[0]              S
//   state_io[1 + i]          the checkpoint written after row i (-1: none), i < n
//   state_io[1 + n + 2j]     the first row of segment j, j < S (segments in row order)
//   state_io[2 + n + 2j]     the checkpoint segment j reads before its first row
// A segment's sequence is seq_ids of its first row. Workgroup row y of a dispatch runs
// segment y (and returns at once when y >= S), so segments run side by side and each
// row's arithmetic is the same whatever else shares its batch (batch invariance).
// A sequence or checkpoint outside the buffer reads as a zero state and is never
// written, so bad indices cannot reach memory outside the state.
// Before including: define STATE_BINDING, IO_BINDING, SEQ_BINDING and declare push
// constants n_tokens, io_off, seq_off (element offsets of state_io / seq_ids), n_ckpt,
// n_seqs (sequence slots in the buffer) and n_f32.
layout(binding = STATE_BINDING, std430) buffer StateBuf { float st[]; };
layout(binding = IO_BINDING, std430) readonly buffer IoBuf { int sio[]; };
layout(binding = SEQ_BINDING, std430) readonly buffer SeqBuf { int seq_ids[]; };

struct Segment {
    uint first, count;  // rows [first, first + count)
    int seq, read;      // its sequence and the checkpoint read before its first row
};

// Segment j of the batch; false when the batch has fewer (or its entries are corrupt).
bool batch_segment(uint j, out Segment sg) {
    sg = Segment(0u, 0u, -1, -1);
    const int n_seg = sio[p.io_off];
    if (n_seg <= 0 || j >= uint(n_seg) || uint(n_seg) > p.n_tokens) return false;
    const int first = sio[p.io_off + 1u + p.n_tokens + 2u * j];
    const int next = j + 1u < uint(n_seg) ? sio[p.io_off + 1u + p.n_tokens + 2u * (j + 1u)] : int(p.n_tokens);
    if (first < 0 || next <= first || uint(next) > p.n_tokens) return false;
    sg = Segment(uint(first), uint(next - first), seq_ids[p.seq_off + uint(first)],
                 sio[p.io_off + 2u + p.n_tokens + 2u * j]);
    return true;
}

// First float of checkpoint c of sequence s; false when outside the state.
bool checkpoint_base(int s, int c, out uint base) {
    base = 0u;
    if (s < 0 || uint(s) >= p.n_seqs || c < 0 || uint(c) >= p.n_ckpt) return false;
    base = (uint(s) * p.n_ckpt + uint(c)) * p.n_f32;
    return true;
}
// The checkpoint segment sg reads before its first row.
bool read_checkpoint(Segment sg, out uint base) { return checkpoint_base(sg.seq, sg.read, base); }
// The checkpoint written after row i (of segment sg), if any.
bool write_checkpoint(Segment sg, uint i, out uint base) {
    return checkpoint_base(sg.seq, sio[p.io_off + 1u + i], base);
}
