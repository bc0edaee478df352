// SPDX-License-Identifier: Apache-2.0
// host/ops/rope.cpp: TDM_OP_ROPE, rotary position embedding of x [head_dim,
// n_heads, n_tokens] (NEOX or adjacent pairs; optional M-RoPE sections,
// frequency factors and a count of rotated slots). shaders/rope.comp, whose MODE and SECTIONS spec constants
// are the ABI's tdm_rope_mode and tdm_rope_sections.
#include <algorithm>

#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_rope(const OpDesc& d) {
    if (d.i[0] != TDM_ROPE_NEOX && d.i[0] != TDM_ROPE_ADJACENT)
        return Error::coded(TDM_ERR_UNSUPPORTED, "rope: unknown mode {} (i[0]; this host knows 0 neox, 1 adjacent)",
                            d.i[0]);
    if (d.i[1] < 0 || d.i[1] % 2)
        return Error::coded(TDM_ERR_UNSUPPORTED, "rope: n_rot {} (i[1]) must be even, or 0 for head_dim", d.i[1]);
    if (d.i[2] < TDM_ROPE_SECTIONS_NONE || d.i[2] > TDM_ROPE_SECTIONS_INTERLEAVED)
        return Error::coded(TDM_ERR_UNSUPPORTED,
                            "rope: unknown sections kind {} (i[2]; this host knows 0 none, 1 contiguous, 2 interleaved)",
                            d.i[2]);
    if (d.i[6] < 0)
        return Error::coded(TDM_ERR_UNSUPPORTED, "rope: rotated frequency slots {} (i[6]) must be >= 0", d.i[6]);
    if (!(d.f[0] > 0)) return Error::coded(TDM_ERR_UNSUPPORTED, "rope: theta (f[0]) must be > 0, got {}", d.f[0]);
    return {};
}

Status validate_rope(OpContext& c) {
    const OpDesc& d = c.d;
    TDM_TRY(c.f32(0));
    const Tensor& x = c.in(0);
    const int64_t hd = x.ne[0], n_tok = x.ne[2] * x.ne[3];
    const int64_t n_rot = d.i[1] ? d.i[1] : hd;
    if (n_rot > hd || n_rot % 2 || hd % 2)
        return Error::coded(TDM_ERR_SHAPE, "rope: n_rot {} invalid for head_dim {}", n_rot, hd);
    if (d.i[6] > n_rot / 2)
        return Error::coded(TDM_ERR_SHAPE, "rope: {} rotated frequency slots (i[6]) exceed n_rot/2 = {}", d.i[6],
                            n_rot / 2);
    const int64_t streams = d.i[2] ? 4 : 1;
    const Tensor& pos = c.in(1);
    if (pos.type != DType::I32 || pos.kind == TensorKind::kv || pos.kind == TensorKind::state)
        return Error::coded(TDM_ERR_TYPE, "rope: positions {} must be i32 with {} per token for {} tokens",
                            c.describe(1), streams, n_tok);
    if (pos.elements() < n_tok * streams)
        return Error::coded(TDM_ERR_SHAPE, "rope: positions {} must be i32 with {} per token for {} tokens",
                            c.describe(1), streams, n_tok);
    if (d.n_in == 3) {
        const Tensor& ff = c.in(2);
        if (ff.type != DType::F32 || ff.kind == TensorKind::kv || ff.kind == TensorKind::state)
            return Error::coded(TDM_ERR_TYPE, "rope: frequency factors {} must be f32 with {} entries", c.describe(2),
                                n_rot / 2);
        if (ff.elements() < n_rot / 2)
            return Error::coded(TDM_ERR_SHAPE, "rope: frequency factors {} must be f32 with {} entries", c.describe(2),
                                n_rot / 2);
    }
    return c.output(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]});
}

Status record_rope(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const Tensor& x = tensor(c, d.in[0]);
    const bool has_ff = d.n_in == 3;
    const uint32_t n_rot = uint32_t(d.i[1] ? d.i[1] : x.ne[0]);
    const vk::Pipeline* p =
        TDM_TRY(c.pipelines.get("rope", {kLocal, uint32_t(d.i[0]), uint32_t(d.i[2]), has_ff ? 1u : 0u}));
    const uint32_t rows = uint32_t(x.rows());
    struct {
        uint32_t rows, head_dim, n_rot, heads_per_token, x_off, x_stride, y_off, y_stride, pos_off, pos_stride, sec0,
            sec1, sec2, row0;
        float theta, freq_scale;
        uint32_t n_freq;
    } pc{rows, uint32_t(x.ne[0]), n_rot, uint32_t(x.ne[1]), off(c, d.in[0]), stride(c, d.in[0]), off(c, n.out),
         stride(c, n.out), off(c, d.in[1]), d.i[2] ? 4u : 1u, uint32_t(d.i[3]), uint32_t(d.i[4]), uint32_t(d.i[5]), 0,
         d.f[0], d.f[1] == 0 ? 1.0f : d.f[1], d.i[6] ? uint32_t(d.i[6]) : n_rot / 2};
    const bool ff_weight = has_ff && tensor(c, d.in[2]).kind == TensorKind::weight;
    const vk::Binding ff = !has_ff ? storage(c, d.in[0]) : ff_weight ? small_weight(c, d.in[2]) : storage(c, d.in[2]);
    if (has_ff && !ff_weight && off(c, d.in[2]) != 0) return Error("rope: frequency factors must start their storage");
    for (uint32_t row0 = 0; row0 < rows; row0 += kMaxGroups) {
        pc.row0 = row0;
        dispatch(c, *p, {storage(c, d.in[0]), storage(c, d.in[1]), ff, storage(c, n.out)}, pc,
                 div_up(x.ne[0] / 2, kLocal), std::min(kMaxGroups, rows - row0), label);
    }
    return {};
}

}  // namespace

extern const OpDef kOpDef_ROPE = {TDM_OP_ROPE, "rope", 2, 3, 0, check_rope, validate_rope, record_rope};

}  // namespace tdm
