// SPDX-License-Identifier: Apache-2.0
// host/ops/add_rms_norm.cpp: TDM_OP_ADD_RMS_NORM [v3.1], a residual add and the
// RMSNorm of its sum in one dispatch: s = a + b (output 0, the new residual) and
// y = s * rsqrt(mean(s^2) + eps) * W (output 1; i[0] = tdm_norm_weight as for
// rms_norm). Kernel: shaders/add_rms_norm.comp, whose sum of squares is
// norm.comp's, so both outputs equal TDM_OP_ADD then TDM_OP_RMS_NORM bit for bit.
// Not here: the separate add (binary.cpp) and norms (norm.cpp).
#include <algorithm>

#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {
namespace {

using namespace kernel;

Status check_add_rms_norm(const OpDesc& d) {
    if (d.i[0] < TDM_NORM_NO_WEIGHT || d.i[0] > TDM_NORM_WEIGHT_PLUS_ONE)
        return Error::coded(TDM_ERR_UNSUPPORTED,
                            "add_rms_norm: unknown weight mode {} (i[0]; this host knows 0 none, 1 w, 2 1 + w)", d.i[0]);
    if (d.f[0] < 0) return Error::coded(TDM_ERR_UNSUPPORTED, "add_rms_norm: negative eps (f[0] = {})", d.f[0]);
    return {};
}

// a and b: f32 activations of one shape; w as rms_norm's (a weight or an activation of ne0 elements).
Status validate_add_rms_norm(OpContext& c) {
    const OpDesc& d = c.d;
    TDM_TRY(c.f32(0));
    TDM_TRY(c.f32(1));
    const Tensor& a = c.in(0);
    const Tensor& b = c.in(1);
    if (a.cols() != b.cols() || a.rows() != b.rows())
        return Error::coded(TDM_ERR_SHAPE, "add_rms_norm: shapes differ: {} vs {}", c.describe(0), c.describe(1));
    if ((d.i[0] != TDM_NORM_NO_WEIGHT) != (d.n_in == 3))
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "add_rms_norm: weight mode {} {} a weight input", d.i[0],
                            d.i[0] ? "needs" : "takes no");
    if (d.n_in == 3) {
        const Tensor& w = c.in(2);
        if (w.type != DType::F32 || w.kind == TensorKind::kv || w.kind == TensorKind::state)
            return Error::coded(TDM_ERR_TYPE, "add_rms_norm: weight {} must be f32 with {} elements", c.describe(2),
                                a.cols());
        if (w.elements() != a.cols() || (w.kind != TensorKind::weight && !w.contiguous()))
            return Error::coded(TDM_ERR_SHAPE, "add_rms_norm: weight {} must be f32 with {} contiguous elements",
                                c.describe(2), a.cols());
    }
    // output() adds a tensor to the graph, which may move a: take its shape first
    const std::vector<int64_t> ne = {a.ne[0], a.ne[1], a.ne[2], a.ne[3]};
    TDM_TRY(c.output(DType::F32, ne));
    return c.second_output(DType::F32, ne, "norm");
}

Status record_add_rms_norm(RecordContext& c, const Node& n, const std::string& label) {
    const OpDesc& d = n.desc;
    const uint32_t wmode = uint32_t(d.i[0]);
    const vk::Pipeline* p = TDM_TRY(c.pipelines.get("add_rms_norm", {kLocal, wmode}));
    const Tensor& a = tensor(c, d.in[0]);
    const uint32_t rows = uint32_t(a.rows());
    struct {
        uint32_t rows, cols, a_off, a_stride, b_off, b_stride, s_off, s_stride, y_off, y_stride, w_off;
        float eps;
    } pc{rows,          uint32_t(a.cols()), off(c, d.in[0]), stride(c, d.in[0]), off(c, d.in[1]), stride(c, d.in[1]),
         off(c, n.out), stride(c, n.out),   off(c, n.out2),  stride(c, n.out2),  0,               d.f[0]};
    // no weight: binding 2 is bound to a (never read)
    const TensorId w = d.n_in == 3 ? d.in[2] : d.in[0];
    vk::Binding wb;
    if (tensor(c, w).kind == TensorKind::weight) {
        wb = small_weight(c, w);
    } else {
        wb = storage(c, w);
        pc.w_off = off(c, w);
    }
    dispatch(c, *p, {storage(c, d.in[0]), storage(c, d.in[1]), wb, storage(c, n.out), storage(c, n.out2)}, pc,
             std::min(rows, kMaxGroups), div_up(rows, kMaxGroups), label);
    return {};
}

}  // namespace

extern const OpDef kOpDef_ADD_RMS_NORM = {TDM_OP_ADD_RMS_NORM, "add_rms_norm", 2, 3, 0, check_add_rms_norm,
                                          validate_add_rms_norm, record_add_rms_norm};

}  // namespace tdm
