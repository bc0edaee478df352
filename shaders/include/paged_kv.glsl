// SPDX-License-Identifier: Apache-2.0
// paged_kv.glsl: the paged KV layout shared by kv_store.comp and attention.comp.
// One pool per layer and per K/V: [n_blocks][block_size][n_kv_head][head_dim]
// elements (f16 or f32). A sequence's position `pos` lives in block
// block_table[seq * max_blocks + pos / block_size] at slot pos % block_size; in a
// sliding-window ring (ring_blocks > 0, max_blocks == ring_blocks) the table index
// wraps: (pos / block_size) % ring_blocks, so the layer keeps the last
// ring_blocks * block_size positions (host/kv/kv_layout.h).
// Before including: declare `bt[]` (int block table) and push constants
// block_size, max_blocks, ring_blocks, n_kv_head.

uint kv_element(uint seq, uint pos, uint head, uint head_dim, uint dim) {
    uint b = pos / p.block_size;
    if (p.ring_blocks != 0) b %= p.ring_blocks;
    const uint block = uint(bt[seq * p.max_blocks + b]);
    return ((block * p.block_size + pos % p.block_size) * p.n_kv_head + head) * head_dim + dim;
}
