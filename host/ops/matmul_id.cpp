// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul_id.cpp: TDM_OP_MATMUL_ID, the mixture-of-experts matmul: each
// (token, slot) pair multiplies by the expert its id names. shaders/matmul_id.comp,
// the same per-row reduction as matmul (batch-invariant); one dispatch per row
// chunk of the weight (a chunk holds whole experts). Routing (softmax, top_k)
// is ordinary ops. i[0] regroups the weight's rows into experts of i[0] rows:
// 1 gathers single rows (Gemma 4's centroid-masked head: the candidates' rows).
#include <algorithm>

#include "ops/weight_record.h"

namespace tdm {
namespace {

using namespace kernel;

const char* const kMatmulIdShaders[] = {"matmul_id", nullptr};

// Rows per subgroup and subgroups per workgroup (matmul's measured defaults:
// lavapipe pays a fixed cost per workgroup, and R rows share each fetched piece of x).
constexpr uint32_t kRows = 8;
constexpr uint32_t kSubgroups = 8;

Status check_matmul_id(const OpDesc& d) {
    if (d.i[0] < 0) return Error::coded(TDM_ERR_UNSUPPORTED, "matmul_id: rows per id (i[0]) must be >= 0, got {}", d.i[0]);
    return {};
}

// Rows per expert (M) and experts (E): [K, M, E] as stored, or [K, i[0], rows / i[0]] when
// i[0] regroups the rows (i[0] = 1: every row of a matrix is an "expert": a gather-matmul).
void experts_of(const OpDesc& d, const Tensor& w, int64_t* M, int64_t* E) {
    const int64_t rows = w.ne[1] * w.ne[2];
    *M = d.i[0] > 0 ? d.i[0] : w.ne[1];
    *E = rows / *M;
}

Status validate_matmul_id(OpContext& c) {
    TDM_TRY(c.weight(0));
    TDM_TRY(c.f32(1));
    const Tensor& w = c.in(0);
    const Tensor& x = c.in(1);
    const Tensor& ids = c.in(2);
    if (ids.type != DType::I32 || ids.kind == TensorKind::kv || ids.kind == TensorKind::state)
        return Error::coded(TDM_ERR_TYPE, "matmul_id: ids must be i32, got {}", c.describe(2));
    int64_t M = 0, E = 0;
    experts_of(c.d, w, &M, &E);
    const int64_t K = w.ne[0], n_used = ids.ne[0], n = ids.rows();
    if (w.ne[2] < 1 || w.ne[3] != 1)
        return Error::coded(TDM_ERR_SHAPE, "matmul_id: weight {} must be [K, M, E]", c.describe(0));
    if (c.d.i[0] > 0 && (w.ne[1] * w.ne[2]) % c.d.i[0] != 0)
        return Error::coded(TDM_ERR_SHAPE, "matmul_id: {} rows per id (i[0]) do not divide weight {}'s {} rows",
                            c.d.i[0], c.describe(0), w.ne[1] * w.ne[2]);
    if (x.cols() != K || (x.rows() != n && x.rows() != n * n_used))
        return Error::coded(TDM_ERR_SHAPE, "matmul_id: x {} does not match weight {} and ids {}", c.describe(1),
                            c.describe(0), c.describe(2));
    TDM_TRY(aligned_activation(c, 1));
    TDM_TRY(texel_weight(c, 0));
    return c.output(DType::F32, {M, n_used, n});
}

Status record_matmul_id(RecordContext& c, const Node& n, const std::string&) {
    const OpDesc& d = n.desc;
    const Tensor& wt = tensor(c, d.in[0]);
    const DeviceWeight& w = *wt.weight;
    const Tensor& x = tensor(c, d.in[1]);
    const Tensor& ids = tensor(c, d.in[2]);
    const Tensor& y = tensor(c, n.out);
    int64_t M64 = 0, E64 = 0;
    experts_of(d, wt, &M64, &E64);
    const uint32_t M = uint32_t(M64), E = uint32_t(E64);
    const uint32_t n_used = uint32_t(ids.ne[0]), pairs = uint32_t(ids.rows()) * n_used;
    const bool texel = act_texel(c) && w.has_texel_views();
    const uint32_t sg = std::max<uint32_t>(1, c.device.caps().subgroup_size);
    // Rows are counted in subgroups, so the size is fixed where the device can fix it. Where it
    // cannot, the driver's choice is taken, as before sizes could be fixed: mixture-of-experts
    // models have no other kernel, and refusing them would be worse than the risk.
    const vk::SubgroupShape shape =
        c.device.caps().subgroup_size_fixable ? vk::SubgroupShape::device_size : vk::SubgroupShape::any;
    const vk::Pipeline* p =
        TDM_TRY(c.pipelines.get(weight_variant("matmul_id", w.type(), texel), {sg * kSubgroups, kRows}, shape));
    const vk::Binding bx = texel ? vk::Binding::texel(TDM_TRY(c.compiled.texel_view(d.in[1]))) : storage(c, d.in[1]);
    const std::string label = fmt::format("matmul_id_{}", dtype_name(w.type()));
    struct {
        uint32_t K, M, E, n_used, x_off, x_stride, x_per_slot, y_off, ids_off, ids_stride, e_begin, e_end,
            zero_invalid, pair0, w_off, s_off;
    } pc{uint32_t(w.cols()), M, E, n_used, uint32_t(x.off), uint32_t(x.row_stride),
         x.rows() == ids.rows() * n_used && n_used > 1 ? 1u : 0u, uint32_t(y.off), uint32_t(ids.off),
         uint32_t(ids.row_stride), 0, 0, 0, 0, 0, 0};
    const std::vector<WeightChunk>& chunks = w.chunks();
    for (size_t i = 0; i < chunks.size(); ++i) {
        const WeightChunk& ch = chunks[i];
        if (ch.row_begin % M != 0 || ch.n_rows % M != 0)
            return Error::format("matmul_id: weight {} has a row chunk that splits an expert (rows {}..{}, {} per "
                                 "expert): upload it with WeightUploadOptions::row_group",
                                 w.name(), ch.row_begin, ch.row_begin + ch.n_rows, M);
        pc.e_begin = uint32_t(ch.row_begin / M);
        pc.e_end = uint32_t((ch.row_begin + ch.n_rows) / M);
        pc.zero_invalid = i == 0 ? 1 : 0;
        vk::Binding bw, bs;
        weight_bindings(ch, texel, &bw, &bs);
        for (uint32_t pair0 = 0; pair0 < pairs; pair0 += kMaxGroups) {
            pc.pair0 = pair0;
            dispatch(c, *p, {bw, bs, bx, storage(c, n.out), storage(c, d.in[2])}, pc, div_up(M, kRows * kSubgroups),
                     std::min(kMaxGroups, pairs - pair0), label);
        }
    }
    return {};
}

}  // namespace

extern const OpDef kOpDef_MATMUL_ID = {TDM_OP_MATMUL_ID, "matmul_id", 3, 3, 0,
                                  check_matmul_id, validate_matmul_id, record_matmul_id, kMatmulIdShaders};

}  // namespace tdm
