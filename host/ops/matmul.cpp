// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul.cpp: TDM_OP_MATMUL, y [M, n] = x [K, n] W^T (+ add), W a
// weight of any type. Three layouts (matmul_split.h says which device and type gets which;
// env overrides are for experiments and for tests that run all of them on one device):
//  "mv" (shaders/matmul_mv.comp): the GPUs' mat-vec kernel: lanes stride over K, one or
//      two rows per subgroup, a few subgroups per workgroup, loads issued ahead, the
//      block scale applied once per block.
//  "ks" (shaders/matmul.comp): lanes stride over K, R rows per subgroup, several
//      subgroups per workgroup: the GPUs' layout for the types "mv" does not cover.
//  "rl" (shaders/matmul_rl.comp): every lane owns R whole rows, x at a uniform
//      address, no cross-lane reduction: 1.2-2x faster on lavapipe, where a
//      lane is a SIMD slot of one CPU thread and gathers cost the same anyway
//      (docs/perf-notes/lavapipe-matmul.md).
// Each reduces each output element in one fixed order whatever n is (tandem.h
// invariant 1). One dispatch per row chunk of the weight.
#include <algorithm>

#include "op_codes.h"
#include "ops/matmul_split.h"
#include "ops/weight_record.h"

namespace tdm {
namespace {

using namespace kernel;

// "matmul_mv" is not required: a type without it runs "ks" (matmul_split.h).
const char* const kMatmulShaders[] = {"matmul", "matmul_rl", nullptr};

Status validate_matmul(OpContext& c) {
    TDM_TRY(c.weight(0));
    TDM_TRY(c.f32(1));
    const Tensor& w = c.in(0);
    const Tensor& x = c.in(1);
    if (x.cols() != w.cols())
        return Error::coded(TDM_ERR_SHAPE, "matmul: {} has {} columns but weight {} expects {}", c.describe(1),
                            x.cols(), c.describe(0), w.cols());
    TDM_TRY(texel_weight(c, 0));
    TDM_TRY(aligned_activation(c, 1));
    if (c.d.n_in == 3) {
        TDM_TRY(c.f32(2));
        if (c.in(2).cols() != w.rows() || c.in(2).rows() != x.rows())
            return Error::coded(TDM_ERR_SHAPE, "matmul: add input {} does not match the output [{}, {}]",
                                c.describe(2), w.rows(), x.rows());
    }
    return c.output(DType::F32, {w.rows(), x.ne[1], x.ne[2], x.ne[3]});
}

Status record_matmul(RecordContext& c, const Node& n, const std::string& detail_label) {
    const DeviceWeight& w = *tensor(c, n.desc.in[0]).weight;
    const std::string label = profile_detail() ? detail_label : fmt::format("matmul_{}", dtype_name(w.type()));
    const uint32_t epilogue = n.desc.n_in == 3 ? TDM_MATMUL_EPILOGUE_ADD : TDM_MATMUL_EPILOGUE_NONE;
    return record_matmul_op(c, n, epilogue, label);
}

}  // namespace

Status kernel::record_matmul_op(RecordContext& c, const Node& n, uint32_t epilogue, const std::string& label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& w = *tensor(c, d.in[0]).weight;
    const Tensor& x = tensor(c, d.in[1]);
    const bool texel = act_texel(c) && w.has_texel_views();
    const uint32_t N = uint32_t(x.rows());
    // Tokens per pass: the smallest variant covering the batch (see matmul.comp).
    const uint32_t nt = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : 8;
    const uint32_t sg = std::max<uint32_t>(1, c.device.caps().subgroup_size);
    const MatmulSplit lay = matmul_split(c.device.caps(), c.pipelines.work_splits(), w);
    const vk::Pipeline* p = TDM_TRY(matmul_pipeline(c.pipelines, c.device.caps(), lay, w.type(), texel, false, nt));
    const uint32_t rows_per_group = lay.rows_per_workgroup(sg);
    const vk::Binding bx = texel ? vk::Binding::texel(TDM_TRY(c.compiled.texel_view(d.in[1]))) : storage(c, d.in[1]);
    return record_matmul_dispatches(c, n, *p, bx, texel, rows_per_group, epilogue, label);
}

Status kernel::record_matmul_dispatches(RecordContext& c, const Node& n, const vk::Pipeline& p, vk::Binding x,
                                        bool texel, uint32_t rows_per_group, uint32_t epilogue,
                                        const std::string& label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& w = *tensor(c, d.in[0]).weight;
    const bool operand = epilogue != TDM_MATMUL_EPILOGUE_NONE;  // input 2: the epilogue's e
    struct {
        uint32_t K, M, N, x_off, x_stride, y_off, y_stride, w_off, s_off, add_off, add_stride, epilogue;
    } pc{};
    pc.epilogue = epilogue;
    for (const WeightChunk& ch : w.chunks()) {
        pc.K = uint32_t(w.cols());
        pc.M = uint32_t(ch.n_rows);
        pc.N = uint32_t(tensor(c, d.in[1]).rows());
        pc.x_off = off(c, d.in[1]);
        pc.x_stride = stride(c, d.in[1]);
        pc.y_off = off(c, n.out) + uint32_t(ch.row_begin);
        pc.y_stride = stride(c, n.out);
        if (operand) {
            pc.add_off = off(c, d.in[2]) + uint32_t(ch.row_begin);
            pc.add_stride = stride(c, d.in[2]);
        }
        vk::Binding bw, bs;
        weight_bindings(ch, texel, &bw, &bs);
        const uint32_t groups = div_up(ch.n_rows, rows_per_group);
        dispatch(c, p, {bw, bs, x, storage(c, n.out), operand ? storage(c, d.in[2]) : storage(c, d.in[1]), x}, pc,
                 std::min(groups, kMaxGroups), div_up(groups, kMaxGroups), label);
    }
    return {};
}

extern const OpDef kOpDef_MATMUL = {TDM_OP_MATMUL, "matmul", 2, 3, 0,
                                nullptr, validate_matmul, record_matmul, kMatmulShaders};

}  // namespace tdm
