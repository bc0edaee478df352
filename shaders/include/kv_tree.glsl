// SPDX-License-Identifier: Apache-2.0
// kv_tree.glsl: where a row of a tree batch stores its K/V and reads its keys
// (host/graph/graph.h, kKvTreeInts), shared by kv_store.comp and the attention shaders.
// Row t of a tree batch is {base, lo, hi}: node i of a draft tree rooted at position base
// stores at base + i, and the 64-bit mask lo | hi << 32 marks its ancestors and itself;
// its key at position base + d (d <= its depth) is stored at base + (the d-th set bit).
// A row with an empty mask, and every row when the graph has no tree input
// (p.tree_off == kNoTree), stores at its position and reads keys where they are.
// Before including: declare `tree[]` (int) and push constant tree_off.

// A shader that defines KV_TREE_CONSTANT_ID gets a specialization constant KV_TREE there,
// false in CPU devices' pipelines of graphs without tree rows (host/ops/kv_tree.h): the
// per-key lookup below then folds away when the pipeline is compiled (on lavapipe it cost
// about 5% of a 512-token prefill).
#ifdef KV_TREE_CONSTANT_ID
layout(constant_id = KV_TREE_CONSTANT_ID) const bool KV_TREE = true;
#else
const bool KV_TREE = true;
#endif

const uint kNoTree = 0xffffffffu;

uvec3 tree_row(uint t) {
    if (!KV_TREE || p.tree_off == kNoTree) return uvec3(0u);
    const uint b = p.tree_off + 3u * t;
    return uvec3(uint(tree[b]), uint(tree[b + 1u]), uint(tree[b + 2u]));
}

// The position holding key k of a row with tree entry r (k at most the row's position).
uint tree_key(uvec3 r, uint k) {
    if (!KV_TREE || (r.y | r.z) == 0u || k < r.x) return k;
    uint d = k - r.x, bits = r.y, shift = 0u;
    const uint n_lo = uint(bitCount(r.y));
    if (d >= n_lo) {
        d -= n_lo;
        bits = r.z;
        shift = 32u;
    }
    for (uint i = 0u; i < d; ++i) bits &= bits - 1u;  // drop the d lowest set bits
    return r.x + shift + uint(findLSB(bits));
}

// The position where a row at position pos with tree entry r stores its K/V: its own
// node, the highest bit of the mask.
uint tree_slot(uvec3 r, uint pos) {
    if ((r.y | r.z) == 0u) return pos;
    return r.x + (r.z != 0u ? 32u + uint(findMSB(r.z)) : uint(findMSB(r.y)));
}
