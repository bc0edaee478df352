// SPDX-License-Identifier: Apache-2.0
// kv_store.comp: writes the K and V rows of a batch into the paged pools at each
// token's (sequence, position), through the block table (a sliding-window ring
// wraps it: include/paged_kv.glsl); a node of a tree batch at its tree slot instead
// (include/kv_tree.glsl). KV_F16: pools hold f16 (packHalf2x16 pairs);
// otherwise f32. Each invocation writes one pair of elements of K and of V.
// Dispatch: x = ceil(n_kv_head * max(dk, dv) / 2 / local_size), y = tokens.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KV_F16 = 1;

layout(binding = 0, std430) readonly buffer KIn { float k_in[]; };
layout(binding = 1, std430) readonly buffer VIn { float v_in[]; };
layout(binding = 2, std430) readonly buffer PosBuf { int pos[]; };
layout(binding = 3, std430) readonly buffer SeqBuf { int seq[]; };
layout(binding = 4, std430) readonly buffer BtBuf { int bt[]; };
layout(binding = 5, std430) buffer KPool { uint k_pool[]; };
layout(binding = 6, std430) buffer VPool { uint v_pool[]; };
layout(binding = 7, std430) readonly buffer TreeBuf { int tree[]; };

layout(push_constant) uniform Params {
    uint n_tokens, n_kv_head, dk, dv;
    uint k_off, k_stride, v_off, v_stride;
    uint pos_off, seq_off;
    uint block_size, max_blocks, ring_blocks;
    uint tree_off;  // kNoTree: no tree input
} p;

#include "kv_tree.glsl"
#include "paged_kv.glsl"

void store(uint e, float a, float b, bool is_k) {
    if (KV_F16 != 0) {
        const uint w = packHalf2x16(vec2(a, b));
        if (is_k) k_pool[e / 2] = w; else v_pool[e / 2] = w;
    } else {
        if (is_k) { k_pool[e] = floatBitsToUint(a); k_pool[e + 1] = floatBitsToUint(b); }
        else { v_pool[e] = floatBitsToUint(a); v_pool[e + 1] = floatBitsToUint(b); }
    }
}

void main() {
    const uint t = gl_WorkGroupID.y;
    const uint i = 2 * gl_GlobalInvocationID.x;  // element pair index within the row
    if (t >= p.n_tokens) return;
    const uint s = uint(seq[p.seq_off + t]), ps = tree_slot(tree_row(t), uint(pos[p.pos_off + t]));
    if (i < p.n_kv_head * p.dk) {
        const uint h = i / p.dk, d = i % p.dk;
        const uint src = p.k_off + t * p.k_stride + i;
        store(kv_element(s, ps, h, p.dk, d), k_in[src], k_in[src + 1], true);
    }
    if (i < p.n_kv_head * p.dv) {
        const uint h = i / p.dv, d = i % p.dv;
        const uint src = p.v_off + t * p.v_stride + i;
        store(kv_element(s, ps, h, p.dv, d), v_in[src], v_in[src + 1], false);
    }
}
