// SPDX-License-Identifier: Apache-2.0
// host/ops/norm.cpp: the per-row norms TDM_OP_RMS_NORM (i[0] = tdm_norm_weight),
// TDM_OP_L2_NORM, TDM_OP_GATED_RMS_NORM (w * rms(x) * silu(z)) and TDM_OP_LAYER_NORM
// ((x - mean) / sd * w + b). One kernel:
// shaders/norm.comp, one workgroup per row; MODE is a TDM_NORM_* code of
// shaders/include/op_codes.h, WMODE the tdm_norm_weight.
#include <algorithm>

#include "op_codes.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_eps(const OpDesc& d) {
    if (d.f[0] < 0) return Error::coded(TDM_ERR_UNSUPPORTED, "{}: negative eps (f[0] = {})", op_name(d.op), d.f[0]);
    return {};
}

Status check_rms_norm(const OpDesc& d) {
    if (d.i[0] < TDM_NORM_NO_WEIGHT || d.i[0] > TDM_NORM_WEIGHT_PLUS_ONE)
        return Error::coded(TDM_ERR_UNSUPPORTED, "rms_norm: unknown weight mode {} (i[0]; this host knows 0 none, 1 w, "
                                                 "2 1 + w)",
                            d.i[0]);
    return check_eps(d);
}

// rms_norm and gated_rms_norm: x, the weight (if the mode has one), the gate z.
Status validate_rms(OpContext& c) {
    const OpDesc& d = c.d;
    const bool gated = d.op == TDM_OP_GATED_RMS_NORM;
    TDM_TRY(c.f32(0));
    const int wmode = gated ? TDM_NORM_WEIGHT : d.i[0];
    if ((wmode != 0) != (d.n_in >= 2))
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: weight mode {} {} a weight input", c.op(), wmode,
                            wmode ? "needs" : "takes no");
    const Tensor& x = c.in(0);
    if (d.n_in >= 2) {
        const Tensor& w = c.in(1);
        if (w.type != DType::F32 || w.kind == TensorKind::kv || w.kind == TensorKind::state)
            return Error::coded(TDM_ERR_TYPE, "{}: weight {} must be f32 with {} elements", c.op(), c.describe(1),
                                x.cols());
        if (w.elements() != x.cols())
            return Error::coded(TDM_ERR_SHAPE, "{}: weight {} must be f32 with {} elements", c.op(), c.describe(1),
                                x.cols());
    }
    if (gated) {
        TDM_TRY(c.f32(2));
        if (c.in(2).cols() != x.cols() || c.in(2).rows() != x.rows())
            return Error::coded(TDM_ERR_SHAPE, "gated_rms_norm: gate {} does not match {}", c.describe(2),
                                c.describe(0));
    }
    return c.output(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]});
}

// An F32 vector of x's row width (a norm's weight or bias), as a weight or an activation.
Status check_row_vector(OpContext& c, int input, const char* what) {
    const Tensor& w = c.in(input);
    const int64_t cols = c.in(0).cols();
    if (w.type != DType::F32 || w.kind == TensorKind::kv || w.kind == TensorKind::state)
        return Error::coded(TDM_ERR_TYPE, "{}: {} {} must be f32 with {} elements", c.op(), what, c.describe(input), cols);
    if (w.elements() != cols || (w.kind != TensorKind::weight && !w.contiguous()))
        return Error::coded(TDM_ERR_SHAPE, "{}: {} {} must be f32 with {} contiguous elements", c.op(), what,
                            c.describe(input), cols);
    return {};
}

Status validate_layer(OpContext& c) {
    TDM_TRY(c.f32(0));
    if (c.d.n_in >= 2) TDM_TRY(check_row_vector(c, 1, "weight"));
    if (c.d.n_in >= 3) TDM_TRY(check_row_vector(c, 2, "bias"));
    const Tensor& x = c.in(0);
    return c.output(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]});
}

Status validate_l2(OpContext& c) {
    TDM_TRY(c.f32(0));
    const Tensor& x = c.in(0);
    return c.output(DType::F32, {x.ne[0], x.ne[1], x.ne[2], x.ne[3]});
}

Status record_norm(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const uint32_t mode = d.op == TDM_OP_L2_NORM           ? TDM_NORM_L2
                          : d.op == TDM_OP_GATED_RMS_NORM ? TDM_NORM_GATED_RMS
                          : d.op == TDM_OP_LAYER_NORM     ? TDM_NORM_LAYER
                                                          : TDM_NORM_RMS;
    const bool layer = mode == TDM_NORM_LAYER;
    // LayerNorm: no weight, w, or w and b (WMODE 3), as many as its inputs.
    const uint32_t wmode = d.op == TDM_OP_GATED_RMS_NORM ? uint32_t(TDM_NORM_WEIGHT)
                           : d.op == TDM_OP_L2_NORM       ? uint32_t(TDM_NORM_NO_WEIGHT)
                           : layer                        ? (d.n_in == 3 ? 3u : d.n_in == 2 ? 1u : 0u)
                                                          : uint32_t(d.i[0]);
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("norm", {kLocal, mode, wmode}));
    const Tensor& x = tensor(c, d.in[0]);
    const TensorId w = d.n_in >= 2 ? d.in[1] : d.in[0];
    const TensorId z = mode == TDM_NORM_GATED_RMS || (layer && d.n_in == 3) ? d.in[2] : d.in[0];
    const uint32_t rows = uint32_t(x.rows());
    struct {
        uint32_t rows, cols, x_off, x_stride, y_off, y_stride, w_off, z_off, z_stride;
        float eps;
    } pc{rows, uint32_t(x.cols()), off(c, d.in[0]), stride(c, d.in[0]), off(c, n.out), stride(c, n.out),
         0, off(c, z), stride(c, z), d.f[0]};
    vk::Binding wb;
    if (tensor(c, w).kind == TensorKind::weight) {
        wb = small_weight(c, w);
    } else {
        wb = storage(c, w);
        pc.w_off = off(c, w);
    }
    vk::Binding zb;
    if (tensor(c, z).kind == TensorKind::weight) {
        zb = small_weight(c, z);
        pc.z_off = 0;
    } else {
        zb = storage(c, z);
    }
    dispatch(c, *p, {storage(c, d.in[0]), wb, zb, storage(c, n.out)}, pc, std::min(rows, kMaxGroups),
             div_up(rows, kMaxGroups), label);
    return {};
}

}  // namespace

extern const OpDef kOpDef_RMS_NORM = {TDM_OP_RMS_NORM, "rms_norm", 1, 2, 0, check_rms_norm, validate_rms, record_norm};
extern const OpDef kOpDef_L2_NORM = {TDM_OP_L2_NORM, "l2_norm", 1, 1, 0, nullptr, validate_l2, record_norm};
extern const OpDef kOpDef_LAYER_NORM = {TDM_OP_LAYER_NORM, "layer_norm", 1, 3, 0, check_eps, validate_layer,
                                       record_norm};
extern const OpDef kOpDef_GATED_RMS_NORM = {TDM_OP_GATED_RMS_NORM, "gated_rms_norm", 3, 3, 0, check_eps, validate_rms,
                                      record_norm};

}  // namespace tdm
