// SPDX-License-Identifier: Apache-2.0
// host/ops/attention_split.cpp: TDM_OP_ATTENTION in the split layout (GPUs;
// ops/attention_layout.h), host-internal ops that the graph compiler puts in place of an
// attention node (graph/split_attention.h):
//   attention_partials (shaders/attention.comp built with SPLIT, fold = 0): a workgroup per
//     (kv head, token, split of kAttentionSplitKeys keys) writes each query head's partial
//     softmax state over the split's keys into the device's shared scratch
//     (graph/attention_scratch.h). Dispatched indirectly: its grid, {kv heads, tokens,
//     splits of the batch's longest context}, is a graph input the host writes before each
//     run (graph/split_attention_grid.h), so the work follows the context in use while the
//     command buffer is recorded once;
//   attention_combine (shaders/attention_combine.comp): a workgroup per (query head,
//     token) merges the token's partials in split order into its output rows;
//   attention_folded (attention.comp with SPLIT, fold = 1): for a batch too wide for the
//     passes, a workgroup per (kv head, token) computes and merges the token's splits
//     itself, with the same arithmetic, so every row keeps the bits it has in a decode.
// OpDesc of attention_partials: in[0] = q, in[1] = the KV layer, in[2] = the grid (I32 [3]),
// i[0] = window, f[0] = scale (0: 1 / sqrt(dk)), f[1] = softcap (the attention's); it has
// no result tensor (its result is the scratch). attention_combine: in[0] = the grid,
// i[0] = window, i[1] = query heads; its result is the attention's output.
// attention_folded: the attention's own OpDesc and output.
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

// attention.comp's Params with SPLIT
struct SplitParams {
    uint32_t n_tokens, n_head, n_kv_head, dk, dv, q_off, q_stride, o_off, o_stride, pos_off, seq_off, block_size,
        max_blocks, ring_blocks, window;
    float scale, softcap;
    uint32_t t_base;  // attention_rl.comp's; unused
    uint32_t tree_off, fold;
};
static_assert(sizeof(SplitParams) <= 128, "push constants are limited to 128 bytes");

// The first pass (fold = false: its result is the scratch) or the fold (its result is the
// attention's output), dispatched by the caller.
struct SplitKernel {
    const vk::Pipeline* pipeline;
    SplitParams pc;
    vk::Binding bindings[8];
};

Result<SplitKernel> split_kernel(RecordContext& c, const Node& n, bool fold) {
    const OpDesc& d = n.desc;
    const KvLayerBinding& kv = *tensor(c, d.in[1]).kv;
    const Tensor& q = tensor(c, d.in[0]);
    const uint32_t n_head = uint32_t(q.ne[1]), n_tok = uint32_t(q.ne[2] * q.ne[3]);
    const bool texel = act_texel(c) && kv.k_view && kv.v_view;
    const TensorId pos = n.positions, seq = n.seq_ids;
    const vk::Binding out = fold ? storage(c, n.out) : vk::Binding::storage(c.compiled.split_scratch());
    SplitKernel k{nullptr,
                  {n_tok,
                   n_head,
                   kv.n_kv_head,
                   kv.dk,
                   kv.dv,
                   off(c, d.in[0]),
                   n_head * kv.dk,
                   fold ? off(c, n.out) : 0u,
                   fold ? stride(c, n.out) : 0u,
                   off(c, pos),
                   off(c, seq),
                   kv.block_size,
                   kv.max_blocks,
                   kv.ring_blocks,
                   uint32_t(d.i[0]),
                   d.f[0] != 0 ? d.f[0] : 1.0f / std::sqrt(float(kv.dk)),
                   d.f[1],
                   0u,
                   kv_tree_offset(c, n),
                   fold ? 1u : 0u},
                  {storage(c, d.in[0]),
                   texel ? vk::Binding::texel(kv.k_view) : vk::Binding::storage(kv.k),
                   texel ? vk::Binding::texel(kv.v_view) : vk::Binding::storage(kv.v),
                   storage(c, pos),
                   storage(c, seq),
                   vk::Binding::storage(kv.block_table),
                   out,
                   kv_tree_binding(c, n)}};
    const uint32_t ls = std::max<uint32_t>(32, c.device.caps().subgroup_size);
    k.pipeline = TDM_TRY(c.pipelines.get(texel ? "attention_split_tex" : "attention_split_buf",
                                         {ls, n_head / kv.n_kv_head, kv.f16 ? 1u : 0u, div_up(kv.dv / 4, ls),
                                          kAttentionSplitKeys, kv_tree_pipeline(c, n)}));
    return k;
}

Status record_attention_partials(RecordContext& c, const Node& n, const std::string& label) {
    const SplitKernel k = TDM_TRY(split_kernel(c, n, false));
    const TensorId grid = n.desc.in[2];
    // the profile reads the grid the host wrote for the run it times
    c.cb.record_dispatch_indirect(*k.pipeline, k.bindings, &k.pc, sizeof(k.pc), c.compiled.storage(grid),
                                  static_cast<const uint32_t*>(c.compiled.input_data(grid)), label);
    return {};
}

Status record_attention_folded(RecordContext& c, const Node& n, const std::string& label) {
    const SplitKernel k = TDM_TRY(split_kernel(c, n, true));
    c.cb.record_dispatch(*k.pipeline, k.bindings, &k.pc, sizeof(k.pc), k.pc.n_kv_head, k.pc.n_tokens, 1, label);
    return {};
}

Status record_attention_combine(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const Tensor& o = tensor(c, n.out);
    const uint32_t n_head = uint32_t(d.i[1]);
    struct {
        uint32_t n_tokens, n_head, dv, part_off, pos_off, grid_off, o_off, o_stride, window;
    } pc{uint32_t(o.rows()),
         n_head,
         uint32_t(o.cols()) / n_head,
         0u,
         off(c, n.positions),
         off(c, d.in[0]),
         off(c, n.out),
         stride(c, n.out),
         uint32_t(d.i[0])};
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("attention_combine", {kAttentionSplitKeys}));
    dispatch(c, *p,
             {vk::Binding::storage(c.compiled.split_scratch()), storage(c, n.positions), storage(c, d.in[0]),
              storage(c, n.out)},
             pc, pc.n_head, pc.n_tokens, label);
    return {};
}

}  // namespace

extern const OpDef kOpAttentionPartials = {
    kOpInternalAttentionPartials, "attention_partials", 3, 3, kOpReadsBatch | kOpWritesSplitScratch, nullptr,
    validate_split_pass,          record_attention_partials};
extern const OpDef kOpAttentionCombine = {
    kOpInternalAttentionCombine, "attention_combine", 1, 1, kOpReadsBatch | kOpReadsSplitScratch, nullptr,
    validate_split_pass,         record_attention_combine};
extern const OpDef kOpAttentionFolded = {
    kOpInternalAttentionFolded, "attention_folded",     2, 2, kOpReadsBatch, nullptr,
    validate_split_pass,        record_attention_folded};

}  // namespace tdm
