// SPDX-License-Identifier: Apache-2.0
// host/ops/attention_full.cpp: TDM_OP_ATTENTION_FULL, attention of every query over plain
// K/V activations with no KV layer and no causal mask (vision encoders: every patch of an
// image sees every other), optionally limited per query to a key range (one image among
// several). shaders/attention_full.comp, one lane per (query, head).
#include <algorithm>
#include <cmath>

#include "ops/limits.h"
#include "ops/op_def.h"
#include "ops/record.h"
#include "ops/rows_per_lane.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_attention_full(const OpDesc& d) {
    if (d.f[0] < 0) return Error::coded(TDM_ERR_UNSUPPORTED, "attention_full: negative scale (f[0] = {})", d.f[0]);
    return {};
}

// q, k or v as [head_dim, heads, tokens].
Status check_heads(OpContext& c, int input, const char* what) {
    TDM_TRY(c.f32(input));
    const Tensor& t = c.in(input);
    if (t.ne[0] % 4)
        return Error::coded(TDM_ERR_SHAPE, "attention_full: {} {} needs a head dim that is a multiple of 4", what,
                            c.describe(input));
    if (t.ne[3] != 1)
        return Error::coded(TDM_ERR_SHAPE, "attention_full: {} {} must be [head_dim, heads, tokens]", what,
                            c.describe(input));
    return {};
}

Status validate_attention_full(OpContext& c) {
    TDM_TRY(check_heads(c, 0, "q"));
    TDM_TRY(check_heads(c, 1, "k"));
    TDM_TRY(check_heads(c, 2, "v"));
    const Tensor &q = c.in(0), &k = c.in(1), &v = c.in(2);
    if (k.ne[0] != q.ne[0])
        return Error::coded(TDM_ERR_SHAPE, "attention_full: k head dim {} differs from q's {}", k.ne[0], q.ne[0]);
    if (v.ne[1] != k.ne[1] || v.ne[2] != k.ne[2])
        return Error::coded(TDM_ERR_SHAPE, "attention_full: v {} must have k's heads and tokens ({})", c.describe(2),
                            c.describe(1));
    if (q.ne[1] % k.ne[1])
        return Error::coded(TDM_ERR_SHAPE, "attention_full: {} query heads are not a multiple of {} kv heads", q.ne[1],
                            k.ne[1]);
    if (q.ne[1] / k.ne[1] > kMaxQueryHeadsPerKvHead)
        return Error::coded(TDM_ERR_LIMIT, "attention_full: {} query heads per kv head, this host handles at most {}",
                            q.ne[1] / k.ne[1], kMaxQueryHeadsPerKvHead);
    if (c.d.n_in == 4) {
        const Tensor& r = c.in(3);
        if (r.type != DType::I32 || r.kind == TensorKind::kv || r.kind == TensorKind::state || !r.contiguous())
            return Error::coded(TDM_ERR_TYPE, "attention_full: ranges {} must be contiguous i32 [2, {}]",
                                c.describe(3), q.ne[2]);
        if (r.ne[0] != 2 || r.ne[1] != q.ne[2] || r.ne[2] != 1 || r.ne[3] != 1)
            return Error::coded(TDM_ERR_SHAPE, "attention_full: ranges {} must be i32 [2, {}] (begin, end per query)",
                                c.describe(3), q.ne[2]);
    }
    return c.output(DType::F32, {v.ne[0] * q.ne[1], q.ne[2]});
}

// Queries per lane: on the texel path (CPU devices) every fetched key and value row
// then serves four queries (a texel fetch is four gathers there, and they dominate).
// Storage loads keep one: on GPUs four queries' registers would spill, and on CPU
// devices that path (unaligned views) is slow anyway and would compile four times longer.
// A query's arithmetic is the same either way.
uint32_t queries_per_lane(bool texel) { return texel ? 4 : 1; }

Status record_attention_full(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const Tensor &q = tensor(c, d.in[0]), &k = tensor(c, d.in[1]), &v = tensor(c, d.in[2]);
    const uint32_t n_head = uint32_t(q.ne[1]), n_kv = uint32_t(k.ne[1]);
    const uint32_t G = n_head / n_kv;
    const uint32_t dk4 = uint32_t(q.ne[0] / 4), dv4 = uint32_t(v.ne[0] / 4);
    // Texel fetches read aligned vec4s; both paths load the same values, so the
    // choice never changes a bit of the result.
    const auto aligned = [&](TensorId t) { return off(c, t) % 4 == 0 && stride(c, t) % 4 == 0; };
    const bool texel = act_texel(c) && aligned(d.in[1]) && aligned(d.in[2]);
    // Lanes own QL queries of one head each; a workgroup holds the G heads of a kv head.
    const uint32_t ql = queries_per_lane(texel);
    const uint32_t slots = lane_slots(G);
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get(texel ? "attention_full_tex" : "attention_full_buf",
                                                    {slots * G, G, dk4, dv4, lane_keys_per_chunk(dk4, dv4), ql}));
    const vk::Binding bk = texel ? vk::Binding::texel(TDM_TRY(c.compiled.texel_view(d.in[1]))) : storage(c, d.in[1]);
    const vk::Binding bv = texel ? vk::Binding::texel(TDM_TRY(c.compiled.texel_view(d.in[2]))) : storage(c, d.in[2]);
    const bool ranged = d.n_in == 4;
    const TensorId r = ranged ? d.in[3] : d.in[0];
    const uint32_t n_q = uint32_t(q.ne[2]);
    struct {
        uint32_t n_q, n_head, n_kv_head, m, q_off, q_rs, k_off, k_rs, v_off, v_rs, o_off, r_off, has_ranges, q0;
        float scale;
    } pc{n_q, n_head, n_kv, uint32_t(k.ne[2]), off(c, d.in[0]), stride(c, d.in[0]), off(c, d.in[1]),
         stride(c, d.in[1]), off(c, d.in[2]), stride(c, d.in[2]), off(c, n.out), ranged ? off(c, r) : 0u,
         ranged ? 1u : 0u, 0u, d.f[0] != 0 ? d.f[0] : 1.0f / std::sqrt(float(q.ne[0]))};
    dispatch_query_blocks(c, *p, {storage(c, d.in[0]), bk, bv, storage(c, r), storage(c, n.out)}, pc, pc.q0, n_q,
                          slots * ql, n_kv, label);
    return {};
}

}  // namespace

extern const OpDef kOpDef_ATTENTION_FULL = {TDM_OP_ATTENTION_FULL, "attention_full", 3, 4, 0,
                                       check_attention_full, validate_attention_full, record_attention_full};

}  // namespace tdm
