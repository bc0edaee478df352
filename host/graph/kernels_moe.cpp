// host/graph/kernels_moe.cpp: recording of the mixture-of-experts ops:
// matmul_id (shaders/matmul_id.comp, one dispatch per weight row chunk) and
// moe_sum (shaders/moe_sum.comp, one dispatch).
// Not here: routing (softmax / top-k are ordinary ops), shape validation (graph.cpp).
#include <algorithm>

#include "graph/kernel_util.h"
#include "graph/weight.h"

namespace tdm {
namespace {

using kernel::div_up;
using kernel::kMaxGroups;
using kernel::storage;

constexpr uint32_t kLocal = 64;
// matmul_id: rows per subgroup and subgroups per workgroup (matmul's measured
// defaults: lavapipe pays a fixed cost per workgroup, and R rows share each
// fetched piece of x).
constexpr uint32_t kRows = 8;
constexpr uint32_t kSubgroups = 8;

}  // namespace

Status record_matmul_id(RecordContext& c, const Node& n) {
    const OpDesc& d = n.desc;
    const Tensor& wt = c.graph.tensor(d.in[0]);
    const DeviceWeight& w = *wt.weight;
    const Tensor& x = c.graph.tensor(d.in[1]);
    const Tensor& ids = c.graph.tensor(d.in[2]);
    const Tensor& y = c.graph.tensor(n.out);
    const uint32_t M = uint32_t(wt.ne[1]), E = uint32_t(wt.ne[2]);
    const uint32_t n_used = uint32_t(ids.ne[0]), pairs = uint32_t(ids.rows()) * n_used;
    const bool texel = kernel::act_texel(c) && w.has_texel_views();
    const uint32_t sg = std::max<uint32_t>(1, c.device.caps().subgroup_size);
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get(
        fmt::format("matmul_id_{}_{}", dtype_name(w.type()), texel ? "tex" : "buf"), {sg * kSubgroups, kRows}));
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
        if (texel) {
            bw = vk::Binding::texel(ch.main_view);
            bs = vk::Binding::texel(ch.scale_view ? ch.scale_view : ch.main_view);
        } else {
            bw = vk::Binding::storage(ch.main);
            bs = vk::Binding::storage(ch.scale ? ch.scale : ch.main);
        }
        for (uint32_t pair0 = 0; pair0 < pairs; pair0 += kMaxGroups) {
            pc.pair0 = pair0;
            kernel::dispatch(c, *p, {bw, bs, bx, storage(c, n.out), storage(c, d.in[2])}, pc,
                             div_up(M, kRows * kSubgroups), std::min(kMaxGroups, pairs - pair0), label);
        }
    }
    return {};
}

Status record_moe_sum(RecordContext& c, const Node& n) {
    const OpDesc& d = n.desc;
    const Tensor& y = c.graph.tensor(d.in[0]);
    const uint32_t M = uint32_t(y.ne[0]), n_used = uint32_t(y.ne[1]), n_tok = uint32_t(y.ne[2] * y.ne[3]);
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get(kernel::act_texel(c) ? "moe_sum_tex" : "moe_sum_buf", {kLocal}));
    struct {
        uint32_t M, n_used, n_tokens, t0, y_off, w_off, o_off;
    } pc{M, n_used, n_tok, 0, uint32_t(y.off), uint32_t(c.graph.tensor(d.in[1]).off),
         uint32_t(c.graph.tensor(n.out).off)};
    const vk::Binding by = TDM_TRY(kernel::act_input(c, d.in[0]));
    const vk::Binding bw = TDM_TRY(kernel::act_input(c, d.in[1]));
    for (uint32_t t0 = 0; t0 < n_tok; t0 += kMaxGroups) {
        pc.t0 = t0;
        kernel::dispatch(c, *p, {by, bw, storage(c, n.out)}, pc, div_up(M, kLocal), std::min(kMaxGroups, n_tok - t0),
                         "moe_sum");
    }
    return {};
}

}  // namespace tdm
