// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul_group.cpp: the host-internal grouped matmul, y_j [M_j, n] = x [K, n]
// W_j^T for two or three weights of one type and width that read the same x (a layer's
// q, k and v projections, or gate and up), which host/graph/fusion.cpp forms from
// separate TDM_OP_MATMULs. One dispatch of the GROUP variant of matmul_mv.comp, matmul.comp
// or matmul_rl.comp (include/matmul_group.glsl) when the weights' planes lie in one buffer
// each and their matmuls split rows alike; otherwise each weight's own dispatches, as
// TDM_OP_MATMUL records them. Either way every row is the ungrouped matmul's sum.
// OpDesc: in[0] = x, in[1..n_in-1] = the weights; outputs out, out2, out3 in that order.
// Not here: the plain matmul (matmul.cpp), gate and up with the GLU epilogue
// (matmul_glu.cpp), the pattern matching (graph/fusion.cpp).
#include <algorithm>
#include <array>

#include "op_codes.h"
#include "ops/matmul_glu.h"
#include "ops/matmul_split.h"
#include "ops/weight_record.h"

namespace tdm {

vk::BufferSlice kernel::buffer_span(const std::vector<vk::BufferSlice>& parts, uint64_t limit) {
    vk::BufferSlice s = parts[0];
    uint64_t end = s.offset + s.size;
    for (const vk::BufferSlice& p : parts) {
        if (p.buffer != s.buffer) return {};
        end = std::max(end, p.offset + p.size);
        s.offset = std::min(s.offset, p.offset);
    }
    s.size = end - s.offset;
    if (s.size > limit) return {};
    return s;
}

namespace {

using namespace kernel;

constexpr int kMaxGroupWeights = 3;

Status validate_matmul_group(OpContext& c) {
    return Error::coded(TDM_ERR_UNSUPPORTED, "{}: formed by the graph's fusion pass only", c.op());
}

Status record_matmul_group(RecordContext& c, const Node& n, const std::string& detail_label) {
    const OpDesc& d = n.desc;
    const int n_w = d.n_in - 1;
    const std::array<TensorId, 3> outs = n.results();
    std::array<const DeviceWeight*, kMaxGroupWeights> w{};
    for (int j = 0; j < n_w; ++j) w[size_t(j)] = tensor(c, d.in[1 + j]).weight;
    const Tensor& x = tensor(c, d.in[0]);
    const DeviceWeight& w0 = *w[0];
    const std::string label = profile_detail() ? detail_label : fmt::format("matmul_group_{}", dtype_name(w0.type()));
    bool texel = act_texel(c);
    const MatmulSplit lay = matmul_split(c.device.caps(), c.pipelines.work_splits(), w0);
    bool grouped = true;
    for (int j = 0; j < n_w; ++j) {
        texel = texel && w[size_t(j)]->has_texel_views();
        grouped = grouped && w[size_t(j)]->chunks().size() == 1 &&
                  matmul_split(c.device.caps(), c.pipelines.work_splits(), *w[size_t(j)]) == lay;
    }
    const uint32_t N = uint32_t(x.rows());
    const uint32_t nt = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : 8;  // tokens per pass, as matmul.cpp
    const uint32_t sg = std::max<uint32_t>(1, c.device.caps().subgroup_size);
    const uint32_t rows_per_group = lay.rows_per_workgroup(sg);
    const vk::Binding bx = texel ? vk::Binding::texel(TDM_TRY(c.compiled.texel_view(d.in[0]))) : storage(c, d.in[0]);

    // the spans the one dispatch binds: main planes, scale planes, results
    const vk::DeviceCaps& caps = c.device.caps();
    std::vector<vk::BufferSlice> mains, scales, ys;
    for (int j = 0; j < n_w; ++j) {
        const WeightChunk& ch = w[size_t(j)]->chunks()[0];
        mains.push_back(ch.main);
        scales.push_back(ch.scale ? ch.scale : ch.main);
        ys.push_back(c.compiled.storage(outs[size_t(j)]));
    }
    const uint64_t main_limit = texel ? caps.max_texel_buffer_elements * 16 : caps.max_storage_buffer_range;
    const uint64_t scale_limit = texel ? caps.max_texel_buffer_elements * 2 : caps.max_storage_buffer_range;
    vk::BufferSlice main_span, scale_span, y_span;
    if (grouped) {
        main_span = buffer_span(mains, main_limit);
        scale_span = buffer_span(scales, scale_limit);
        y_span = buffer_span(ys, caps.max_storage_buffer_range);
        grouped = main_span && scale_span && y_span;
    }
    if (!grouped) {  // each weight as TDM_OP_MATMUL records it
        const vk::Pipeline* p = TDM_TRY(matmul_pipeline(c.pipelines, caps, lay, w0.type(), texel, false, nt));
        for (int j = 0; j < n_w; ++j) {
            Node one;
            one.desc.op = TDM_OP_MATMUL;
            one.desc.in[0] = d.in[1 + j];
            one.desc.in[1] = d.in[0];
            one.desc.n_in = 2;
            one.out = outs[size_t(j)];
            TDM_TRY(record_matmul_dispatches(c, one, *p, bx, texel, rows_per_group, TDM_MATMUL_EPILOGUE_NONE, label));
        }
        return {};
    }

    const vk::Pipeline* p = TDM_TRY(matmul_pipeline(c.pipelines, caps, lay, w0.type(), texel, true, nt));
    struct {
        uint32_t K, N, x_off, x_stride;
        uint32_t seg_group[3], seg_M[3], seg_w[3], seg_s[3], seg_y[3], seg_y_stride[3];
    } pc{};
    pc.K = uint32_t(w0.cols());
    pc.N = N;
    pc.x_off = off(c, d.in[0]);
    pc.x_stride = stride(c, d.in[0]);
    uint32_t groups = 0;
    for (int j = 0; j < kMaxGroupWeights; ++j) {
        if (j >= n_w) {
            pc.seg_group[j] = ~0u;
            continue;
        }
        const size_t jj = size_t(j);
        pc.seg_group[j] = groups;
        pc.seg_M[j] = uint32_t(w[jj]->rows());
        pc.seg_w[j] = uint32_t((mains[jj].offset - main_span.offset) / 16);
        pc.seg_s[j] = uint32_t((scales[jj].offset - scale_span.offset) / 2);
        pc.seg_y[j] = uint32_t((ys[jj].offset - y_span.offset) / 4) + off(c, outs[jj]);
        pc.seg_y_stride[j] = stride(c, outs[jj]);
        groups += div_up(uint64_t(w[jj]->rows()), rows_per_group);
    }
    vk::Binding bw, bs;
    if (texel) {
        bw = vk::Binding::texel(TDM_TRY(c.compiled.span_view(main_span, VK_FORMAT_R32G32B32A32_UINT)));
        bs = vk::Binding::texel(TDM_TRY(c.compiled.span_view(scale_span, VK_FORMAT_R16_UINT)));
    } else {
        bw = vk::Binding::storage(main_span);
        bs = vk::Binding::storage(scale_span);
    }
    const vk::Binding by = vk::Binding::storage(y_span);
    dispatch(c, *p, {bw, bs, bx, by, by, bx}, pc, std::min(groups, kMaxGroups), div_up(groups, kMaxGroups), label);
    return {};
}

}  // namespace

extern const OpDef kOpMatmulGroup = {kOpInternalMatmulGroup, "matmul_group", 3, 1 + kMaxGroupWeights, 0,
                                     nullptr, validate_matmul_group, record_matmul_group};

}  // namespace tdm
