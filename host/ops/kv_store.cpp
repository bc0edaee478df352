// SPDX-License-Identifier: Apache-2.0
// host/ops/kv_store.cpp: TDM_OP_KV_STORE, writes each batch token's K and V into
// its (sequence, position) slot of a paged KV layer, linear or a sliding-window
// ring (shaders/kv_store.comp, f16 or f32 pool); a tree batch's nodes at their tree slots. The result is the layer itself, so attention orders after it.
#include <algorithm>

#include "ops/kv_tree.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_kv_store(OpContext& c) {
    if (c.in(0).kind != TensorKind::kv)
        return Error::coded(TDM_ERR_TYPE, "kv_store: input 0 must be a KV layer, got {}", c.describe(0));
    TDM_TRY(c.f32(1));
    TDM_TRY(c.f32(2));
    const KvLayerBinding* kv = c.in(0).kv;
    const Tensor& k = c.in(1);
    const Tensor& v = c.in(2);
    const int64_t n = TDM_TRY(c.batch_positions())->elements();
    if (!k.contiguous() || !v.contiguous())
        return Error::coded(TDM_ERR_SHAPE, "kv_store: k and v must be contiguous");
    if (k.elements() != n * kv->n_kv_head * kv->dk || v.elements() != n * kv->n_kv_head * kv->dv)
        return Error::coded(TDM_ERR_SHAPE, "kv_store: k {} / v {} do not hold {} tokens of {} heads x {}/{} for {}",
                            c.describe(1), c.describe(2), n, kv->n_kv_head, kv->dk, kv->dv, kv->name);
    c.pass_through(0);
    return {};
}

Status record_kv_store(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const KvLayerBinding& kv = *tensor(c, d.in[0]).kv;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("kv_store", {kLocal, kv.f16 ? 1u : 0u}));
    const TensorId pos = n.positions, seq = n.seq_ids;
    const uint32_t n_tok = uint32_t(tensor(c, pos).elements());
    struct {
        uint32_t n_tokens, n_kv_head, dk, dv, k_off, k_stride, v_off, v_stride, pos_off, seq_off, block_size, max_blocks,
            ring_blocks, tree_off;
    } pc{n_tok, kv.n_kv_head, kv.dk, kv.dv, off(c, d.in[1]), kv.n_kv_head * kv.dk, off(c, d.in[2]),
         kv.n_kv_head * kv.dv, off(c, pos), off(c, seq), kv.block_size, kv.max_blocks, kv.ring_blocks,
         kv_tree_offset(c, n)};
    const uint32_t pairs = kv.n_kv_head * std::max(kv.dk, kv.dv) / 2;
    dispatch(c, *p,
             {storage(c, d.in[1]), storage(c, d.in[2]), storage(c, pos), storage(c, seq),
              vk::Binding::storage(kv.block_table), vk::Binding::storage(kv.k), vk::Binding::storage(kv.v),
              kv_tree_binding(c, n)},
             pc, div_up(pairs, kLocal), n_tok, label);
    return {};
}

}  // namespace

extern const OpDef kOpDef_KV_STORE = {TDM_OP_KV_STORE, "kv_store", 3, 3, kOpReadsBatch | kOpWritesKv,
                                 nullptr, validate_kv_store, record_kv_store};

}  // namespace tdm
