// SPDX-License-Identifier: Apache-2.0
// host/ops/norm_rope.cpp: the host-internal fused attention prologue
// (shaders/norm_rope.comp), which host/graph/fusion.cpp forms from rms_norm -> rope
// of the query heads and rms_norm -> rope -> kv_store of the key heads (with the
// value heads, RMS-normed without a weight or not, stored beside them). Two ops, one
// kernel: kOpInternalNormRope writes the query rows alone; kOpInternalNormRopeStore
// writes the KV layer of input 0 (like kv_store, its first output) and, when the
// query rows ride along, the rotated queries as its second output.
// The fusion pass builds these nodes itself (never Graph::op), so the layout of
// OpDesc below is the one contract between the two files:
//   in[0]: the KV layer (store) or the query source (rows only); in[1]: positions;
//   i[0..6], f[0..1]: the rope's parameters; f[2]: the norms' eps;
//   i[7..9]: norm of q, k, v (kNormRopeNone, or 1 + tdm_norm_weight);
//   i[10..15]: input slots of k, v, q, rope frequency factors, q norm weight, k norm
//   weight (-1: absent).
// Not here: the unfused ops (norm.cpp, rope.cpp, kv_store.cpp), the pattern matching.
#include "ops/norm_rope.h"

#include <algorithm>

#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status validate_norm_rope(OpContext& c) {
    return Error::coded(TDM_ERR_UNSUPPORTED, "{}: formed by the graph's fusion pass only", c.op());
}

TensorId slot(const OpDesc& d, int which) {
    const int k = d.i[kNormRopeSlot0 + which];
    return k < 0 ? kNoTensor : d.in[k];
}

Status record_norm_rope(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const bool store = tensor(c, d.in[0]).kind == TensorKind::kv;
    const TensorId q = slot(d, kNormRopeQ), k = slot(d, kNormRopeK), v = slot(d, kNormRopeV);
    const TensorId ff = slot(d, kNormRopeFreqFactors), qw = slot(d, kNormRopeQWeight), kw = slot(d, kNormRopeKWeight);
    const TensorId pos = d.in[1];
    const TensorId y = store ? n.out2 : n.out;
    const Tensor& head = tensor(c, q ? q : k);
    const uint32_t head_dim = uint32_t(head.cols());
    const uint32_t n_rot = uint32_t(d.i[1] ? d.i[1] : head_dim);
    const KvLayerBinding* kv = store ? tensor(c, d.in[0]).kv : nullptr;
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get(
        "norm_rope", {kLocal, uint32_t(d.i[0]), uint32_t(d.i[2]), ff ? 1u : 0u, uint32_t(d.i[kNormRopeNormQ]), uint32_t(d.i[kNormRopeNormK]),
                      uint32_t(d.i[kNormRopeNormV]), store ? 1u : 0u, kv && !kv->f16 ? 0u : 1u}));
    struct {
        uint32_t q_rows, head_dim, n_rot, q_heads, q_off, q_stride, y_off, y_stride, n_kv_head, k_off, k_stride, v_off,
            v_stride, dv, pos_off, pos_stride, sec0, sec1, sec2;
        float theta, freq_scale;
        uint32_t n_freq;
        float eps;
        uint32_t seq_off, block_size, max_blocks, ring_blocks, k_rows;
    } pc{};
    pc.head_dim = head_dim;
    pc.n_rot = n_rot;
    if (q) {
        const Tensor& qt = tensor(c, q);
        pc.q_rows = uint32_t(qt.rows());
        pc.q_heads = uint32_t(qt.ne[1]);
        pc.q_off = off(c, q);
        pc.q_stride = stride(c, q);
        pc.y_off = off(c, y);
        pc.y_stride = stride(c, y);
    }
    pc.pos_off = off(c, pos);
    pc.pos_stride = d.i[2] ? 4u : 1u;
    pc.sec0 = uint32_t(d.i[3]);
    pc.sec1 = uint32_t(d.i[4]);
    pc.sec2 = uint32_t(d.i[5]);
    pc.theta = d.f[0];
    pc.freq_scale = d.f[1] == 0 ? 1.0f : d.f[1];
    pc.n_freq = d.i[6] ? uint32_t(d.i[6]) : n_rot / 2;
    pc.eps = d.f[2];
    if (store) {
        pc.n_kv_head = kv->n_kv_head;
        pc.k_rows = uint32_t(tensor(c, k).rows());
        pc.k_off = off(c, k);
        pc.k_stride = stride(c, k);
        pc.v_off = off(c, v);
        // a normed V is read by rows of its norm's input; a raw one is contiguous
        pc.v_stride = d.i[kNormRopeNormV] ? stride(c, v) : kv->dv;
        pc.dv = kv->dv;
        pc.seq_off = off(c, n.seq_ids);
        pc.block_size = kv->block_size;
        pc.max_blocks = kv->max_blocks;
        pc.ring_blocks = kv->ring_blocks;
    }
    // absent inputs bind something valid that the kernel never reads
    const TensorId any = q ? q : k;
    auto act_or = [&](TensorId t) { return storage(c, t ? t : any); };
    auto weight_or = [&](TensorId t) { return t ? small_weight(c, t) : storage(c, any); };  // weights only
    const vk::Binding seq = store ? storage(c, n.seq_ids) : storage(c, any);
    const vk::Binding bt = store ? vk::Binding::storage(kv->block_table) : storage(c, any);
    const vk::Binding kp = store ? vk::Binding::storage(kv->k) : storage(c, any);
    const vk::Binding vp = store ? vk::Binding::storage(kv->v) : storage(c, any);
    const vk::Binding yb = y ? storage(c, y) : storage(c, any);
    const uint32_t rows = pc.q_rows + pc.k_rows;
    dispatch(c, *p,
             {act_or(q), act_or(k), act_or(v), storage(c, pos), weight_or(ff), weight_or(qw), weight_or(kw), yb, seq,
              bt, kp, vp},
             pc, std::min(rows, kMaxGroups), div_up(rows, kMaxGroups), label);
    return {};
}

}  // namespace

extern const OpDef kOpNormRope = {kOpInternalNormRope, "norm_rope", 2, 8, 0, nullptr, validate_norm_rope,
                                  record_norm_rope};
extern const OpDef kOpNormRopeStore = {kOpInternalNormRopeStore, "norm_rope_store", 2, 8, kOpReadsBatch | kOpWritesKv,
                                       nullptr, validate_norm_rope, record_norm_rope};

}  // namespace tdm
