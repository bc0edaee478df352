// SPDX-License-Identifier: Apache-2.0
// host/ops/attention_split.cpp: the two passes of TDM_OP_ATTENTION in the split layout
// (GPUs; ops/attention_layout.h), host-internal ops that the graph compiler puts in place
// of an attention node (graph/split_attention.h) for a run of the batch's tokens:
//   attention_partials (shaders/attention.comp built with SPLIT): a workgroup per (kv
//     head, token, split of kAttentionSplitKeys keys) writes each query head's partial
//     softmax state over the split's keys;
//   attention_combine (shaders/attention_combine.comp): a workgroup per (query head,
//     token) merges the token's partials in split order into its output rows.
// OpDesc of attention_partials: in[0] = q, in[1] = the KV layer, i[0] = window, i[1] =
// the run's first token in the batch, f[0] = scale (0: 1 / sqrt(dk)), f[1] = softcap (the
// attention's); its result holds the partials, F32 [dv + 2, max splits, n_head, tokens].
// OpDesc of attention_combine: in[0] = the partials, i[0] = window, i[1] = the run's first
// token; its result is the attention's output, of which it writes the run's rows.
// Not here: the other layouts (attention.cpp), the choice of layout and the split geometry
// (attention_layout.cpp).
#include <algorithm>
#include <cmath>

#include "ops/attention_layout.h"
#include "ops/kv_tree.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_split_pass(OpContext& c) {
    return Error::coded(TDM_ERR_UNSUPPORTED, "{}: formed by the graph compiler's split attention only", c.op());
}

Status record_attention_partials(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const KvLayerBinding& kv = *tensor(c, d.in[1]).kv;
    const Tensor& part = tensor(c, n.out);
    const uint32_t max_splits = uint32_t(part.ne[1]), n_head = uint32_t(part.ne[2]), n_tok = uint32_t(part.ne[3]);
    const uint32_t G = n_head / kv.n_kv_head, t0 = uint32_t(d.i[1]);
    const bool texel = act_texel(c) && kv.k_view && kv.v_view;
    const TensorId pos = n.positions, seq = n.seq_ids;
    uint32_t tree_off = kv_tree_offset(c, n);
    if (tree_off != kNoKvTree) tree_off += uint32_t(kKvTreeInts) * t0;
    // attention.comp's Params with SPLIT
    struct {
        uint32_t n_tokens, n_head, n_kv_head, dk, dv, q_off, q_stride, o_off, o_stride, pos_off, seq_off, block_size,
            max_blocks, ring_blocks, window;
        float scale, softcap;
        uint32_t t_base;  // attention_rl.comp's; unused
        uint32_t tree_off, max_splits;
    } pc{n_tok,
         n_head,
         kv.n_kv_head,
         kv.dk,
         kv.dv,
         off(c, d.in[0]) + t0 * n_head * kv.dk,
         n_head * kv.dk,
         off(c, n.out),
         0u,
         off(c, pos) + t0,
         off(c, seq) + t0,
         kv.block_size,
         kv.max_blocks,
         kv.ring_blocks,
         uint32_t(d.i[0]),
         d.f[0] != 0 ? d.f[0] : 1.0f / std::sqrt(float(kv.dk)),
         d.f[1],
         0u,
         tree_off,
         max_splits};
    const vk::Binding bindings[] = {storage(c, d.in[0]),
                                    texel ? vk::Binding::texel(kv.k_view) : vk::Binding::storage(kv.k),
                                    texel ? vk::Binding::texel(kv.v_view) : vk::Binding::storage(kv.v),
                                    storage(c, pos),
                                    storage(c, seq),
                                    vk::Binding::storage(kv.block_table),
                                    storage(c, n.out),
                                    kv_tree_binding(c, n)};
    const uint32_t ls = std::max<uint32_t>(32, c.device.caps().subgroup_size);
    const vk::Pipeline* p =
        TDM_TRY(c.pipelines.get(texel ? "attention_split_tex" : "attention_split_buf",
                                {ls, G, kv.f16 ? 1u : 0u, div_up(kv.dv / 4, ls), kAttentionSplitKeys}));
    static_assert(sizeof(pc) <= 128, "push constants are limited to 128 bytes");
    c.cb.record_dispatch(*p, bindings, &pc, sizeof(pc), kv.n_kv_head, n_tok, max_splits, label);
    return {};
}

Status record_attention_combine(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const Tensor& part = tensor(c, d.in[0]);
    const uint32_t t0 = uint32_t(d.i[1]);
    struct {
        uint32_t n_tokens, n_head, dv, max_splits, part_off, pos_off, o_off, o_stride, window;
    } pc{uint32_t(part.ne[3]),
         uint32_t(part.ne[2]),
         uint32_t(part.ne[0] - 2),
         uint32_t(part.ne[1]),
         off(c, d.in[0]),
         off(c, n.positions) + t0,
         off(c, n.out) + t0 * stride(c, n.out),
         stride(c, n.out),
         uint32_t(d.i[0])};
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("attention_combine", {kAttentionSplitKeys}));
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, n.positions), storage(c, n.out)}, pc, pc.n_head, pc.n_tokens,
             label);
    return {};
}

}  // namespace

extern const OpDef kOpAttentionPartials = {
    kOpInternalAttentionPartials, "attention_partials",     2, 2, kOpReadsBatch, nullptr,
    validate_split_pass,          record_attention_partials};
extern const OpDef kOpAttentionCombine = {
    kOpInternalAttentionCombine, "attention_combine",     1, 1, kOpReadsBatch, nullptr,
    validate_split_pass,         record_attention_combine};

}  // namespace tdm
