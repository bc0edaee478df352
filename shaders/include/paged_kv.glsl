// SPDX-License-Identifier: Apache-2.0
// paged_kv.glsl: the paged KV layout shared by kv_store.comp and attention.comp.
// One pool per layer and per K/V: [n_blocks][block_size][n_kv_head][head_dim]
// elements (f16 or f32). A sequence's position `pos` lives in block
// block_table[seq * max_blocks + pos / block_size] at slot pos % block_size.
// Before including: declare `bt[]` (int block table) and push constants
// block_size, max_blocks, n_kv_head.

uint kv_element(uint seq, uint pos, uint head, uint head_dim, uint dim) {
    const uint block = uint(bt[seq * p.max_blocks + pos / p.block_size]);
    return ((block * p.block_size + pos % p.block_size) * p.n_kv_head + head) * head_dim + dim;
}
