// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul_glu.cpp: the gate/up matmul with the GLU epilogue of matmul_glu.h: one
// dispatch of matmul_mv_glu_<type>, whose subgroups each accumulate their rows of the gate
// and of the up weight with matmul_mv.comp's per-row code and write act(gate) * up.
// Not here: the grouped matmul without an epilogue (matmul_group.cpp), the pattern
// matching (graph/fusion_glu.cpp).
#include <algorithm>

#include "ops/matmul_glu.h"
#include "ops/matmul_split.h"
#include "ops/weight_record.h"

namespace tdm {

std::optional<MatmulGluSpans> matmul_glu_spans(const vk::DeviceCaps& caps, const DeviceWeight& gate,
                                               const DeviceWeight& up) {
    if (gate.type() != up.type() || gate.rows() != up.rows() || gate.cols() != up.cols()) return std::nullopt;
    if (gate.chunks().size() != 1 || up.chunks().size() != 1 || !matmul_tunable(gate)) return std::nullopt;
    if (matmul_layout(caps, gate.type()) != MatmulLayout::mv) return std::nullopt;
    MatmulGluSpans s;
    s.texel = caps.prefer_texel_weights && gate.has_texel_views() && up.has_texel_views();
    const WeightChunk &g = gate.chunks()[0], &u = up.chunks()[0];
    const uint64_t main_limit = s.texel ? caps.max_texel_buffer_elements * 16 : caps.max_storage_buffer_range;
    const uint64_t scale_limit = s.texel ? caps.max_texel_buffer_elements * 2 : caps.max_storage_buffer_range;
    s.main = kernel::buffer_span({g.main, u.main}, main_limit);
    s.scale = kernel::buffer_span({g.scale ? g.scale : g.main, u.scale ? u.scale : u.main}, scale_limit);
    if (!s.main || !s.scale) return std::nullopt;
    return s;
}

namespace {

using namespace kernel;

Status validate_matmul_glu(OpContext& c) {
    return Error::coded(TDM_ERR_UNSUPPORTED, "{}: formed by the graph's fusion pass only", c.op());
}

Status record_matmul_glu(RecordContext& c, const Node& n, const std::string& detail_label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& gate = *tensor(c, d.in[1]).weight;
    const DeviceWeight& up = *tensor(c, d.in[2]).weight;
    const vk::DeviceCaps& caps = c.device.caps();
    const std::optional<MatmulGluSpans> spans = matmul_glu_spans(caps, gate, up);
    if (!spans)  // the fusion pass asked the same question of the same device
        return Error::coded(TDM_ERR_UNSUPPORTED, "{}: {} and {} cannot be read by one dispatch", d.name, gate.name(),
                            up.name());
    const std::string label =
        profile_detail() ? detail_label : fmt::format("matmul_glu_{}", dtype_name(gate.type()));
    // Half the tuned rows per subgroup of each weight: a subgroup accumulates as many rows
    // as the tuned split's, gate and up together. Which subgroup runs a row never changes
    // its sum (ops/matmul_split.h).
    MatmulSplit lay = matmul_split(caps, c.pipelines.work_splits(), gate);
    lay.rows = std::max<uint32_t>(1, lay.rows / 2);
    const uint32_t N = uint32_t(tensor(c, d.in[0]).rows());
    const uint32_t nt = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : 8;  // tokens per pass, as matmul.cpp
    const uint32_t sg = std::max<uint32_t>(1, caps.subgroup_size);
    std::vector<uint32_t> spec = lay.spec(sg, nt);
    spec.push_back(uint32_t(d.i[0]));  // GLU_OP
    // the kernel divides its rows by the subgroup size, as "mv" does (vk::SubgroupShape)
    const vk::Pipeline* p = TDM_TRY(
        c.pipelines.get(weight_variant("matmul_mv_glu", gate.type(), spans->texel), spec, lay.subgroup_shape()));

    struct {
        uint32_t K, N, x_off, x_stride;
        uint32_t seg_group[3], seg_M[3], seg_w[3], seg_s[3], seg_y[3], seg_y_stride[3];
    } pc{};
    pc.K = uint32_t(gate.cols());
    pc.N = N;
    pc.x_off = off(c, d.in[0]);
    pc.x_stride = stride(c, d.in[0]);
    pc.seg_group[0] = 0;
    pc.seg_group[1] = pc.seg_group[2] = ~0u;
    const WeightChunk* ch[2] = {&gate.chunks()[0], &up.chunks()[0]};
    for (int j = 0; j < 2; ++j) {
        const vk::BufferSlice& scale = ch[j]->scale ? ch[j]->scale : ch[j]->main;
        pc.seg_M[j] = uint32_t(gate.rows());
        pc.seg_w[j] = uint32_t((ch[j]->main.offset - spans->main.offset) / 16);
        pc.seg_s[j] = uint32_t((scale.offset - spans->scale.offset) / 2);
    }
    pc.seg_y[0] = off(c, n.out);
    pc.seg_y_stride[0] = stride(c, n.out);
    const uint32_t groups = div_up(uint64_t(gate.rows()), lay.rows_per_workgroup(sg));

    vk::Binding bw, bs, bx;
    if (spans->texel) {
        bw = vk::Binding::texel(TDM_TRY(c.compiled.span_view(spans->main, VK_FORMAT_R32G32B32A32_UINT)));
        bs = vk::Binding::texel(TDM_TRY(c.compiled.span_view(spans->scale, VK_FORMAT_R16_UINT)));
        bx = vk::Binding::texel(TDM_TRY(c.compiled.texel_view(d.in[0])));
    } else {
        bw = vk::Binding::storage(spans->main);
        bs = vk::Binding::storage(spans->scale);
        bx = storage(c, d.in[0]);
    }
    const vk::Binding by = storage(c, n.out);
    dispatch(c, *p, {bw, bs, bx, by, by, bx}, pc, std::min(groups, kMaxGroups), div_up(groups, kMaxGroups), label);
    return {};
}

}  // namespace

extern const OpDef kOpMatmulGlu = {kOpInternalMatmulGlu, "matmul_glu", 3, 3, 0, nullptr, validate_matmul_glu,
                                   record_matmul_glu};

}  // namespace tdm
