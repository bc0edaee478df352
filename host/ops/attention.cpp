// SPDX-License-Identifier: Apache-2.0
// host/ops/attention.cpp: TDM_OP_ATTENTION over a paged KV layer: each batch
// token attends causally to its own sequence (found through the block table),
// with GQA (G <= kMaxQueryHeadsPerKvHead query heads per KV head), sliding
// window, scale and logit softcap. Three layouts (ops/attention_layout.h); in each the KV
// range is split at fixed boundaries whatever the batch width (tandem.h invariant 1). This
// file records "rl" and "ks"; the graph compiler turns attention in the split layout into
// the kernels of attention_split.cpp (graph/split_attention.h). In a tree batch (graph.h, kKvTreeInts) a row reads
// its ancestors' keys where the tree stored them.
#include <algorithm>
#include <cmath>

#include "ops/attention_layout.h"
#include "ops/kv_tree.h"
#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/record.h"
#include "ops/rows_per_lane.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_attention(const OpDesc& d) {
    if (d.i[0] < 0) return Error::coded(TDM_ERR_UNSUPPORTED, "attention: negative window (i[0] = {})", d.i[0]);
    return {};
}

Status validate_attention(OpContext& c) {
    TDM_TRY(c.f32(0));
    if (c.in(1).kind != TensorKind::kv)
        return Error::coded(TDM_ERR_TYPE, "attention: input 1 must be a KV layer, got {}", c.describe(1));
    const KvLayerBinding* kv = c.in(1).kv;
    const Tensor& q = c.in(0);
    if (!q.contiguous()) return Error::coded(TDM_ERR_SHAPE, "attention: q must be contiguous");
    if (q.ne[0] != kv->dk)
        return Error::coded(TDM_ERR_SHAPE, "attention: q head dim {} differs from {}'s {}", q.ne[0], kv->name, kv->dk);
    const int64_t n_head = q.ne[1];
    if (n_head % kv->n_kv_head)
        return Error::coded(TDM_ERR_SHAPE, "attention: {} query heads are not a multiple of {} kv heads", n_head,
                            kv->n_kv_head);
    if (n_head / kv->n_kv_head > kMaxQueryHeadsPerKvHead)
        return Error::coded(TDM_ERR_LIMIT, "attention: {} query heads per kv head, this host handles at most {}",
                            n_head / kv->n_kv_head, kMaxQueryHeadsPerKvHead);
    // a sliding-window ring holds the layer's last window (and the batch), nothing older
    if (kv->ring_blocks && (c.d.i[0] == 0 || uint32_t(c.d.i[0]) > kv->window))
        return Error::coded(TDM_ERR_UNSUPPORTED,
                            "attention: {} keeps only the last {} positions (its window) in a ring; attention with "
                            "window {} would read older ones",
                            kv->name, kv->window, c.d.i[0]);
    const int64_t n_batch = TDM_TRY(c.batch_positions())->elements();
    const int64_t n = q.ne[2] * q.ne[3];
    if (n != n_batch) return Error::coded(TDM_ERR_SHAPE, "attention: q has {} tokens, the batch {}", n, n_batch);
    return c.output(DType::F32, {kv->dv * n_head, n});
}

// Tokens per lane of the rl layout: four at head dim 64, fewer for wider heads, whose
// queries and accumulators would otherwise take minutes to compile on lavapipe; a
// token's arithmetic does not depend on it.
uint32_t rl_tokens_per_lane(uint32_t dk4, uint32_t dv4) { return std::clamp<uint32_t>(64 / std::max(dk4, dv4), 1, 4); }

Status record_attention(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const KvLayerBinding& kv = *tensor(c, d.in[1]).kv;
    const Tensor& q = tensor(c, d.in[0]);
    const uint32_t n_head = uint32_t(q.ne[1]);
    const uint32_t G = n_head / kv.n_kv_head;
    const bool texel = act_texel(c) && kv.k_view && kv.v_view;
    const TensorId pos = n.positions, seq = n.seq_ids;
    const uint32_t tree = kv_tree_pipeline(c, n);  // constant 6 (rl) or 5: kv_tree.glsl
    const uint32_t n_tok = uint32_t(q.ne[2] * q.ne[3]);
    struct {
        uint32_t n_tokens, n_head, n_kv_head, dk, dv, q_off, q_stride, o_off, o_stride, pos_off, seq_off, block_size,
            max_blocks, ring_blocks, window;
        float scale, softcap;
        uint32_t t_base;  // attention_rl only
        uint32_t tree_off;
    } pc{n_tok, n_head, kv.n_kv_head, kv.dk, kv.dv, off(c, d.in[0]), n_head * kv.dk, off(c, n.out),
         stride(c, n.out), off(c, pos), off(c, seq), kv.block_size, kv.max_blocks, kv.ring_blocks, uint32_t(d.i[0]),
         d.f[0] != 0 ? d.f[0] : 1.0f / std::sqrt(float(kv.dk)), d.f[1], 0u, kv_tree_offset(c, n)};
    const vk::Binding kb = texel ? vk::Binding::texel(kv.k_view) : vk::Binding::storage(kv.k);
    const vk::Binding vb = texel ? vk::Binding::texel(kv.v_view) : vk::Binding::storage(kv.v);
    const std::initializer_list<vk::Binding> bindings = {storage(c, d.in[0]),
                                                         kb,
                                                         vb,
                                                         storage(c, pos),
                                                         storage(c, seq),
                                                         vk::Binding::storage(kv.block_table),
                                                         storage(c, n.out),
                                                         kv_tree_binding(c, n)};
    if (attention_layout(c.device.caps(), kv) == AttentionLayout::rows_per_lane) {
        const uint32_t dk4 = kv.dk / 4, dv4 = kv.dv / 4, ql = rl_tokens_per_lane(dk4, dv4);
        const uint32_t slots = lane_slots(G);
        const vk::Pipeline* p = TDM_TRY(
            c.pipelines.get("attention_rl", {slots * G, G, dk4, dv4, lane_keys_per_chunk(dk4, dv4), ql, tree}));
        dispatch_query_blocks(c, *p, bindings, pc, pc.t_base, n_tok, slots * ql, kv.n_kv_head, label);
        return {};
    }
    const uint32_t ls = std::max<uint32_t>(32, c.device.caps().subgroup_size);
    const uint32_t dv4 = div_up(kv.dv / 4, ls);
    const vk::Pipeline* p =
        TDM_TRY(c.pipelines.get(texel ? "attention_tex" : "attention_buf",
                                {ls, G, kv.f16 ? 1u : 0u, dv4, kAttentionSplitKeys, tree}));
    dispatch(c, *p, bindings, pc, kv.n_kv_head, n_tok, label);
    return {};
}

}  // namespace

extern const OpDef kOpDef_ATTENTION = {TDM_OP_ATTENTION, "attention", 2, 2, kOpReadsBatch,
                                   check_attention, validate_attention, record_attention};

}  // namespace tdm
