// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul_q8.cpp: the int8 activation path of TDM_OP_MATMUL for Q8_0
// weights (Graph::set_int8_matmul), two host-internal ops that plugins never see:
//  quantize_q8 (shaders/quantize_q8.comp): f32 rows [K, n] -> I32 rows of K/4
//      words of packed int8 quants and K/32 f32 block scales (q8_row_words), by
//      the Q8_0 rule (llama.cpp stores the scale in f16; here it stays f32).
//  matmul_q8 (shaders/matmul_q8_rl.comp): y [M, n] = x W^T (+ add) from those
//      rows and a Q8_0 weight, each block's products summed in integers.
// Both are batch-invariant: a row's result never depends on the other rows.
#include <algorithm>

#include "op_codes.h"
#include "ops/weight_record.h"

namespace tdm {

uint32_t q8_row_words(int64_t k) {
    const uint64_t quants = uint64_t(k) / 4, scales = uint64_t(k) / 32;
    return uint32_t((quants + scales + 3) / 4 * 4);  // whole uvec4s: rows stay 16-byte aligned
}

namespace {

using namespace kernel;

Status validate_quantize(OpContext& c) {
    TDM_TRY(c.f32(0));
    TDM_TRY(aligned_activation(c, 0));
    const Tensor& x = c.in(0);
    if (x.cols() % 32)
        return Error::coded(TDM_ERR_SHAPE, "quantize_q8: rows of {} are not whole blocks of 32", c.describe(0));
    return c.output(DType::I32, {q8_row_words(x.cols()), x.ne[1], x.ne[2], x.ne[3]});
}

Status record_quantize(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const Tensor& x = tensor(c, d.in[0]);
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("quantize_q8", {}));
    struct {
        uint32_t K, N, x_off, x_stride, q_off, q_stride;
    } pc{uint32_t(x.cols()), uint32_t(x.rows()), off(c, d.in[0]), stride(c, d.in[0]), off(c, n.out), stride(c, n.out)};
    const uint32_t groups = div_up(uint64_t(pc.N) * (pc.K / 32), 64);
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, n.out)}, pc, std::min(groups, kMaxGroups),
             div_up(groups, kMaxGroups), label);
    return {};
}

Status validate_matmul_q8(OpContext& c) {
    TDM_TRY(c.weight(0));
    const Tensor& w = c.in(0);
    const Tensor& x = c.in(1);
    if (w.type != DType::Q8_0)
        return Error::coded(TDM_ERR_TYPE, "matmul_q8: weight {} is not Q8_0", c.describe(0));
    if (x.type != DType::I32 || x.kind == TensorKind::weight || x.cols() != q8_row_words(w.cols()) ||
        x.off % 4 || x.row_stride % 4)
        return Error::coded(TDM_ERR_SHAPE, "matmul_q8: {} is not quantize_q8 rows for weight {}", c.describe(1),
                            c.describe(0));
    TDM_TRY(texel_weight(c, 0));
    if (c.d.n_in == 3) {
        TDM_TRY(c.f32(2));
        if (c.in(2).cols() != w.rows() || c.in(2).rows() != x.rows())
            return Error::coded(TDM_ERR_SHAPE, "matmul_q8: add input {} does not match the output [{}, {}]",
                                c.describe(2), w.rows(), x.rows());
    }
    return c.output(DType::F32, {w.rows(), x.ne[1], x.ne[2], x.ne[3]});
}

Status record_matmul_q8(RecordContext& c, const Node& n, const std::string& detail_label) {
    const OpDesc& d = n.desc;
    const DeviceWeight& w = *tensor(c, d.in[0]).weight;
    const Tensor& x = tensor(c, d.in[1]);
    const std::string label = profile_detail() ? detail_label : "matmul_q8";
    const bool texel = act_texel(c) && w.has_texel_views();
    const uint32_t N = uint32_t(x.rows());
    const uint32_t nt = N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : 8;  // tokens per pass, as matmul
    const uint32_t ls = std::max<uint32_t>(1, c.device.caps().subgroup_size);
    const uint32_t rows_per_lane = 4, rows_per_group = ls * rows_per_lane;
    const vk::Pipeline* p = TDM_TRY(
        c.pipelines.get(texel ? "matmul_q8_rl_tex" : "matmul_q8_rl_buf", {ls, nt, rows_per_lane}));
    const uint32_t epilogue = d.n_in == 3 ? TDM_MATMUL_EPILOGUE_ADD : TDM_MATMUL_EPILOGUE_NONE;
    return record_matmul_dispatches(c, n, *p, storage(c, d.in[1]), texel, rows_per_group, epilogue, label);
}

}  // namespace

extern const OpDef kOpQuantizeQ8 = {kOpInternalQuantizeQ8, "quantize_q8", 1, 1, 0, nullptr, validate_quantize,
                                    record_quantize};
extern const OpDef kOpMatmulQ8 = {kOpInternalMatmulQ8, "matmul_q8", 2, 3, 0, nullptr, validate_matmul_q8,
                                  record_matmul_q8};

}  // namespace tdm
